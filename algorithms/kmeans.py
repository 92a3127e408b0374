"""KMeans as SystemDS's ``kmeans`` builtin runs it: ``n_init`` independent Lloyd runs, each seeded
k-means++-style (D^2 sampling) on its own random sample of about ``n_clusters *
sample_size_per_centroid`` rows. A run converges when the centroid WCSS decreases by less than
``tol * wcss``; only converged runs are candidates, and the best one's centroids are those whose
WCSS triggered convergence. Records equidistant to several centroids are shared equally;
``algorithm="lloyd"`` instead counts each record for its first nearest centroid only, as
scikit-learn's Lloyd iteration does, which is cheaper per pass (no shares to divide).
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
from fusedml.algorithms._base import (
    FusedEstimatorMixin,
    as_float_matrix,
    balancing_scale,
    count_nonzero,
    in_fusion_mode,
    max_abs,
    rescaled,
    rows_of,
    sample_weights,
    scaled,
    validated,
    weight_column,
    weighted_square_sum,
)
from sklearn.base import BaseEstimator, ClusterMixin, TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.sparsefuncs import mean_variance_axis
from sklearn.utils.validation import check_is_fitted

import fusedml as fm


@fm.jit
def _lloyd_step(X, C, sw):
    """The (weighted) sums and counts of the records each centroid of C attracts: one pass over
    X when fused (the paper's single Row operator). ``sw``: sample weights as an (n, 1) column,
    or the scalar 1.0."""
    D = -2 * (X @ C.T) + fm.sum(C * C, axis=1)  # squared distances minus ||x||^2
    nearest = fm.min(D, axis=1, keepdims=True)
    P = nearest >= D
    P = sw * (P / fm.sum(P, axis=1, keepdims=True))
    return P.T @ X, fm.sum(P, axis=0)


def _first_nearest(X, C):
    """Each record's first nearest centroid of C as a one-hot row."""
    D = -2 * (X @ C.T) + fm.sum(C * C, axis=1)
    return fm.one_hot(fm.argmax(-D, axis=1))


@fm.jit
def _lloyd_step_first(X, C):
    """The sums and counts of the records each centroid of C is the first nearest of."""
    P = _first_nearest(X, C)
    return P.T @ X, fm.sum(P, axis=0)


@fm.jit
def _weighted_lloyd_step_first(X, C, sw):
    """``_lloyd_step_first`` with the records weighted by the (n, 1) column sw."""
    P = _first_nearest(X, C)
    return P.T @ (sw * X), P.T @ sw


def _first_step(X, C, sw):
    """The sums and (weighted) counts of the records each centroid of C is the first nearest of."""
    if np.isscalar(sw):
        return _lloyd_step_first(X, C)
    return _weighted_lloyd_step_first(X, C, sw)


def _wcss(C, sums, counts, sum_x2):
    """Centroid WCSS, sum_x2 + sum(rowMins(D)), from the step's sums: each record's share P_ij
    sits at its minimum D_ij (shared or one-hot) and P's rows sum to 1, so sum(rowMins(D)) =
    sum(P * D) = sum_j (counts_j ||c_j||^2 - 2 c_j . sums_j) -- no second pass over X. A sum of
    squares: where it cancels to a negative number (records on their centroids) it is 0."""
    cross = float(np.sum(counts * np.sum(C * C, axis=1) - 2.0 * np.sum(C * sums, axis=1)))
    return max(sum_x2 + cross, 0.0)


@fm.jit
def _nearest(X, C):
    D = -2 * (X @ C.T) + fm.sum(C * C, axis=1)
    return fm.argmax(-D, axis=1), fm.min(D, axis=1)


@fm.jit
def _nearest_squared_distances(X, C):
    """Each record's first nearest centroid and its squared distance to it."""
    D = -2 * (X @ C.T) + fm.sum(C * C, axis=1)
    return fm.argmax(-D, axis=1), fm.sum(X * X, axis=1) + fm.min(D, axis=1)


def _relocate_empty(X, sw, C, sums, counts):
    """scikit-learn's relocation of emptied clusters, on a step's (weighted) sums and counts: the
    records farthest from their nearest centroid of C, as many as clusters of no weight, are each
    moved to one of those clusters (their old clusters give up their sums)."""
    empty = np.flatnonzero(counts == 0)
    labels, d2 = _nearest_squared_distances(X, C)
    # the same selection (and order) as scikit-learn's
    far = np.argpartition(np.asarray(d2), -len(empty))[: -len(empty) - 1 : -1]
    for new, i in zip(empty, far, strict=True):
        x = rows_of(X, [i])
        x = (x if isinstance(x, np.ndarray) else x.toarray()).ravel()
        w = 1.0 if np.isscalar(sw) else float(np.ravel(rows_of(sw, [i]))[0])
        old = labels[i]
        sums[old] -= x * w
        sums[new] = x * w
        counts[new] = w
        counts[old] -= w


def _mean_variance(X) -> float:
    """The mean of X's column variances (scikit-learn's scale for its ``tol``)."""
    if isinstance(X, np.ndarray):
        return float(np.mean(np.var(X, axis=0)))
    if sp.issparse(X):
        return float(np.mean(mean_variance_axis(X, axis=0)[1]))
    return float(np.mean(_column_variances(X)))  # compressed, Dask


@fm.jit
def _column_variances(X):
    D = X - fm.mean(X, axis=0)
    return fm.mean(D * D, axis=0)


@fm.jit
def _distances(X, C, c):
    """The Euclidean distances of X's records to C's centers, divided by ``c``."""
    D = fm.sum(X * X, axis=1, keepdims=True) - 2 * (X @ C.T) + fm.sum(C * C, axis=1)
    return fm.sqrt(fm.maximum(D, 0.0)) / c


@fm.jit
def _labels_and_nearest(X, C, sw):
    """Each record's first nearest centroid and sum_i sw_i min_j (||c_j||^2 - 2 x_i . c_j):
    one pass over X when fused."""
    D = -2 * (X @ C.T) + fm.sum(C * C, axis=1)
    return fm.argmax(-D, axis=1), fm.sum(sw * fm.min(D, axis=1, keepdims=True))


@fm.jit
def _inertia_terms(X, C, sw):
    """sum_i sw_i ||x_i||^2 and sum_i sw_i min_j (||c_j||^2 - 2 x_i . c_j): one pass over X when
    fused. ``sw``: an (n, 1) column or 1.0."""
    D = -2 * (X @ C.T) + fm.sum(C * C, axis=1)
    x2 = fm.sum(X * X, axis=1, keepdims=True)
    return fm.sum(sw * x2), fm.sum(sw * fm.min(D, axis=1, keepdims=True))


def _balanced(X, C):
    """(c * X, c * C, c) for the power of two c that keeps the squared distances of tiny or
    huge records from under- or overflowing (exact: every distance scales by c**2)."""
    c = balancing_scale(max(max_abs(X), float(np.max(np.abs(C)))))
    return scaled(X, c), C * c, c


class KMeans(FusedEstimatorMixin, ClusterMixin, TransformerMixin, BaseEstimator):
    """Parameters follow SystemDS ``kmeans``: ``n_clusters`` (k), ``n_init`` (runs),
    ``max_iter`` (per run), ``tol`` (eps: relative WCSS decrease), ``sample_size_per_centroid``
    (avg_sample_size_per_centroid) and ``random_state`` (seed; a different generator).

    ``init`` (not in SystemDS) gives the initial centroids as scikit-learn's does: None seeds
    each run as SystemDS does; an array of shape (n_clusters, n_features) starts one run there
    (a RuntimeWarning if ``n_init`` asks for more); a callable ``init(X, n_clusters,
    random_state)`` returning such an array seeds each run.

    ``algorithm`` (not in SystemDS): "systemds" runs SystemDS's iteration, which shares a record
    equidistant to several centroids equally among them; "lloyd" runs scikit-learn's (module
    docstring): ``max_iter`` then counts centroid updates and ``tol`` is scikit-learn's, a bound
    on the centroids' squared shift relative to the mean feature variance."""

    def __init__(
        self,
        n_clusters=10,
        init=None,
        n_init=10,
        max_iter=1000,
        tol=1e-6,
        sample_size_per_centroid=50,
        random_state=None,
        algorithm="systemds",
        fusion=None,
        verbose=False,
    ):
        self.n_clusters = n_clusters
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.sample_size_per_centroid = sample_size_per_centroid
        self.random_state = random_state
        self.algorithm = algorithm
        self.fusion = fusion
        self.verbose = verbose

    def _check_params(self, n_samples):
        positive = ("n_clusters", "n_init", "max_iter", "sample_size_per_centroid")
        self._check_numbers(dict.fromkeys(positive, 1), ("tol",))
        if self.algorithm not in ("systemds", "lloyd"):
            raise ValueError(f"algorithm should be 'systemds' or 'lloyd', got {self.algorithm!r}")
        if n_samples < self.n_clusters:
            raise ValueError(f"n_samples={n_samples} should be >= n_clusters={self.n_clusters}.")

    @in_fusion_mode
    def fit(self, X, y=None, sample_weight=None):
        X = validated(self, X)
        self._check_params(X.shape[0])
        X = as_float_matrix(X)
        sw = sample_weights(sample_weight, X)
        if not np.isscalar(sw) and count_nonzero(sw) < self.n_clusters:
            raise ValueError(
                f"n_clusters={self.n_clusters} needs at least as many samples of positive weight"
            )
        rng = check_random_state(self.random_state)
        runs = self._runs()
        user_X = X
        sw_column = weight_column(sw)
        X, scale = rescaled(X, 0.0)  # the centroids found on scale * X, by scale
        sum_x2 = weighted_square_sum(X, sw)
        starts = []
        for _ in range(runs):
            if self.init is None:
                starts.append(self._seed(X, sw, rng))
            else:
                starts.append(self._initial_centroids(user_X, rng) * scale)
        if self.algorithm == "lloyd":
            C, wcss, n_iter, labels = self._sklearn_runs(X, sw_column, starts, sum_x2)
        else:
            C, wcss, n_iter = self._systemds_runs(X, sw_column, starts, sum_x2)
            labels, _ = _nearest(X, C)
        self.cluster_centers_, self.inertia_ = C / scale, wcss / scale / scale
        self.labels_, self.n_iter_ = labels, n_iter
        # rows as bytes (+ 0.0 turns -0.0 into 0.0): np.unique(C, axis=0) took 150 us on 10 x 64
        distinct = len({row.tobytes() for row in C + 0.0})
        if distinct < self.n_clusters:
            warnings.warn(  # as sklearn's KMeans
                f"Number of distinct clusters ({distinct}) found smaller than "
                f"n_clusters ({self.n_clusters}). Possibly due to duplicate points in X.",
                ConvergenceWarning,
                stacklevel=3,
            )
        return self

    def _systemds_runs(self, X, sw, starts, sum_x2):
        """(centroids, WCSS, iterations) of the best converged run, SystemDS's way."""
        results = [self._lloyd(X, sw, C, sum_x2, run) for run, C in enumerate(starts)]
        converged = [r for r in results if r[0] == 1]
        if not converged:
            warnings.warn(
                "no KMeans run converged within max_iter (or every run lost a centroid); "
                "returning the run with the smallest WCSS",
                ConvergenceWarning,
                stacklevel=3,
            )
            converged = [r for r in results if r[0] == 2] or results
        # runs that reach the same clustering differ in WCSS by rounding only (which depends on
        # the fusion plan's summation order): the first of those wins, so labels do not hinge on it
        best = min(r[1] for r in converged)
        _, wcss, C, n_iter = next(r for r in converged if r[1] <= best + 1e-9 * abs(best))
        return C, wcss, n_iter

    def _sklearn_runs(self, X, sw, starts, sum_x2):
        """(centroids, inertia, iterations, labels) of the run of least inertia, scikit-learn's
        way."""
        tol = self.tol * _mean_variance(X) if self.tol else 0.0
        best = None
        for run, C in enumerate(starts):
            C, n_iter = self._sklearn_lloyd(X, sw, C, tol, run)
            labels, nearest = _labels_and_nearest(X, C, sw)
            inertia = max(sum_x2 + float(nearest), 0.0)
            if best is None or inertia < best[1]:
                best = (C, inertia, n_iter, labels)
        return best

    def _sklearn_lloyd(self, X, sw, C, tol, run):
        """(centroids, updates) of scikit-learn's Lloyd iteration from C."""
        for it in range(1, self.max_iter + 1):
            sums, counts = self._step(X, C, sw)
            sums, counts = np.array(sums, dtype=np.float64), np.array(counts).ravel()
            if np.any(counts == 0):
                _relocate_empty(X, sw, C, sums, counts)
            positive = counts > 0
            sums[positive] *= (1.0 / counts[positive])[:, None]  # as scikit-learn scales
            shift = float(np.sum((sums - C) ** 2))
            C = sums
            self._log(f"run {run + 1}, iteration {it - 1}: centroid shift {shift:.10g}")
            if shift <= tol:
                break
        return C, it

    def _runs(self) -> int:
        if self.init is None or callable(self.init) or self.n_init == 1:
            return self.n_init
        warnings.warn(  # as sklearn's KMeans
            "Explicit initial center position passed: performing only one init in KMeans "
            f"instead of n_init={self.n_init}.",
            RuntimeWarning,
            stacklevel=4,
        )
        return 1

    def _initial_centroids(self, X, rng) -> np.ndarray:
        """``init``'s centroids (an array, or a callable's result) as a checked float array."""
        given = self.init(X, self.n_clusters, rng) if callable(self.init) else self.init
        C = np.array(given, dtype=np.float64)  # a copy: the user's array is never changed
        if C.shape != (self.n_clusters, X.shape[1]):
            raise ValueError(
                f"init should be of shape (n_clusters, n_features) = "
                f"{(self.n_clusters, X.shape[1])}, got {C.shape}"
            )
        if not np.all(np.isfinite(C)):
            raise ValueError("init's centroids must be finite")
        return C

    def _seed(self, X, sw, rng):
        """k-means++ on a random sample (all rows if the sample would not be smaller); records
        are picked with probability proportional to their weight times their squared distance."""
        n, k = X.shape[0], self.n_clusters
        target = k * self.sample_size_per_centroid
        rows = np.flatnonzero(rng.random_sample(n) < target / n) if target < n else np.arange(n)
        if not np.isscalar(sw):
            rows = rows[rows_of(sw, rows) > 0]
        if len(rows) < k:
            pool = np.arange(n) if np.isscalar(sw) else np.flatnonzero(sw > 0)
            rows = np.sort(rng.choice(pool, size=k, replace=False))
        S = rows_of(X, rows)
        S = S if isinstance(S, np.ndarray) else S.toarray()  # CSR, compressed
        s2 = np.sum(S * S, axis=1)
        row_weights = np.ones(len(rows)) if np.isscalar(sw) else rows_of(sw, rows)
        weights = row_weights
        centers = np.empty((k, X.shape[1]))
        for i in range(k):
            cdf = np.cumsum(weights)
            pick = int(np.searchsorted(cdf, rng.random_sample() * cdf[-1], side="right"))
            centers[i] = S[min(pick, len(rows) - 1)]
            dist = s2 + centers[i] @ centers[i] - 2 * (S @ centers[i])
            dist = row_weights * dist
            weights = dist if i == 0 else np.minimum(weights, dist)
        return centers

    def _lloyd(self, X, sw, C, sum_x2, run):
        """(termination code, centroid WCSS, centroids, iterations): 1 converged, 2 max_iter,
        3 a centroid lost all its records."""
        wcss = np.inf
        for it in range(1, self.max_iter + 1):
            wcss_old = wcss
            sums, counts = self._step(X, C, sw)
            counts = np.asarray(counts).ravel()
            wcss = _wcss(C, sums, counts, sum_x2)
            self._log(f"run {run + 1}, iteration {it - 1}: centroid WCSS {wcss:.10g}")
            # <=: a WCSS of 0 (every record on its centroid) cannot decrease any further
            if wcss_old - wcss <= self.tol * wcss:
                return 1, wcss, C, it
            if it >= self.max_iter:
                return 2, wcss, C, it
            if np.any(counts <= 0):
                return 3, wcss, C, it
            C = sums / counts[:, None]
        raise AssertionError("unreachable")

    def _step(self, X, C, sw):
        if self.algorithm == "systemds":
            return _lloyd_step(X, C, sw)
        return _first_step(X, C, sw)

    def _balanced_data(self, X):
        check_is_fitted(self)
        X = validated(self, X, reset=False)
        return _balanced(as_float_matrix(X), self.cluster_centers_)

    @in_fusion_mode
    def predict(self, X):
        X, C, _ = self._balanced_data(X)
        labels, _ = _nearest(X, C)
        return labels

    @in_fusion_mode
    def transform(self, X):
        """Euclidean distances to every cluster center."""
        X, C, c = self._balanced_data(X)
        return _distances(X, C, c)

    @in_fusion_mode
    def score(self, X, y=None, sample_weight=None):
        """Minus the (weighted) sum of squared distances of X's records to their nearest center."""
        X, C, c = self._balanced_data(X)
        sw = sample_weights(sample_weight, X)
        x2, nearest = _inertia_terms(X, C, weight_column(sw))
        return -(x2 + nearest) / c / c
