"""Row kernels with small products inside a row, against their floors: the KMeans steps
(SystemDS's shared ties, and the first nearest centroid of ``algorithm="lloyd"``) and the MLogReg
bodies on dense X, per width K (clusters or classes) of the products ``x_i @ B``. Each body runs
as fusedml generates it (cost_based), as a hand-written numba kernel of the same body, and beside
one read of X (the memory floor of any pass) and, for KMeans, scikit-learn's Lloyd iteration
(``KMeans(algorithm="lloyd")``, the extra time of more iterations from one start)."""

from __future__ import annotations

import time

import numpy as np
from fusedml.algorithms.kmeans import _lloyd_step, _lloyd_step_first
from fusedml.algorithms.mlogreg import _hessian_times, _loss_and_gradient

import fusedml as fm

from .common import PROFILE, skip
from .handwritten import (
    lloyd_dense,
    lloyd_first_tiles_dense,
    lloyd_tiles_dense,
    mlogreg_dense,
    mlogreg_loss_dense,
    stream_dense,
)

ROWS = {"fast": 20_000, "regular": 200_000, "large": 1_000_000}
COLS = 10
WIDTHS = [2, 4, 8, 16, 32, 64]
BODIES = ["kmeans", "kmeans-lloyd", "mlogreg-hessian", "mlogreg-loss"]
IMPLEMENTATIONS = [
    "generated", "hand-written numba", "hand-written tiles", "memory floor", "scikit-learn"
]  # fmt: skip


def make_data(body: str, k: int, rows: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((rows, COLS))
    if body.startswith("kmeans"):
        return {"X": X, "C": X[rng.choice(rows, k, replace=False)].copy()}
    B = rng.standard_normal((COLS, k)) * 0.3
    labels = rng.integers(0, k + 1, rows)
    Yk = (labels[:, None] == np.arange(k)).astype(float)
    yb = (labels == k).astype(float)[:, None]
    E = np.exp(X @ B)
    P = E / (E.sum(axis=1, keepdims=True) + 1.0)
    return {"X": X, "B": B, "V": rng.standard_normal((COLS, k)), "Yk": Yk, "yb": yb, "P": P}


def _generated(body, *args):
    """A traced body's call in the cost-based mode, compiled on its first call."""
    with fm.config(fusion="cost_based", compile="eager"):
        return body(*args)


def implementation(body: str, name: str, d: dict):
    """A zero-argument callable running ``body`` as ``name``; None where it does not exist."""
    X = d["X"]
    if name == "memory floor":
        return lambda: stream_dense(X)
    if body == "kmeans":
        C = d["C"]
        if name == "generated":
            return lambda: _generated(_lloyd_step, X, C, 1.0)
        if name == "hand-written numba":
            return lambda: lloyd_dense(X, C)
        if name == "hand-written tiles":
            return lambda: lloyd_tiles_dense(X, C)
        return None
    if body == "kmeans-lloyd":
        C = d["C"]
        if name == "generated":
            return lambda: _generated(_lloyd_step_first, X, C)
        if name == "hand-written tiles":
            return lambda: lloyd_first_tiles_dense(X, C)
        return None
    if name in ("scikit-learn", "hand-written tiles"):
        return None
    if body == "mlogreg-hessian":
        P, V = d["P"], d["V"]
        if name == "generated":
            return lambda: _generated(_hessian_times, X, P, V, None, 1.0)
        return lambda: mlogreg_dense(X, P, V)
    Yk, yb, B = d["Yk"], d["yb"], d["B"]
    if name == "generated":
        return lambda: _generated(_loss_and_gradient, X, Yk, yb, B, None, 1.0)
    return lambda: mlogreg_loss_dense(X, Yk, yb[:, 0], B)


def sklearn_lloyd_fit(d: dict, iterations: int):
    """A zero-argument callable fitting scikit-learn's Lloyd KMeans from d's centers for
    ``iterations`` iterations (tol=0: none converges earlier on this data)."""
    from sklearn.cluster import KMeans

    X, C = d["X"], d["C"]
    km = KMeans(len(C), init=C, n_init=1, max_iter=iterations, tol=0.0, algorithm="lloyd")
    return lambda: km.fit(X)


def sklearn_lloyd_seconds(d: dict, short: int = 4, long: int = 12, repeat: int = 3) -> float:
    """Seconds per Lloyd iteration of scikit-learn's KMeans from the same centroids: the extra
    time of ``long`` over ``short`` iterations (a fit's fixed costs cancel), median of repeats."""
    from sklearn.cluster import KMeans

    X, C = d["X"], d["C"]

    def fit(iterations):
        km = KMeans(len(C), init=C, n_init=1, max_iter=iterations, tol=0.0, algorithm="lloyd")
        start = time.perf_counter()
        km.fit(X)
        return time.perf_counter() - start, km.n_iter_

    fit(short)  # warm-up
    per_iteration = []
    for _ in range(repeat):
        (t_short, n_short), (t_long, n_long) = fit(short), fit(long)
        if n_long == n_short:  # converged before ``short``: no marginal time to take
            return t_long / n_long
        per_iteration.append((t_long - t_short) / (n_long - n_short))
    return float(np.median(per_iteration))


class RowFloor:
    params = (BODIES, WIDTHS, IMPLEMENTATIONS)
    param_names = ["body", "width", "implementation"]
    timeout = 600
    repeat = PROFILE.repeat
    number = 1

    def setup(self, body, width, name):
        if name == "scikit-learn":
            skip("scikit-learn's Lloyd iteration is timed by track_sklearn_seconds")
        self.d = make_data(body, width, ROWS[PROFILE.name])
        self.run = implementation(body, name, self.d)
        if self.run is None:
            skip(f"{body} has no {name} implementation")
        self.run()  # compiled, plan cached

    def time_body(self, body, width, name):
        self.run()


class SklearnLloyd:
    params = [WIDTHS]
    param_names = ["width"]
    timeout = 600

    def track_sklearn_seconds(self, width):
        return sklearn_lloyd_seconds(make_data("kmeans", width, ROWS[PROFILE.name]))

    track_sklearn_seconds.unit = "seconds"
