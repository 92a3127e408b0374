"""Compile tiers: whichever tier ran a fused operator (kernel compiled eagerly, kernel compiled by
the background worker, reference interpreter while waiting or with compiles off), the results
are the reference's."""

import os
import time

import numpy as np
import pytest
from fusedml.algorithms import GLM, L2SVM

import fusedml as fm
from fusedml import _config
from fusedml.codegen import compiler

rng = np.random.default_rng(7)
X = rng.standard_normal((300, 6))
Y = rng.standard_normal((300, 6))


def _expr(shift):
    # a structure no other test compiles: its kernel starts out missing in this process too
    Xm, Ym = fm.matrix(X), fm.matrix(Y)
    return fm.sum(fm.arctan(Xm) * fm.sqrt(fm.abs(Ym)) - Xm / shift)


def _expected(shift):
    return float(np.sum(np.arctan(X) * np.sqrt(np.abs(Y)) - X / shift))


def _taken(stats):
    """The counters since the last call (then zeroed)."""
    snapshot = stats()
    fm.reset_stats()
    return snapshot


def test_unknown_compile_mode_is_an_error(monkeypatch):
    with pytest.raises(ValueError, match="compile mode"):
        fm.config(compile="lazy")
    monkeypatch.setenv("FUSEDML_COMPILE", "sometimes")
    with pytest.raises(ValueError, match="FUSEDML_COMPILE"):
        _config._from_env()


def test_off_runs_the_reference_until_a_kernel_is_on_disk(tmp_path, fresh_stats):
    with fm.config(cache_dir=str(tmp_path), compile="off"):
        value = fm.evaluate(_expr(7.0), fusion="fuse_all")
    stats = _taken(fresh_stats)
    assert value == pytest.approx(_expected(7.0), rel=1e-13)
    assert stats["fused_ops_awaiting_kernel"] == 1
    assert stats.get("kernels_executed", 0) == stats.get("kernels_compiled", 0) == 0
    with fm.config(cache_dir=str(tmp_path), compile="eager"):
        eager = fm.evaluate(_expr(7.0), fusion="fuse_all")
    assert _taken(fresh_stats)["kernels_compiled"] == 1
    assert eager == pytest.approx(value, rel=1e-13)  # float reassociation of the sum only
    with fm.config(cache_dir=str(tmp_path), compile="off"):
        assert fm.evaluate(_expr(3.0), fusion="fuse_all") == pytest.approx(_expected(3.0))
    assert _taken(fresh_stats)["kernels_executed"] == 1  # once compiled, off runs the kernel


def test_background_runs_the_reference_then_the_workers_kernel(tmp_path, fresh_stats):
    with fm.config(cache_dir=str(tmp_path), compile="background"):
        Xm, Ym = fm.matrix(X), fm.matrix(Y)
        expr = fm.sum(fm.exp(fm.minimum(Xm, Ym)) * fm.sign(Ym) + Xm * 0.25, axis=0)
        first = fm.evaluate(expr, fusion="fuse_all")
        stats = _taken(fresh_stats)
        assert stats["fused_ops_awaiting_kernel"] == 1
        assert stats["background_compiles_started"] == 1
        assert compiler.wait(timeout=300)
        second = fm.evaluate(expr, fusion="fuse_all")
    stats = _taken(fresh_stats)
    assert stats["kernels_compiled_in_background"] == 1
    assert stats["kernels_loaded_from_disk"] == 1
    assert stats["kernels_executed"] == 1
    assert stats.get("kernels_compiled", 0) == 0  # nothing compiled in this process
    assert stats["seconds"]["background_compile"] > 0
    expected = np.sum(np.exp(np.minimum(X, Y)) * np.sign(Y) + X * 0.25, axis=0)
    np.testing.assert_allclose(first, expected, rtol=1e-13)
    np.testing.assert_allclose(second, first, rtol=1e-13)


@pytest.mark.skipif(
    not (hasattr(os, "SCHED_IDLE") and os.path.exists("/proc/self/maps")), reason="Linux only"
)
def test_the_worker_is_idle_before_it_imports_anything_heavy():
    """The worker's imports (a second of CPU) never compete with the caller: by the time numpy
    is mapped into it, it runs at idle priority."""
    worker = compiler._Worker()
    pid, deadline = worker.proc.pid, time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            with open(f"/proc/{pid}/maps") as f:
                loaded = "numpy" in f.read()
            if loaded:  # the policy read after the maps: it held when numpy was mapped, or later
                assert os.sched_getscheduler(pid) == os.SCHED_IDLE
                return
            time.sleep(0.001)
        pytest.fail("the worker never imported numpy")
    finally:
        worker.close()


@pytest.mark.parametrize(
    "make",
    [
        lambda: L2SVM(max_iter=4, tol=0.0, fusion="fuse_all"),
        lambda: GLM(family="poisson", max_iter=3, tol=0.0, fusion="fuse_all"),
    ],
)
def test_fits_agree_across_tiers(make, tmp_path, fresh_stats):
    """A fit whose fused operators ran through the reference interpreter (compiles off, empty
    cache) and one whose operators all ran as kernels give the same model to 1e-10."""
    X_fit = rng.standard_normal((400, 5))
    y = np.where(X_fit @ np.arange(1.0, 6.0) > 0, 1.0, -1.0)
    if isinstance(make(), GLM):
        y = np.round(np.exp(0.2 * X_fit[:, 0]))
    with fm.config(cache_dir=str(tmp_path), compile="off"):
        reference = make().fit(X_fit, y)
    stats = _taken(fresh_stats)
    assert stats["fused_ops_awaiting_kernel"] > 0  # (kernels an earlier test made may run)
    with fm.config(compile="eager"):
        kernels = make().fit(X_fit, y)
    stats = _taken(fresh_stats)
    assert stats["kernels_executed"] > 0
    assert stats.get("fused_ops_awaiting_kernel", 0) == 0
    np.testing.assert_allclose(kernels.coef_, reference.coef_, rtol=1e-10, atol=1e-14)


def test_a_pickled_estimator_in_a_new_process_loads_its_kernels(tmp_path):
    """An estimator fitted in one process (compiling eagerly into an empty cache), pickled and
    refitted in a new process on that cache with compiles off: every fused operator runs as a
    kernel loaded from disk, and the model is the same bit for bit."""
    import os
    import subprocess
    import sys

    fit = (
        "import pickle, sys, numpy as np\n"
        "from fusedml.algorithms import L2SVM\n"
        "rng = np.random.default_rng(3)\n"
        "X = rng.standard_normal((500, 4)); y = np.where(X @ np.arange(1.0, 5.0) > 0, 1.0, -1.0)\n"
        "model = L2SVM(max_iter=3, tol=0.0, fusion='fuse_all').fit(X, y)\n"
        "open(sys.argv[1], 'wb').write(pickle.dumps((model, X, y)))\n"
    )
    refit = (
        "import pickle, sys, fusedml as fm\n"
        "model, X, y = pickle.loads(open(sys.argv[1], 'rb').read())\n"
        "coef = model.coef_.copy()\n"
        "model.fit(X, y)\n"
        "s = fm.stats()\n"
        "print(abs(model.coef_ - coef).max(), s.get('kernels_loaded_from_disk', 0),\n"
        "      s.get('fused_ops_awaiting_kernel', 0), s.get('kernels_compiled', 0))\n"
    )
    env = {**os.environ, "FUSEDML_CACHE_DIR": str(tmp_path)}
    outputs = []
    for script, mode in ((fit, "eager"), (refit, "off")):
        outputs.append(
            subprocess.run(
                [sys.executable, "-c", script, str(tmp_path / "model.pkl")],
                env={**env, "FUSEDML_COMPILE": mode}, capture_output=True, text=True, check=True,
            ).stdout.split()
        )  # fmt: skip
    difference, loaded, awaiting, compiled = float(outputs[1][0]), *map(int, outputs[1][1:])
    assert loaded > 0 and awaiting == 0 and compiled == 0
    assert difference == 0.0  # the same kernels, so the same model
