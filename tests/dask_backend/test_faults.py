"""Faults and memory on a 2-worker LocalCluster: a worker killed in the middle of a fit is
survived with the same model, and no data-sized value reaches the client."""

import os
import signal
import threading
import time
import tracemalloc

import dask.array as da
import numpy as np
import pytest
from fusedml.algorithms import GLM, L2SVM
from sklearn.datasets import make_classification

import fusedml as fm
from tests.dask_backend.test_estimators import DISTRIBUTE


def _pids(client) -> set[int]:
    return set(client.run(os.getpid).values())


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_worker_killed_during_a_fit_is_survived(client):
    X, y = make_classification(n_samples=20_000, n_features=10, random_state=1)
    estimator = L2SVM(max_iter=6, tol=0.0, fit_intercept=True)
    local = estimator.fit(X, y).coef_.copy()
    dX, dy = da.from_array(X, chunks=(5_000, 10)), da.from_array(y, chunks=5_000)
    with fm.config(**DISTRIBUTE):
        estimator.fit(dX, dy)  # kernels compiled in both workers: the kill hits iterations
    before = _pids(client)
    victim = min(before)
    timer = threading.Timer(1.0, os.kill, (victim, signal.SIGKILL))
    start = time.perf_counter()
    timer.start()
    with fm.config(**DISTRIBUTE):  # the data is small: every step per block all the same
        distributed = estimator.fit(dX, dy).coef_
    elapsed = time.perf_counter() - start
    timer.join()
    assert elapsed > 1.5, f"the fit ended ({elapsed:.2f} s) before the worker was killed"
    client.wait_for_workers(2, timeout=60)
    assert victim not in _pids(client)  # the nanny started a new worker process
    np.testing.assert_allclose(distributed, local, rtol=1e-6, atol=1e-12)


def _client_peak(fit) -> int:
    tracemalloc.start()
    try:
        fit()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_no_data_sized_value_reaches_the_client(client):
    # 1M x 10 (80 MB) drawn on the workers: the client never holds it unless a plan fetches it
    m, n = 1_000_000, 10
    X = da.random.default_rng(0).standard_normal((m, n), chunks=(125_000, n))
    y = da.random.default_rng(1).poisson(1.0, size=m, chunks=125_000)
    X, y = X.persist(), y.persist()

    def fit():
        GLM(max_iter=2).fit(X, y)

    fit()  # kernels compiled, plans cached
    peak = _client_peak(fit)
    # this process also runs the LocalCluster's scheduler (its copies of the graphs: ~5 MB);
    # y alone (8 MB) or X (80 MB) arriving here would exceed the limit
    assert peak < X.nbytes / 10, f"client peak {peak / 1e6:.1f} MB for {X.nbytes / 1e6:.0f} MB"
    # the control: a plan that gathers X to the client (every step placed locally by a task
    # overhead nothing beats) exceeds that limit, so the measurement sees data that arrives
    with fm.config(dask_task_s=1e3, dask_local_below_bytes=1e12):
        gathered = _client_peak(fit)
    assert gathered > X.nbytes, f"gathered plan peak {gathered / 1e6:.1f} MB"
