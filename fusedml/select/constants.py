"""Cost-model constants: documented defaults, overridden by ``fusedml calibrate`` results stored in
the cache directory, overridden in turn by ``fm.config(...)`` fields of the same names."""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass

from fusedml._config import get_config

CALIBRATION_FILE = "calibration.json"


@dataclass(frozen=True)
class CostConstants:
    # Defaults: what `fusedml calibrate` measured on the 2-core CI machine (rounded); run it to
    # measure yours. SystemDS assumes 32 GB/s read, 2 GB/s write and 2 GFLOP/s per core.
    # generated kernels and BLAS products: all cores
    read_bandwidth_bytes_per_s: float = 1e10
    write_bandwidth_bytes_per_s: float = 8e9
    flops_per_s: float = 4e9  # a compiled parallel loop
    # numpy's elementwise loops and reductions and scipy.sparse: one core. `fusedml calibrate` here
    # measured them against a parallel numba loop on 2 cores at 0.52x its read bandwidth, 0.98x its
    # write bandwidth and 0.75x its flop rate; the defaults keep those ratios.
    numpy_read_bandwidth_bytes_per_s: float = 5e9
    numpy_write_bandwidth_bytes_per_s: float = 8e9
    numpy_flops_per_s: float = 3e9
    # a kernel with less work runs on one thread: waking the others costs more than it saves
    # (2-60 us here, depending on whether they still spin)
    serial_below_s: float = 2e-5
    dispatch_s: float = 1e-5  # the executor's overhead per operator it runs
    compile_s: float = 0.35  # numba compile of one parallel kernel (a plan-cache miss)
    compile_amortization_calls: float = 1000.0  # calls a compiled kernel is expected to serve
    # numpy's exp/log run SIMD loops; a generated kernel calls scalar libm per cell. Measured on
    # 4M cells: numpy 1.9 ns/cell on one core, a parallel numba loop 5.9 ns/cell on two (3.1x).
    base_exp_log_speedup: float = 3.0
    # Distributed steps (Dask): scheduling and running one task of a block, a call's wait for the
    # results it fetches (submit, run, gather: the latency of the smallest computation), and the
    # rate at which blocks, side inputs and partials move between processes (pickled over
    # loopback TCP here). Measured on a 2-worker LocalCluster here by asv_benches/dask_scaling.py.
    dask_task_s: float = 1.5e-3  # measured 1.3-2.0 ms
    dask_round_trip_s: float = 2.5e-2  # measured 23-26 ms
    network_bytes_per_s: float = 5e8  # measured 0.35-0.9 GB/s
    # a step over distributed values runs in this process only if those values (fetched once
    # and kept) are at most this big: the client never holds more of the data than this
    dask_local_below_bytes: float = 4e6


FIELDS = tuple(f.name for f in dataclasses.fields(CostConstants))


def calibration_path(cache_dir: str | None = None) -> str:
    return os.path.join(cache_dir or get_config().cache_dir, CALIBRATION_FILE)


def _load_calibrated(path: str) -> dict[str, float]:
    try:
        with open(path) as f:
            raw = json.load(f)
    except (OSError, ValueError):
        return {}
    if not isinstance(raw, dict):
        return {}
    return {k: float(v) for k, v in raw.items() if k in FIELDS and isinstance(v, int | float)}


_cache: dict[str, tuple[float, dict[str, float]]] = {}


def current_constants() -> CostConstants:
    """Defaults < calibration file < fm.config overrides."""
    config = get_config()
    path = calibration_path(config.cache_dir)
    try:
        mtime = os.path.getmtime(path)
    except OSError:
        mtime = -1.0
    cached = _cache.get(path)
    if cached is None or cached[0] != mtime:
        cached = (mtime, _load_calibrated(path) if mtime >= 0 else {})
        _cache[path] = cached
    values = dict(cached[1])
    values.update({k: v for k, v in config.cost_overrides.items() if v is not None})
    return dataclasses.replace(CostConstants(), **values)


def save_calibration(values: dict[str, float], cache_dir: str | None = None) -> str:
    path = calibration_path(cache_dir)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump({k: values[k] for k in FIELDS if k in values}, f, indent=2)
    os.replace(tmp, path)
    return path
