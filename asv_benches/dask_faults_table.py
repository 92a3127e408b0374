"""The figures behind tests/dask_backend/test_faults.py, printed: the client's peak memory during
a fit on Dask data (cost-based placement, and every step forced into this process), and a fit
that survives a worker killed one second in, against the in-memory model.

Run: .venv/bin/python asv_benches/dask_faults_table.py
"""

import os
import signal
import threading
import time
import tracemalloc
import warnings

import dask.array as da
import numpy as np
from distributed import Client, LocalCluster
from fusedml.algorithms import GLM, L2SVM
from sklearn.datasets import make_classification

import fusedml as fm

PER_BLOCK = {"dask_task_s": 0.0, "dask_round_trip_s": 0.0, "network_bytes_per_s": 1e30,
             "dask_local_below_bytes": 0.0}  # fmt: skip


def _peak(fit) -> int:
    tracemalloc.start()
    try:
        fit()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def client_memory() -> None:
    m, n = 1_000_000, 10
    X = da.random.default_rng(0).standard_normal((m, n), chunks=(125_000, n)).persist()
    y = da.random.default_rng(1).poisson(1.0, size=m, chunks=125_000).persist()

    def fit():
        GLM(max_iter=2).fit(X, y)

    fit()
    print(f"client peak, cost-based placement: {_peak(fit) / 1e6:.2f} MB "
          f"(X {X.nbytes / 1e6:.0f} MB, y {y.nbytes / 1e6:.0f} MB on the workers)")  # fmt: skip
    with fm.config(dask_task_s=1e3, dask_local_below_bytes=1e12):
        print(f"client peak, every step placed here: {_peak(fit) / 1e6:.2f} MB")


def killed_worker(client: Client) -> None:
    X, y = make_classification(n_samples=20_000, n_features=10, random_state=1)
    estimator = L2SVM(max_iter=6, tol=0.0, fit_intercept=True)
    local = estimator.fit(X, y).coef_.copy()
    dX, dy = da.from_array(X, chunks=(5_000, 10)), da.from_array(y, chunks=5_000)
    with fm.config(**PER_BLOCK):
        estimator.fit(dX, dy)
        before = set(client.run(os.getpid).values())
        victim = min(before)
        timer = threading.Timer(1.0, os.kill, (victim, signal.SIGKILL))
        fm.reset_stats()
        start = time.perf_counter()
        timer.start()
        coef = estimator.fit(dX, dy).coef_
        elapsed = time.perf_counter() - start
    timer.join()
    client.wait_for_workers(2, timeout=60)
    after = set(client.run(os.getpid).values())
    error = np.max(np.abs(coef - local)) / np.max(np.abs(local))
    print(f"worker {victim} killed 1.0 s into a {elapsed:.2f} s fit "
          f"({fm.stats()['dask_block_tasks']} block tasks); workers {sorted(before)} -> "
          f"{sorted(after)}; coefficients vs in-memory: {error:.2e} relative")  # fmt: skip


def main() -> None:
    warnings.simplefilter("ignore")
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        client_memory()
        killed_worker(client)


if __name__ == "__main__":
    main()
