"""The shared thread pool: numpy's BLAS on the kernels' OpenMP threads, user settings first,
one-thread kernels for small work, huge pages for fresh results."""

import os
import signal
import subprocess
import sys
import threading

import numba
import numpy as np
import pytest
from threadpoolctl import threadpool_limits

import fusedml as fm
from fusedml.runtime import threads

RNG = np.random.default_rng(0)
A, B = RNG.standard_normal((700, 600)), RNG.standard_normal((600, 500))
X, V = RNG.standard_normal((400_000, 12)), RNG.standard_normal(12)
C = RNG.standard_normal((4_000, 300))


def _one_thread(fn):
    """The oracle: OpenBLAS on one thread never reaches the callback."""
    with threadpool_limits(limits=1, user_api="blas"):
        return fn()


@pytest.fixture(scope="module")
def pool():
    fm.evaluate(fm.sum(fm.matrix(np.ones((3, 3)))))  # the first execution shares the pool
    status = threads.status()
    if not status["shared"]:
        pytest.skip(f"no shared BLAS pool here: {status['why_not']}")
    return status


PRODUCTS = {
    "gemm": lambda: A @ B,
    "gemm transposed": lambda: A.T @ A,
    "gemv": lambda: X @ V,
    "gemv transposed": lambda: X.T @ X[:, 0],
    "syrk": lambda: C.T @ C,
}


@pytest.mark.parametrize("name", PRODUCTS)
def test_threaded_blas_on_the_pool_equals_one_thread_blas(pool, name):
    before = threads.status()["blas_calls"]
    got = PRODUCTS[name]()
    assert threads.status()["blas_calls"] > before  # it did run on the shared pool
    # threads may split a reduction (400k rows) into partial sums: equal up to reassociation
    np.testing.assert_allclose(got, _one_thread(PRODUCTS[name]), rtol=1e-12, atol=1e-8)


def test_blas_calls_from_several_threads_at_once(pool):
    want = _one_thread(lambda: A @ B)
    results = []

    def work():
        for _ in range(10):
            results.append(np.allclose(A @ B, want, rtol=1e-13, atol=1e-12))

    workers = [threading.Thread(target=work) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=120)
    assert len(results) == 40 and all(results)


def test_a_user_limit_on_blas_threads_wins(pool):
    before = threads.status()["blas_calls"]
    _one_thread(lambda: A @ B)
    assert threads.status()["blas_calls"] == before


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_gets_openblas_own_threads_back(pool):
    want = _one_thread(lambda: A @ B)
    pid = os.fork()
    if pid == 0:  # child: libgomp's threads are gone; BLAS must not wait for them
        signal.alarm(60)
        ok = np.allclose(A @ B, want) and threads.status()["why_not"] == "forked"
        os._exit(0 if ok else 1)
    _, code = os.waitpid(pid, 0)
    assert os.WIFEXITED(code) and os.WEXITSTATUS(code) == 0, code


def test_environment_switch_leaves_blas_alone():
    code = (
        "import fusedml as fm, numpy as np\n"
        "from fusedml.runtime import threads\n"
        "fm.evaluate(fm.sum(fm.matrix(np.ones((3, 3)))))\n"
        "print(threads.status()['why_not'])\n"
    )
    env = dict(os.environ, FUSEDML_BLAS_POOL="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300, check=True)  # fmt: skip
    assert out.stdout.strip() == "FUSEDML_BLAS_POOL=0"


def test_small_operators_run_on_one_thread_big_ones_on_all():
    small, big = (fm.matrix(RNG.standard_normal((m, 10))) for m in (50, 400_000))
    for data, parallel in ((small, False), (big, True)):
        expr = fm.sum(data * data + 1.0)
        (op,) = fm.explain(expr, fusion="fuse_all").operators
        assert op.parallel is parallel
        want = fm.evaluate(expr, fusion="none")
        assert fm.evaluate(expr, fusion="fuse_all") == pytest.approx(want, rel=1e-12)
    assert numba.get_num_threads() == numba.config.NUMBA_NUM_THREADS  # restored after the run


def test_a_numba_thread_count_lowered_by_the_user_is_kept():
    data = fm.matrix(RNG.standard_normal((400_000, 10)))
    expr = fm.sum(data * data + 2.0)
    want = fm.evaluate(expr, fusion="none")
    numba.set_num_threads(1)
    try:
        assert fm.evaluate(expr, fusion="fuse_all") == pytest.approx(want, rel=1e-12)
        assert numba.get_num_threads() == 1
    finally:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)


def test_lone_elementwise_operators_on_big_data_become_kernels():
    """numpy runs one elementwise operation on one core; a kernel on all of them."""
    big = fm.matrix(RNG.standard_normal((1_000_000, 20)))
    small = fm.matrix(RNG.standard_normal((100, 20)))
    assert [op.template for op in fm.explain(fm.sigmoid(big)).operators] == ["cell"]
    assert not fm.explain(fm.sigmoid(small)).operators  # compile and dispatch do not pay
    assert not fm.explain(fm.sigmoid(big), fusion="fuse_all").operators  # as SystemDS's FA
    np.testing.assert_allclose(
        fm.evaluate(fm.sigmoid(big)), fm.evaluate(fm.sigmoid(big), fusion="none"), rtol=1e-15
    )


def test_a_lone_sparse_product_becomes_a_kernel_on_big_data():
    """scipy.sparse multiplies on one core; a Row kernel on all of them."""
    from fusedml.datasets import sparse_matrix

    S = sparse_matrix(200_000, 1_000, 0.01, 0)
    v = RNG.standard_normal(1_000)
    expr = fm.matrix(S) @ v
    assert [op.template for op in fm.explain(expr).operators] == ["row"]
    want = S @ v
    scale = np.abs(S) @ np.abs(v)  # a row's dot may be summed in another order
    np.testing.assert_allclose(fm.evaluate(expr), want, rtol=0, atol=1e-13 * scale.max())
