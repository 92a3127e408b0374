"""``fusedml calibrate``: measure this machine's cost-model constants and store them.

Read and write bandwidth of numpy's one-thread loops and of a compiled parallel loop (what generated
kernels are) streaming over arrays far larger than the caches, the flop rate of a compiled loop on
all cores and on one (numpy's elementwise loops run on one), the per-operator dispatch overhead of a
tiny numpy call, and the compile time of a small parallel numba kernel. Each is the median of
several repetitions; the machine may be shared and noisy.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import numpy as np

from fusedml._timing import call_seconds, median_seconds
from fusedml.select.constants import save_calibration


def _bandwidths(size_bytes: int, repeats: int) -> tuple[float, float, float, float]:
    """(read, write) of numpy's one-thread loops, then of a parallel compiled loop."""
    big = np.ones(size_bytes // 8)
    read = big.nbytes / median_seconds(big.sum, repeats)
    write = big.nbytes / median_seconds(lambda: big.fill(0.5), repeats)
    stream_sum, stream_fill = _stream_kernels()
    par_read = big.nbytes / median_seconds(lambda: stream_sum(big), repeats)
    par_write = big.nbytes / median_seconds(lambda: stream_fill(big, 0.5), repeats)
    return read, write, par_read, par_write


def _stream_kernels():
    import numba

    chunks = 64

    @numba.njit(parallel=True, fastmath={"reassoc"})
    def stream_sum(x):
        n, part = x.shape[0], np.zeros(chunks)
        for c in numba.prange(chunks):
            acc = 0.0
            for i in range(np.uint64(c * n // chunks), np.uint64((c + 1) * n // chunks)):
                acc += x[i]
            part[c] = acc
        return part.sum()

    @numba.njit(parallel=True)
    def stream_fill(x, v):
        n = x.shape[0]
        for c in numba.prange(chunks):
            for i in range(np.uint64(c * n // chunks), np.uint64((c + 1) * n // chunks)):
                x[i] = v

    return stream_sum, stream_fill


def _flop_kernel():
    import numba

    @numba.njit(parallel=True, fastmath={"reassoc", "contract"})
    def kernel(x, reps):  # 4 flops per element and repetition, in cache
        n = x.shape[0]
        chunks = numba.get_num_threads()
        out = np.zeros(chunks)
        for c in numba.prange(chunks):
            acc = 0.0
            for _ in range(reps):
                for i in range(c * n // chunks, (c + 1) * n // chunks):
                    acc += x[i] * 1.000001 + x[i] * 0.999999
            out[c] = acc
        return out.sum()

    return kernel


def _compile_seconds() -> float:
    import numba

    # a fresh function object every call: numba cannot reuse an earlier compile
    source = (
        "def k(x, y):\n"
        "    out = np.empty_like(x)\n"
        "    for i in numba.prange(x.shape[0]):\n"
        f"        out[i] = x[i] * y[i] + {time.perf_counter_ns() % 997}.0\n"
        "    return out\n"
    )
    namespace = {"np": np, "numba": numba}
    exec(source, namespace)
    fn = numba.njit(parallel=True)(namespace["k"])
    x = np.ones(8)
    return call_seconds(lambda: fn(x, x))


def measure(
    size_bytes: int = 1 << 28,
    repeats: int = 5,
    measure_compile: bool = True,
    dispatch_probe: Callable[[int], object] | None = None,
):
    """``dispatch_probe(k)`` runs k unfused operators on tiny data; the marginal time per operator
    is the dispatch overhead (without a probe: a bare numpy call's)."""
    import numba

    read, write, par_read, par_write = _bandwidths(size_bytes, repeats)
    kernel = _flop_kernel()
    x = np.ones(1 << 14)
    reps = 256
    flops = 4.0 * x.shape[0] * reps / median_seconds(lambda: kernel(x, reps), repeats)
    threads = numba.get_num_threads()
    numba.set_num_threads(1)  # numpy's loops: one core
    try:
        one_core = 4.0 * x.shape[0] * reps / median_seconds(lambda: kernel(x, reps), repeats)
    finally:
        numba.set_num_threads(threads)
    if dispatch_probe is None:
        one = np.ones(1)
        dispatch = median_seconds(lambda: [np.add(one, one) for _ in range(1000)], repeats) / 1000
    else:
        short = median_seconds(lambda: dispatch_probe(10), repeats)
        long = median_seconds(lambda: dispatch_probe(110), repeats)
        dispatch = max(long - short, 0.0) / 100
    values = {
        "read_bandwidth_bytes_per_s": par_read,
        "write_bandwidth_bytes_per_s": par_write,
        "flops_per_s": flops,
        "numpy_read_bandwidth_bytes_per_s": read,
        "numpy_write_bandwidth_bytes_per_s": write,
        "numpy_flops_per_s": one_core,
        "dispatch_s": dispatch,
    }
    if measure_compile:
        values["compile_s"] = statistics.median(_compile_seconds() for _ in range(3))
    return values


def calibrate(cache_dir: str | None = None, **kwargs) -> tuple[str, dict[str, float]]:
    values = measure(**kwargs)
    return save_calibration(values, cache_dir), values
