"""Fused kernels right after a BLAS call, as iteration bodies interleave them (an unfused product or
the solver's numpy algebra, then a fused operator): each kernel's median time right after a
threaded numpy BLAS call over its median time alone, for the paper's patterns on dense and CSR data.
Before the shared thread pool (``fusedml.runtime.threads``) OpenBLAS's spinning workers made these
ratios 1.2-2.6; ``FUSEDML_BLAS_POOL=0 OMP_WAIT_POLICY=PASSIVE`` restores that configuration."""

import statistics

import numpy as np
from fusedml.datasets import sparse_matrix

import fusedml as fm
from fusedml._timing import call_seconds

from .common import PROFILE

ROWS, COLS = 1_000_000, 20
CSR_SHAPE, CSR_DENSITY = (500_000, 1_000), 0.01
# every working set is at least twice the 32 MB L3 here: "alone" gains nothing from the caches
OUTER_SHAPE, OUTER_DENSITY, RANK = (60_000, 10_000), 0.01, 10
DENSE_OUTER_SHAPE = (4_000, 2_500)
REPEAT = 15  # threads_table.py's; asv's: 3 in the fast profile

PATTERNS = {
    "cell": fm.jit(lambda X, Y: fm.sum(X * fm.sigmoid(X) * Y)),
    "magg": fm.jit(lambda X, Y: (fm.sum(X**2), fm.sum(X * Y), fm.sum(Y**2))),
    "mmchain": fm.jit(lambda X, w, v: X.T @ (w * (X @ v))),
    "outer": fm.jit(lambda W, U, V: fm.sum(W * (U @ V.T) ** 2)),
}


def pattern_inputs(pattern: str, fmt: str, seed: int = 0) -> tuple:
    rng = np.random.default_rng(seed)
    if pattern == "outer":
        m, n = OUTER_SHAPE if fmt == "csr" else DENSE_OUTER_SHAPE
        W = (sparse_matrix(m, n, OUTER_DENSITY, seed) if fmt == "csr"
             else rng.standard_normal((m, n)))  # fmt: skip
        return W, rng.standard_normal((m, RANK)), rng.standard_normal((n, RANK))
    if fmt == "csr":
        m, n = CSR_SHAPE
        X, Y = (sparse_matrix(m, n, CSR_DENSITY, seed + k) for k in range(2))
    else:
        m, n = ROWS, COLS
        X, Y = rng.standard_normal((m, n)), rng.standard_normal((m, n))
    if pattern == "mmchain":
        return X, rng.standard_normal(m), rng.standard_normal(n)
    return X, Y


def blas_call(seed: int = 1):
    """A threaded numpy BLAS call of the size an iteration body makes (two gemv over 160 MB), and
    a one-thread numpy sweep over the same bytes (the control: it evicts the caches alike)."""
    rng = np.random.default_rng(seed)
    D, u = rng.standard_normal((ROWS, COLS)), rng.standard_normal(ROWS)
    z = rng.standard_normal(COLS)
    return (lambda: D.T @ (u * (D @ z))), (lambda: D.sum())


def measure(pattern: str, fmt: str, calls=None, repeat=REPEAT) -> dict[str, float]:
    """Median seconds of the cost_based kernel right after itself ("alone"), right after the BLAS
    call and right after the numpy sweep, sampled in turns so that machine noise hits all three
    alike; and of the BLAS call itself."""
    fn, args = PATTERNS[pattern], pattern_inputs(pattern, fmt)
    blas, sweep = calls or blas_call()
    samples: dict[str, list[float]] = {"alone": [], "after_blas": [], "after_sweep": [], "blas": []}
    with fm.config(fusion="cost_based"):
        fn(*args)  # compile or load the kernel, share the pool
        if not fn.explain(*args).operators:
            raise AssertionError(f"{pattern} on {fmt} has no fused operator")
        kernel = lambda: fn(*args)  # noqa: E731
        for _ in range(repeat):
            kernel()
            samples["alone"].append(call_seconds(kernel))
            samples["blas"].append(call_seconds(blas))
            samples["after_blas"].append(call_seconds(kernel))
            sweep()
            samples["after_sweep"].append(call_seconds(kernel))
    return {k: statistics.median(v) for k, v in samples.items()}


class KernelAfterBlas:
    """``track_ratio``: a kernel right after a BLAS call over the same kernel alone (1.0: no
    interference)."""

    params = (list(PATTERNS), ["dense", "csr"])
    param_names = ["pattern", "format"]
    timeout = 600

    def setup(self, pattern, fmt):
        self.calls = blas_call()

    def track_ratio(self, pattern, fmt):
        m = measure(pattern, fmt, self.calls, repeat=3 if PROFILE.name == "fast" else REPEAT)
        return m["after_blas"] / m["alone"]

    track_ratio.unit = "ratio"
