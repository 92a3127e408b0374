"""Fit time on a 2-worker LocalCluster against the in-memory path, at growing sizes.

For each size, X (rows x 20, normal) and its labels are drawn on the workers and persisted; the
in-memory path fits the same data fetched into this process. Three timings per estimator, medians
of ``--reps`` fits after a warm-up fit (kernels compiled, plans cached):

- ``local``: the in-memory fit (numpy X, generated kernels on this process's threads);
- ``dask``: the fit on the Dask array with the cost model's placement (small steps run here);
- ``per-block``: every step forced per block (no task overhead or transfer in the cost model),
  the raw cost of running everything on the cluster.

With ``--compressed`` X holds few distinct values per column (normal draws rounded to halves)
and is compressed: per block on the workers (``fm.compress`` of the Dask array) and as one
matrix for the in-memory path; ``MB`` is then the compressed size.

The largest default size (15M x 20, 2.4 GB) does not fit one worker's memory limit (2 GiB); the
workers' spilling thresholds are raised so that the persisted data is not spilled to disk. Also
measured: the per-task overhead, a call's round trip and the client <-> worker transfer rate, the
cost model's ``dask_task_s``, ``dask_round_trip_s`` and ``network_bytes_per_s``.

Run: .venv/bin/python asv_benches/dask_scaling.py [--sizes 10000,100000,...] [--reps 3]
     [--compressed] [--out results/dask_scaling.json]
"""

import argparse
import json
import statistics
import time
import warnings

import dask
import dask.array as da
import numpy as np
from distributed import Client, LocalCluster
from fusedml.algorithms import GLM, L2SVM
from sklearn.exceptions import ConvergenceWarning

import fusedml as fm

COLS = 20
BLOCK_ROWS = 500_000  # 80 MB blocks
ESTIMATORS = {
    "L2SVM": lambda: L2SVM(max_iter=5, tol=0.0),
    "GLM-poisson": lambda: GLM(family="poisson", max_iter=3, tol=0.0),
}
PER_BLOCK = {"dask_task_s": 0.0, "dask_round_trip_s": 0.0, "network_bytes_per_s": 1e30,
             "dask_local_below_bytes": 0.0}  # fmt: skip


def _data(rows: int, few_values: bool):
    chunk = min(BLOCK_ROWS, max(rows // 2, 1))
    X = da.random.default_rng(0).standard_normal((rows, COLS), chunks=(chunk, COLS))
    if few_values:
        X = da.round(X * 2) / 2
    eta = X @ np.linspace(-1.0, 1.0, COLS) / np.sqrt(COLS)
    labels = {"L2SVM": (eta > 0).astype(np.float64), "GLM-poisson": da.floor(2 * da.exp(eta))}
    return dask.persist(X, labels)


def _fetched(x: da.Array) -> np.ndarray:
    """The array in this process, block by block (a whole-array compute would concatenate it on
    one worker first, beyond its memory limit at the largest size)."""
    return np.concatenate([x.blocks[i].compute() for i in range(x.numblocks[0])])


def _median_fit(make, X, y, reps: int, **config) -> float:
    with fm.config(**config):
        make().fit(X, y)  # warm-up: kernels, plans, gathered small inputs
        times = []
        for _ in range(reps):
            start = time.perf_counter()
            make().fit(X, y)
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def _task_overhead(reps: int) -> float:
    """Seconds per block task: a tiny fused aggregate over 2 and 32 blocks, forced per block."""
    per_call = {}
    for blocks in (2, 32):
        x = fm.matrix(da.ones((blocks * 100, 4), chunks=(100, 4)).persist())
        expr = fm.sum(x * x)
        with fm.config(**PER_BLOCK):
            fm.evaluate(expr)
            times = []
            for _ in range(max(reps, 5)):
                start = time.perf_counter()
                fm.evaluate(expr)
                times.append(time.perf_counter() - start)
        per_call[blocks] = statistics.median(times)
    return (per_call[32] - per_call[2]) / 30


def _transfer_rate(client: Client) -> float:
    """Bytes per second fetched from the workers (200 MB in 4 blocks, second of two fetches)."""
    x = da.random.default_rng(3).random(25_000_000, chunks=6_250_000).persist()
    client.wait_for_workers(2)
    futures = client.futures_of(x)
    client.gather(futures)
    start = time.perf_counter()
    client.gather(futures)
    return x.nbytes / (time.perf_counter() - start)


def _round_trip(reps: int) -> float:
    """Seconds to compute and fetch the sum of a small persisted array."""
    v = da.ones(1_000, chunks=500).persist()
    times = []
    for _ in range(max(reps, 10)):
        start = time.perf_counter()
        v.sum().compute()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000,4000000,15000000")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--worker-memory", default="2GiB")
    parser.add_argument("--compressed", action="store_true")
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)
    memory = {"distributed.worker.memory.target": False, "distributed.worker.memory.spill": 0.9,
              "distributed.worker.memory.pause": 0.95}  # fmt: skip
    with (
        dask.config.set(memory),
        LocalCluster(
            n_workers=2, threads_per_worker=1, memory_limit=args.worker_memory,
            dashboard_address=None,
        ) as cluster,
        Client(cluster) as client,
    ):  # fmt: skip
        limit = next(iter(cluster.scheduler_info["workers"].values()))["memory_limit"]
        task_s, rate = _task_overhead(args.reps), _transfer_rate(client)
        trip = _round_trip(args.reps)
        print(f"per-task overhead {task_s * 1e3:.2f} ms, round trip {trip * 1e3:.1f} ms, "
              f"client<-worker transfer {rate / 1e9:.2f} GB/s; worker memory limit "
              f"{limit / 2**30:.1f} GiB")  # fmt: skip
        rows_out = []
        print(f"{'estimator':12} {'rows':>10} {'MB':>7} {'blocks':>6} {'local s':>8} "
              f"{'dask s':>8} {'per-block s':>11} {'dask/local':>10} "
              f"{'per-block/local':>15}")  # fmt: skip
        for rows in map(int, args.sizes.split(",")):
            X, labels = _data(rows, args.compressed)
            Xl = _fetched(X)
            mb = dense_mb = X.nbytes / 1e6
            if args.compressed:
                X, Xl = fm.compress(X).persist(), fm.compress(Xl)
                mb = sum(fm.matrix(X).node.meta.layout[:2]) / 1e6
            for name, make in ESTIMATORS.items():
                y = labels[name]
                yl = _fetched(y)
                local = _median_fit(make, Xl, yl, args.reps)
                dist = _median_fit(make, X, y, args.reps)
                forced = _median_fit(make, X, y, args.reps, **PER_BLOCK)
                row = {"estimator": name, "rows": rows, "mb": mb, "dense_mb": dense_mb,
                       "blocks": X.numblocks[0], "local_s": local, "dask_s": dist,
                       "per_block_s": forced,
                       "exceeds_worker_memory": mb * 1e6 > limit}  # fmt: skip
                rows_out.append(row)
                print(f"{name:12} {rows:>10} {row['mb']:7.1f} {row['blocks']:6} {local:8.3f} "
                      f"{dist:8.3f} {forced:11.3f} {dist / local:10.2f} {forced / local:15.2f}"
                      + ("  (> one worker's memory)" if row["exceeds_worker_memory"] else ""),
                      flush=True)  # fmt: skip
            del Xl, X, labels
        for name in ESTIMATORS:
            mine = [r for r in rows_out if r["estimator"] == name]
            cross = next((r["rows"] for r in mine if r["per_block_s"] <= r["local_s"]), None)
            best = min(mine, key=lambda r: r["per_block_s"] / r["local_s"])
            print(f"{name}: per-block crossover "
                  + (f"at {cross} rows" if cross else "not reached in this range")
                  + f"; smallest per-block/local ratio {best['per_block_s'] / best['local_s']:.2f}"
                  f" at {best['rows']} rows")  # fmt: skip
        if args.out:
            with open(args.out, "w") as f:
                json.dump({"task_s": task_s, "round_trip_s": trip, "transfer_bytes_per_s": rate,
                           "fits": rows_out}, f,
                          indent=1)  # fmt: skip


if __name__ == "__main__":
    main()
