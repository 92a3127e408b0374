"""Fault injection into the kernel cache: every damaged, foreign, unwritable or contended cache ends
with correct results and a cache that a later process loads from without compiling or warning.

Each cache case runs the same two-kernel expression in fresh processes (numba's state and the
module cache are per process): one run on the damaged cache, then one that must load both."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time

import numba
import numpy as np
import pytest

import fusedml as fm

SCRIPT = textwrap.dedent(
    """
    import json, os, sys, threading, time, warnings
    import numpy as np, fusedml as fm

    go, threads = (sys.argv[1], int(sys.argv[2])) if len(sys.argv) > 1 else (None, 1)
    if go:  # start every writer at the same moment
        open(f"{go}.{os.getpid()}", "w").close()
        deadline = time.monotonic() + 120
        while not os.path.exists(go) and time.monotonic() < deadline:
            time.sleep(0.005)
    results = []

    def run():
        X = fm.matrix(np.arange(60.0).reshape(20, 3) / 10)
        total, cols = fm.evaluate((fm.sum(fm.exp(X) * X), fm.sum(X * X, axis=0)), fusion="fuse_all")
        results.append([total, list(cols)])

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if threads == 1:
            run()  # in the main thread, where a SystemExit would end the process
        else:
            workers = [threading.Thread(target=run) for _ in range(threads)]
            for w in workers:
                w.start()
            for w in workers:
                w.join()
        if os.environ.get("FUSEDML_COMPILE") == "background":
            from fusedml.codegen import compiler

            assert compiler.wait(300)
            run()  # from the kernels the worker compiled (or loaded)
    stats = {k: v for k, v in fm.stats().items() if k != "seconds"}
    messages = [f"{w.category.__name__}: {w.message}" for w in caught]
    print(json.dumps({"results": results, "stats": stats, "warnings": messages}))
    """
)
X = np.arange(60.0).reshape(20, 3) / 10
EXPECTED = [float((np.exp(X) * X).sum()), list((X * X).sum(axis=0))]


def _start(cache_dir, *args, env=None, prefix=()):
    env = {**os.environ, "FUSEDML_CACHE_DIR": str(cache_dir), **(env or {})}
    return subprocess.Popen(
        [*prefix, sys.executable, "-c", SCRIPT, *map(str, args)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(process):
    try:
        out, err = process.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        process.kill()
        raise
    assert process.returncode == 0, err
    report = json.loads(out)
    assert report["results"], err
    for total, cols in report["results"]:
        assert total == pytest.approx(EXPECTED[0], rel=1e-12)
        np.testing.assert_allclose(cols, EXPECTED[1], rtol=1e-12)
    return report


def _run(cache_dir, **kwargs):
    return _finish(_start(cache_dir, **kwargs))


def _sources(cache_dir):
    kernels = os.path.join(cache_dir, "kernels")
    return {
        name: open(os.path.join(kernels, name), "rb").read()
        for name in sorted(os.listdir(kernels))
        if name.startswith("k_") and name.endswith(".py")
    }


def _assert_repaired(cache_dir, golden):
    """The kernel files hold their sources again, and a new process loads both without a word."""
    assert _sources(cache_dir) == _sources(golden)
    report = _run(cache_dir)
    assert report["warnings"] == []
    assert report["stats"].get("kernels_loaded_from_disk", 0) == 2
    assert report["stats"].get("kernels_compiled", 0) == 0


def _assert_clean_run(report):
    assert report["warnings"] == []
    assert report["stats"].get("kernel_fallbacks", 0) == 0
    assert report["stats"].get("fused_ops_by_reference", 0) == 0


@pytest.fixture(scope="module")
def golden(tmp_path_factory):
    """A cache holding the expression's two kernels and their machine code."""
    path = tmp_path_factory.mktemp("golden")
    report = _run(path)
    assert report["stats"]["kernels_compiled"] == 2
    assert len(_sources(path)) == 2
    return path


@pytest.fixture
def cache(golden, tmp_path):
    """A copy of the golden cache and its two kernel files, in name order."""
    path = tmp_path / "cache"
    shutil.copytree(golden, path)
    return path, sorted((path / "kernels").glob("k_*.py"))


def _numba_files(kernel, ext):
    found = sorted(kernel.parent.glob(f"__pycache__/{kernel.stem}.*.{ext}"))
    assert len(found) == 1, found
    return found[0]


def test_truncated_kernel_files_are_rewritten(cache, golden):
    path, (first, second) = cache
    lines = first.read_text().splitlines(keepends=True)
    first.write_text("".join(lines[:-1]))  # the final `return`: still valid Python
    compile(first.read_text(), str(first), "exec")
    text = second.read_text()
    second.write_text(text[: text.index("def chunk") + 15])  # cut inside the signature
    with pytest.raises(SyntaxError):
        compile(second.read_text(), str(second), "exec")
    _assert_clean_run(_run(path))
    _assert_repaired(path, golden)


def test_empty_and_garbage_kernel_files_are_rewritten(cache, golden):
    path, (first, second) = cache
    first.write_bytes(b"")
    second.write_bytes(bytes(range(256)) * 4)
    _assert_clean_run(_run(path))
    _assert_repaired(path, golden)


def test_foreign_kernel_files_are_never_executed(cache, golden):
    path, (first, second) = cache
    marker = path / "foreign-code-ran"
    first.write_text(f"open({str(marker)!r}, 'w').close()\nraise SystemExit(3)\n")
    second.write_text("import numpy as np\n\n\ndef kernel(*args):\n    return np.full(3, 7.0)\n")
    _assert_clean_run(_run(path))
    assert not marker.exists()
    _assert_repaired(path, golden)


def test_damaged_numba_index_and_data_are_recompiled(cache, golden):
    path, (first, second) = cache
    _numba_files(first, "nbi").write_bytes(b"garbage")
    data = _numba_files(second, "nbc")
    blob = bytearray(data.read_bytes())
    blob[len(blob) // 2] ^= 0xFF  # one flipped byte: a pickle that may still load
    data.write_bytes(bytes(blob))
    report = _run(path)
    _assert_clean_run(report)
    assert report["stats"].get("kernels_compiled", 0) == 2  # neither damaged file was used
    assert report["stats"].get("kernel_cache_repairs", 0) == 2
    _assert_repaired(path, golden)


def _make_writable(path, writable):
    for root, _, files in os.walk(path):
        for name in files:
            os.chmod(os.path.join(root, name), 0o644 if writable else 0o444)
        os.chmod(root, 0o755 if writable else 0o555)


def _unprivileged():
    """A command prefix under which permission bits bind (root overrides them otherwise)."""
    if os.geteuid() != 0:
        return ()
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: a read-only directory cannot be made")
    return ("setpriv", "--bounding-set=-dac_override,-dac_read_search")


def test_read_only_cache_compiles_in_a_private_directory_with_one_warning(cache, golden, tmp_path):
    path, (_, second) = cache
    second.unlink()  # one kernel cached, one that must be written somewhere
    tmpdir, user_cache = tmp_path / "tmp", tmp_path / "user-cache"
    tmpdir.mkdir()
    before = sorted((root, sorted(files)) for root, _, files in os.walk(path))
    _make_writable(path, False)
    try:
        env = {"TMPDIR": str(tmpdir), "XDG_CACHE_HOME": str(user_cache)}
        report = _run(path, env=env, prefix=_unprivileged())
    finally:
        _make_writable(path, True)
    assert len(report["warnings"]) == 1, report["warnings"]  # two kernels, one warning
    assert report["warnings"][0].startswith("KernelCacheWarning")
    assert str(path / "kernels") in report["warnings"][0]
    assert not user_cache.exists()  # not numba's fallback, the user-wide cache
    assert report["stats"].get("kernel_fallbacks", 0) == 0
    assert report["stats"].get("fused_ops_by_reference", 0) == 0
    assert os.listdir(tmpdir) == []  # the private directory went with its process
    assert sorted((root, sorted(files)) for root, _, files in os.walk(path)) == before
    writable = _run(path)  # the cached kernel is intact: loaded, the other one compiled
    assert writable["warnings"] == []
    assert writable["stats"].get("kernels_loaded_from_disk", 0) == 1
    assert _sources(path) == _sources(golden)


def test_concurrent_writers_of_an_empty_cache(tmp_path, golden):
    path, go = tmp_path / "cache", tmp_path / "go"
    writers = [_start(path, go, 2) for _ in range(3)]
    deadline = time.monotonic() + 120
    while len(list(tmp_path.glob("go.*"))) < len(writers) and time.monotonic() < deadline:
        time.sleep(0.01)
    go.touch()
    for writer in writers:
        report = _finish(writer)
        assert len(report["results"]) == 2
        _assert_clean_run(report)
    assert not [p for p in path.rglob("*") if ".tmp" in p.name]  # no temporary file left behind
    _assert_repaired(path, golden)


def test_background_compiles_of_an_empty_cache_by_two_processes(tmp_path, golden):
    """Two processes started together on an empty cache, compiling in the background: both give
    the right results, and each kernel is compiled once (the other worker loads it)."""
    path, go = tmp_path / "cache", tmp_path / "go"
    env = {"FUSEDML_COMPILE": "background"}
    processes = [_start(path, go, 1, env=env) for _ in range(2)]
    deadline = time.monotonic() + 120
    while len(list(tmp_path.glob("go.*"))) < len(processes) and time.monotonic() < deadline:
        time.sleep(0.01)
    go.touch()
    reports = [_finish(p) for p in processes]
    for report in reports:
        _assert_clean_run(report)
        assert report["stats"]["kernels_executed"] == 2  # the last run's two operators
        assert report["stats"].get("kernels_compiled", 0) == 0  # nothing compiled in-process
    compiled = sum(r["stats"].get("kernels_compiled_in_background", 0) for r in reports)
    assert compiled == 2
    _assert_repaired(path, golden)


@pytest.mark.parametrize(
    "broken",
    [
        "def chunk(:\n",  # fails when its module runs
        # fails compiling
        "import numba\n\n\n@numba.njit\ndef chunk(c, frame):\n    return nowhere\n",
    ],
)
def test_the_fallback_warning_names_the_kernel_file(broken, monkeypatch):
    from fusedml import pipeline
    from fusedml.codegen import cache as kernel_cache
    from fusedml.runtime import backend, fused

    def get_broken_kernel(key, make):
        return kernel_cache.get_kernel((broken, key), lambda: broken)

    monkeypatch.setattr(fused, "get_kernel", get_broken_kernel)
    monkeypatch.setattr(pipeline, "_plan_cache", type(pipeline._plan_cache)())
    monkeypatch.setattr(backend, "_fallback_warned", set())
    Xm = fm.matrix(X)
    expr = fm.sum(fm.exp(Xm) * Xm)
    with pytest.warns(fm.KernelFallbackWarning) as caught:
        assert fm.evaluate(expr, fusion="fuse_all") == pytest.approx(EXPECTED[0], rel=1e-12)
    digest = hashlib.sha256((numba.__version__ + broken).encode()).hexdigest()[:32]
    path = os.path.join(kernel_cache.kernel_dir(), f"k_{digest}.py")
    assert f"kernel file: {path}" in str(caught[0].message)
