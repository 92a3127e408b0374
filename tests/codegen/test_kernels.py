"""Generated kernels: they run (stats), persist across processes, survive corrupt cache files,
fall back to the reference on failure, and are safe to call from several threads."""

import os
import subprocess
import sys
import textwrap
import threading
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import fusedml as fm
from fusedml.codegen import cache as kernel_cache

RNG = np.random.default_rng(0)


def test_every_template_runs_as_a_generated_kernel(fresh_stats):
    X, Y = RNG.standard_normal((3000, 8)), RNG.standard_normal((3000, 8))
    W = sp.random(3000, 2000, density=0.01, format="csr", random_state=0)
    U, V = RNG.standard_normal((3000, 4)), RNG.standard_normal((2000, 4))
    Xm, Ym, Wm, Um, Vm = map(fm.matrix, (X, Y, W, U, V))
    cases = {
        "cell": fm.sum(fm.exp(Xm) * Ym, axis=0),
        "magg": (fm.sum(Xm * Ym), fm.max(Xm * Ym + 1)),
        "row": Xm.T @ (fm.sigmoid(Xm @ np.ones(8)) * RNG.standard_normal(3000)),
        "outer": (Wm * (Um @ Vm.T)) @ Vm,
    }
    for template, expr in cases.items():
        mode = "cost_based" if template == "magg" else "fuse_all"  # only cost_based builds MAgg
        with fm.config(compile_s=0.0):
            plan = fm.explain(expr, fusion=mode)
            assert template in {op.template for op in plan.operators}
            got = fm.evaluate(expr, fusion=mode)
        want = fm.evaluate(expr, fusion="none")
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    counters = fresh_stats()
    assert counters["kernels_executed"] >= 4
    assert counters.get("kernels_generated", 0) + counters.get("kernel_cache_hits", 0) >= 4
    assert counters.get("kernel_fallbacks", 0) == 0


def test_plan_cache_compiles_one_structure_once(fresh_stats):
    def body(rows, c):
        X, Y = (fm.matrix(RNG.standard_normal((rows, 6))) for _ in range(2))
        return fm.sum(X * Y + c)

    fm.evaluate(body(2000, 1.0), fusion="fuse_all")
    generated = fresh_stats().get("kernels_generated", 0)
    for rows, c in ((3000, -2.0), (10, 0.5), (2000, 7.0)):  # new shapes and literal values
        got = fm.evaluate(body(rows, c), fusion="fuse_all")
        assert np.isfinite(got)
    assert fresh_stats().get("kernels_generated", 0) == generated  # no new kernel


SCRIPT = textwrap.dedent(
    """
    import numpy as np, fusedml as fm
    X = fm.matrix(np.arange(6000.0).reshape(1000, 6) / 1000)
    value = fm.evaluate(fm.sum(fm.exp(X) * X + 0.25 * X), fusion="fuse_all")
    s = fm.stats()
    print(value, s.get("kernels_compiled", 0), s.get("kernels_loaded_from_disk", 0))
    """
)


def _run(cache_dir):
    env = {**os.environ, "FUSEDML_CACHE_DIR": str(cache_dir)}
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    value, compiled, loaded = out.stdout.split()
    return float(value), int(compiled), int(loaded)


def test_a_new_process_loads_kernels_from_the_disk_cache(tmp_path):
    first = _run(tmp_path)
    second = _run(tmp_path)
    assert first[1] == 1 and first[2] == 0
    assert second[1] == 0 and second[2] == 1  # machine code reused, nothing compiled
    assert second[0] == first[0]


def test_corrupt_cache_files_are_rewritten(tmp_path):
    first = _run(tmp_path)
    kernels = tmp_path / "kernels"
    for path in kernels.glob("k_*.py"):
        path.write_text("this is not python(")
    for path in (kernels / "__pycache__").glob("*"):
        path.write_bytes(b"garbage")
    again = _run(tmp_path)
    assert again[0] == first[0]


def test_failing_kernel_falls_back_with_a_warning(monkeypatch, fresh_stats):
    X = fm.matrix(RNG.standard_normal((500, 4)))
    expr = fm.sum(fm.exp(X) * 3.0 + X)

    def broken(*args, **kwargs):
        raise RuntimeError("compiler unavailable")

    monkeypatch.setattr("fusedml.runtime.fused.get_kernel", broken)
    with pytest.warns(fm.KernelFallbackWarning, match="compiler unavailable"):
        got = fm.evaluate(expr, fusion="fuse_all")
    assert got == pytest.approx(fm.evaluate(expr, fusion="none"))
    assert fresh_stats()["kernel_fallbacks"] == 1


def test_kernels_run_from_several_threads():
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal((20_000, 8)) for _ in range(4)]
    step = fm.jit(fusion="fuse_all")(lambda X: (fm.sum(X * X, axis=0), fm.sum(fm.exp(X))))
    step(arrays[0])  # compile once, then hammer it
    results, errors = {}, []

    def work(k):
        try:
            for _ in range(20):
                results[k] = step(arrays[k])
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for k, (sq, total) in results.items():
        np.testing.assert_allclose(sq, (arrays[k] ** 2).sum(axis=0), rtol=1e-10)
        assert total == pytest.approx(np.exp(arrays[k]).sum(), rel=1e-10)


THREAD_SAFE_LAYERS = ("threadsafe", "safe", "omp", "tbb")  # numba's names that guarantee it


def test_threading_layer_is_thread_safe():
    chosen = os.environ.get("NUMBA_THREADING_LAYER")
    if chosen is not None and chosen.lower() not in THREAD_SAFE_LAYERS:
        pytest.skip(f"NUMBA_THREADING_LAYER={chosen}: fusedml keeps the user's layer")
    import numba
    from numba.np.ufunc import parallel

    parallel._launch_threads()  # numba picks the layer at the first parallel launch
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        layer = numba.threading_layer()
    assert layer in ("omp", "tbb")
    assert kernel_cache.numba.config.THREADING_LAYER in THREAD_SAFE_LAYERS


def test_row_kernel_scatters_a_csr_input_read_through_a_column_range():
    """Regression (found by the differential corpus): ``X[:, 1:5] @ v`` with a CSR X read the
    scattered row buffer without allocating it, so the Row kernel failed to compile."""
    x = sp.random(300, 8, density=0.3, format="csr", random_state=0)
    v = RNG.standard_normal((4, 2))
    expr = fm.matrix(x)[:, 1:5] @ v
    with warnings.catch_warnings(), fm.config(compile_s=0.0):
        warnings.simplefilter("error", fm.KernelFallbackWarning)
        assert [op.template for op in fm.explain(expr, fusion="fuse_all").operators] == ["row"]
        got = fm.evaluate(expr, fusion="fuse_all")
    np.testing.assert_allclose(got, x.toarray()[:, 1:5] @ v, rtol=1e-12)
