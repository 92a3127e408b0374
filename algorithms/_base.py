"""What every estimator shares: input validation, the fusion scope, the verbose trace, the
intercept's products with [X, 1] (without copying X), and the data-sized helpers, each one pass
over X through fusedml."""

from __future__ import annotations

import contextlib
import functools
import math
import os
import sys
import threading
import warnings

import numpy as np
import scipy.optimize
import scipy.sparse as sp
from fusedml.algorithms import _distributed
from fusedml.algorithms._distributed import held_by_dask
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (
    _check_sample_weight,
    check_array,
    check_consistent_length,
    column_or_1d,
    validate_data,
)

import fusedml as fm


class FusedEstimatorMixin:
    """``fusion`` runs every traced body of ``fit``/``predict`` in that mode (None: the configured
    default); ``verbose`` prints one line per iteration."""

    def _check_numbers(self, integers: dict[str, int], non_negative: tuple[str, ...]) -> None:
        """Integer parameters with their lower bounds, and non-negative real parameters."""
        for name, low in integers.items():
            value = getattr(self, name)
            if not (isinstance(value, int | np.integer) and value >= low):
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        for name in non_negative:
            value = getattr(self, name)
            if not value >= 0:
                raise ValueError(f"{name} must be non-negative, got {value!r}")

    def _fusion_scope(self) -> contextlib.AbstractContextManager:
        if self.fusion is None:
            return contextlib.nullcontext()
        return fm.config(fusion=self.fusion)

    def _warn_unconverged(self, stacklevel: int) -> None:
        """A ``ConvergenceWarning``: ``max_iter`` iterations ended before the tolerance was met."""
        warnings.warn(
            f"{type(self).__name__} did not converge in max_iter={self.max_iter} iterations",
            ConvergenceWarning,
            stacklevel=stacklevel + 1,
        )

    def _log(self, message: str) -> None:
        if self.verbose:
            print(f"[{type(self).__name__}] {message}", file=sys.stderr)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


def in_fusion_mode(method):
    """Decorator: the estimator's ``method`` runs every fusedml call in its ``fusion`` mode."""

    @functools.wraps(method)
    def run(self, *args, **kwargs):
        with self._fusion_scope():
            return method(self, *args, **kwargs)

    return run


@fm.jit
def _max_abs(X):
    return fm.max(fm.abs(X))


@fm.jit
def _count_nonzero(X):
    return fm.sum(X != 0)


@fm.jit
def _total(v):
    return fm.sum(v)


@fm.jit
def _times(X, c):
    return X * c


def max_abs(X) -> float:
    """The largest |entry| of X (0 when it has no non-zero)."""
    return float(_max_abs(X))


def count_nonzero(X) -> int:
    """The number of non-zero entries of X."""
    return int(_count_nonzero(X))


def scaled(X, c: float):
    """c * X (X itself for c = 1)."""
    return X if c == 1.0 else _times(X, c)


def sample_weights(sample_weight, X):
    """Validated non-negative per-sample weights, or the scalar 1.0 when there are none (the traced
    bodies then multiply by a runtime scalar instead of reading an all-ones vector)."""
    if sample_weight is None:
        return 1.0
    if held_by_dask(X):
        sw = _distributed.sample_weights(sample_weight, X)
    else:
        sw = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
    if not max_abs(sw) > 0:  # non-negative: no weight is positive
        raise ValueError("sample_weight must contain at least one positive weight")
    return sw


def total_weight(sw, n: int) -> float:
    """The sum of the sample weights of n records (``sw`` as ``sample_weights`` gives it)."""
    return n if np.isscalar(sw) else float(_total(sw))


def weight_column(sw):
    """Sample weights as an (n, 1) column for the traced bodies (the scalar 1.0 stays)."""
    return sw if np.isscalar(sw) else np.reshape(sw, (-1, 1))


# The solvers form products of up to four of X's entries (e.g. s'X'Xs with s = X'y), summed over
# records; magnitudes within [2**-128, 2**128] keep them far from float64's under- and overflow.
SAFE_MAGNITUDE = 2.0**128


def balancing_scale(magnitude: float) -> float:
    """1.0 for a magnitude within the safe range (or 0), else the power of two that brings it
    into [0.5, 1) (subnormal ones: as far as float64 reaches). Multiplying by a power of two is
    exact, so the rescaled problem is the same problem."""
    if magnitude == 0 or 1 / SAFE_MAGNITUDE <= magnitude <= SAFE_MAGNITUDE:
        return 1.0
    return math.ldexp(1.0, min(-math.frexp(magnitude)[1], 1023))


def rescaled(X, reg: float, magnitude: float | None = None) -> tuple:
    """(c * X, c) with the power of two c that balances X against the penalty ``reg`` (see
    ``balancing_scale``): the problem on c * X with the penalty reg * c**2 has the coefficients
    of the problem on X divided by c. ``magnitude``: X's ``max_abs`` if known."""
    magnitude = max_abs(X) if magnitude is None else magnitude
    c = balancing_scale(max(magnitude, math.sqrt(reg)))
    return scaled(X, c), c


def unscaled_coefficients(coef, c: float, estimator: str):
    """The coefficients on X from those on ``rescaled`` c * X, when float64 can hold them."""
    with np.errstate(over="ignore"):
        coef = coef * c
    if not np.all(np.isfinite(coef)):
        raise ValueError(
            f"{estimator}'s coefficients exceed float64's range: X's values are too small for "
            "an unpenalized or weakly penalized fit; rescale X or increase reg"
        )
    return coef


@fm.jit
def _row_squares(X, sw):
    """(the largest squared row norm among records of positive weight, the weighted sum of all
    squares): one pass over X when fused, no X * X temporary. ``sw``: (n, 1) or 1.0."""
    x2 = fm.sum(X * X, axis=1, keepdims=True)
    return fm.max(x2 * (sw > 0)), fm.sum(sw * x2)


def max_row_norm(X, sw, intercept: bool = False) -> float:
    """The largest Euclidean row norm of X, with the intercept's ones column appended if
    ``intercept``, among the records that carry weight (the initial trust region of MLogReg and
    GLM; a record of weight 0 is as absent)."""
    # squares of tiny or huge entries would under-/overflow: rescale X and the ones column
    c = balancing_scale(max(max_abs(X), 1.0 if intercept else 0.0))
    X = scaled(X, c)
    largest = float(_row_squares(X, weight_column(sw))[0])
    return math.sqrt(largest + c * c if intercept else largest) / c


def weighted_square_sum(X, sw) -> float:
    """sum_i sw_i ||x_i||^2."""
    return float(_row_squares(X, weight_column(sw))[1])


# -- the intercept: SystemDS appends a ones column to X; the traced bodies take its coefficient
# separately instead of copying X (``coefficients`` splits it off, ``linear`` and ``transposed``
# are the two products with [X, 1], ``joined`` assembles the latter's parts).


# trust-region Newton (Lin, Weng, Keerthi 2008; SystemDS's multiLogReg, liblinear's TRON): a step
# is taken when rho = actual / predicted decrease > ETA0; the radius follows the SIGMAs
ETA0, ETA1, ETA2 = 1e-4, 0.25, 0.75
SIGMA1, SIGMA2, SIGMA3 = 0.25, 0.5, 4.0


def trust_radius(delta: float, rho: float, change: float, gs: float, snorm: float) -> float:
    """The next trust radius after a step of norm ``snorm`` that changed the objective by
    ``change`` where the gradient predicted ``gs`` (g's inner product with the step)."""
    curvature = change - gs
    alpha = SIGMA3 if curvature <= 0 else max(SIGMA1, -0.5 * gs / curvature)
    if rho < ETA0:
        return min(max(alpha, SIGMA1) * snorm, SIGMA2 * delta)
    if rho < ETA1:
        return max(SIGMA1 * delta, min(alpha * snorm, SIGMA2 * delta))
    if rho < ETA2:
        return max(SIGMA1 * delta, min(alpha * snorm, SIGMA3 * delta))
    return max(delta, min(alpha * snorm, SIGMA3 * delta))


def steihaug(hessian_times, g, beta, lam, delta, max_cg):
    """Steihaug's truncated CG: approximately minimize 0.5 z'(H + diag(lam))z + (g + lam*beta)'z
    over ||z|| <= delta, with H z = ``hessian_times(z)`` (g: the data term's gradient at beta):
    (z, the model's change there (negative: a predicted decrease), whether the boundary was
    reached)."""
    delta2 = delta * delta  # not **: Python raises OverflowError where * gives inf
    z = np.zeros_like(g)
    g_reg = g + lam * beta
    r = g_reg.copy()
    p = -r
    rr = float(r @ r)
    eps = rr * min(0.25, math.sqrt(rr))
    if rr < eps:
        return z, 0.0, False
    for i in range(1, max_cg + 1):
        q = lam * p + hessian_times(p)
        pq = float(p @ q)
        if pq <= 0:
            pp = float(p @ p)
            if pp > 0:
                z, change = _boundary_point(g_reg, z, p, q, r, pp, pq, delta2)
                return z, change, True
            return z, 0.5 * float(z @ (r + g_reg)), False
        alpha = rr / pq
        new_z = z + alpha * p
        if float(new_z @ new_z) >= delta2:
            z, change = _boundary_point(g_reg, z, p, q, r, float(p @ p), pq, delta2)
            return z, change, True
        z = new_z
        old, r = rr, r + alpha * q
        rr = float(r @ r)
        if i == max_cg or rr < eps:
            return z, 0.5 * float(z @ (r + g_reg)), False
        p = -r + (rr / old) * p
    return z, 0.5 * float(z @ (r + g_reg)), False


def _boundary_point(g, z, p, q, r, pp, pq, delta2):
    """The point z + tau * p on the trust boundary with the smaller model value."""
    zz, pz = float(z @ z), float(p @ z)
    root = math.sqrt(max(pz * pz - pp * (zz - delta2), 0.0))  # z is inside: >= 0 but for rounding
    tau1, tau2 = (-pz + root) / pp, (-pz - root) / pp
    zq, gp = float(z @ q), float(g @ p)
    extra = 0.5 * float(z @ (r + g))
    f1 = extra + (0.5 * tau1 * pq + zq + gp) * tau1
    f2 = extra + (0.5 * tau2 * pq + zq + gp) * tau2
    return z + (tau1 if f1 < f2 else tau2) * p, min(f1, f2)


_scipy_blas_lock = threading.Lock()
_scipy_blas_state = {"depth": 0, "before": []}


@functools.cache
def _scipy_openblas() -> tuple:
    """threadpoolctl's controllers of scipy's own OpenBLAS builds (not numpy's: fusedml runs
    that one on the kernels' threads)."""
    from threadpoolctl import ThreadpoolController

    folder = os.sep + "scipy.libs" + os.sep
    libs = ThreadpoolController().lib_controllers
    return tuple(c for c in libs if c.internal_api == "openblas" and folder in c.filepath)


@contextlib.contextmanager
def _scipy_blas_one_thread():
    """scipy's OpenBLAS on one thread in the block. L-BFGS-B's BLAS calls on the coefficients
    wake scipy's OpenBLAS workers, which then spin (about 0.1 s) through the next evaluation's
    kernels on the same cores: a GLM fit on 200k x 1000 CSR took 181 ms, 101 ms with this.
    Nested and concurrent blocks restore the thread counts when the last one ends."""
    libs = _scipy_openblas()
    with _scipy_blas_lock:
        if _scipy_blas_state["depth"] == 0:
            _scipy_blas_state["before"] = [c.get_num_threads() for c in libs]
            for c in libs:
                c.set_num_threads(1)
        _scipy_blas_state["depth"] += 1
    try:
        yield
    finally:
        with _scipy_blas_lock:
            _scipy_blas_state["depth"] -= 1
            if _scipy_blas_state["depth"] == 0:
                for c, n in zip(libs, _scipy_blas_state["before"], strict=True):
                    c.set_num_threads(n)


def lbfgs(objective, x0, max_iter: int, tol: float):
    """scipy's L-BFGS-B minimizing ``objective(x) -> (value, gradient)`` from ``x0`` (any shape;
    the result's ``x`` has it): stops where the largest gradient entry is at most ``tol`` (no stop
    on a small relative decrease) or after ``max_iter`` iterations (``status`` 1)."""
    shape = np.shape(x0)

    def flat(x):
        value, gradient = objective(x.reshape(shape))
        return value, np.ravel(gradient)

    options = {"maxiter": max_iter, "maxls": 50, "gtol": tol, "ftol": 0.0}
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"), _scipy_blas_one_thread():
        result = scipy.optimize.minimize(
            flat, np.ravel(x0), method="L-BFGS-B", jac=True, options=options
        )
    result.x = result.x.reshape(shape)
    return result


def coefficients(w, d: int) -> tuple:
    """(the coefficients of X's d columns, those of the ones column or None without one), from
    coefficients w of [X, 1] (rows d + 1, or d without an intercept)."""
    return (w, None) if len(w) == d else (w[:d], w[d])


def linear(X, w, b):
    """[X, 1] @ [w; b] in a traced body (``b`` None: X @ w)."""
    return X @ w if b is None else X @ w + b


def transposed(X, G, intercept: bool) -> tuple:
    """[X, 1].T @ G in a traced body, as a tuple of parts for ``joined``: X.T @ G, and the ones
    column's sum(G, axis=0) if ``intercept`` (over the same rows: cost_based fuses both into one
    pass)."""
    return (X.T @ G, fm.sum(G, axis=0)) if intercept else (X.T @ G,)


def joined(parts):
    """The array of ``transposed``'s parts: X.T @ G with the ones column's row appended."""
    if len(parts) == 1:
        return parts[0]
    top, ones_row = parts
    return np.concatenate([top, np.reshape(ones_row, (1, *top.shape[1:]))])


def validated(estimator, X, y="no_validation", *, reset: bool = True, y_numeric: bool = False):
    """sklearn's ``validate_data`` for X (dense, any scipy.sparse, an ``fm.CompressedMatrix``,
    which is checked on its stored values and never decompressed, or a Dask array, converted and
    persisted, checked through fusedml and never fetched) and, unless y is left out, y (None
    raises, as sklearn's check does); returns X, or (X, y)."""
    dask = held_by_dask(X)
    if not dask and not isinstance(X, fm.CompressedMatrix):
        kw = {} if isinstance(y, str) else {"y": y, "y_numeric": y_numeric}
        return validate_data(estimator, X, accept_sparse="csr", dtype=np.float64, reset=reset, **kw)
    X = _distributed.persisted(X) if dask else X
    n, m = X.shape
    if n < 1 or m < 1:
        raise ValueError(f"Found array with {n} sample(s) and {m} feature(s) (shape={X.shape})")
    if not (np.isfinite(max_abs(X)) if dask else X.all_finite()):
        raise ValueError("Input X contains NaN or infinity.")
    validate_data(estimator, X, reset=reset, skip_check_array=True)
    if isinstance(y, str):
        return X
    if y is None:
        raise ValueError(
            f"{type(estimator).__name__} requires y to be passed, but the target y is None"
        )
    if dask:
        return X, _distributed.per_sample(y, X, "y", numeric=y_numeric)
    y = column_or_1d(check_array(y, ensure_2d=False, dtype="numeric" if y_numeric else None))
    check_consistent_length(X, y)
    return X, y


def class_codes(y):
    """(sorted classes, each sample's index into them), after sklearn's target checks."""
    if held_by_dask(y):
        return _distributed.class_codes(y)
    check_classification_targets(y)
    y = np.asarray(y)
    return _integer_codes(y) or np.unique(y, return_inverse=True)


def _integer_codes(y) -> tuple | None:
    """``np.unique(y, return_inverse=True)`` by counting, for numeric labels that are integers
    within a range of 2**16 (a sort of 1M labels took 20 ms, a sixth of an L2SVM fit); None
    for other labels."""
    kind = y.dtype.kind
    if y.ndim != 1 or not len(y) or kind not in "iuf":
        return None
    lo, hi = y.min(), y.max()
    span = int(hi) - int(lo) if kind in "iu" else float(hi) - float(lo)
    if not span < 1 << 16 or (kind == "f" and not np.all(y == np.floor(y))):
        return None
    wide = y.astype(np.int64) if kind in "iu" and y.itemsize < 8 else y  # int8: 127 - -128
    offsets = (wide - lo).astype(np.intp)
    present = np.bincount(offsets, minlength=int(span) + 1) > 0
    classes = lo + np.flatnonzero(present).astype(y.dtype)  # in y's dtype throughout (uint64)
    if kind == "f" and lo <= 0 <= hi:  # the zero class as np.unique gives it: its first value
        zero = np.flatnonzero(classes == 0)
        if len(zero):
            classes[zero[0]] = y[np.argmax(y == 0)]
    return classes, (np.cumsum(present) - 1)[offsets]


def take(values, indices):
    """``values[indices]``; Dask indices give a Dask array."""
    return _distributed.take(values, indices) if held_by_dask(indices) else values[indices]


def per_row_block(fn, *arrays, width: int, **kw):
    """``fn(*arrays, **kw)`` for arrays of the same rows, giving ``width`` columns; on Dask
    arrays block by block."""
    if held_by_dask(arrays[0]):
        return _distributed.per_row_block(fn, *arrays, width=width, **kw)
    return fn(*arrays, **kw)


def rows_of(v, rows):
    """The given rows of X or of a per-sample vector, in this process."""
    return _distributed.rows_of(v, rows) if held_by_dask(v) else v[rows]


def as_float_matrix(X):
    """float64 C-ordered ndarray, canonical CSR or a compressed matrix (what fusedml computes
    on)."""
    if sp.issparse(X):
        return canonical_csr(X)
    if isinstance(X, fm.CompressedMatrix) or held_by_dask(X):
        return X  # a Dask array: converted by ``validated``
    return np.ascontiguousarray(X, dtype=np.float64)


def canonical_csr(X, drop_zeros: bool = False):
    """float64 CSR with sorted, unique indices (and without stored zeros if ``drop_zeros``). It
    shares the caller's arrays only when nothing needs to change: a user's matrix is never
    modified in place."""
    if held_by_dask(X):
        return _distributed.without_stored_zeros(X) if drop_zeros else X
    X = sp.csr_array(X, dtype=np.float64)
    stored_zeros = drop_zeros and X.nnz > 0 and not X.data.all()
    if X.has_canonical_format and not stored_zeros:
        return X
    X = X.copy()
    X.sum_duplicates()
    if drop_zeros:
        X.eliminate_zeros()
    return X
