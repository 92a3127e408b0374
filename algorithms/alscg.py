"""ALSCG: matrix completion as SystemDS's ``alsCG`` builtin computes it.

Minimizes ``1/2 * sum over observed (i, j) of ((U @ V.T)[i, j] - X[i, j])**2 + reg/2 *
(sum_i w_i ||u_i||**2 + sum_j c_j ||v_j||**2)`` (``w = c = 1`` for "L2"; the row and column
counts of observed entries for "wL2") by alternating conjugate-gradient updates of U and of V,
at most ``rank`` CG steps each. Zeros of X are missing entries. Every product with ``U @ V.T``
is masked by X's non-zeros, so the optimizer runs them as Outer operators: the dense m x n
product never exists.
"""

from __future__ import annotations

import math

import numpy as np
from fusedml.algorithms._base import (
    FusedEstimatorMixin,
    balancing_scale,
    canonical_csr,
    count_nonzero,
    in_fusion_mode,
    max_abs,
    per_row_block,
    scaled,
    validated,
)
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

import fusedml as fm

CG_TOL = 1e-9  # inner CG stops at ||r||^2 <= CG_TOL * ||gradient||^2
EPS = np.finfo(np.float64).eps

# X: the ratings (zeros missing), W the mask of rated entries (X != 0).


@fm.jit
def _residual_times_v(X, U, V):
    return ((X != 0) * (U @ V.T - X)) @ V


@fm.jit
def _residual_times_u(X, U, V):
    return ((X != 0) * (U @ V.T - X)).T @ U


@fm.jit
def _masked_times_v(W, S, V):
    return (W * (S @ V.T)) @ V


@fm.jit
def _masked_times_u(W, U, S):
    return (W * (U @ S.T)).T @ U


@fm.jit
def _squared_error(X, U, V):
    return 0.5 * fm.sum((X != 0) * (U @ V.T - X) ** 2)


@fm.jit
def _mask(X):
    return X != 0


@fm.jit
def _rating_counts(X):
    """The number of ratings per user and per item, as (m, 1) and (n, 1) columns."""
    rated = X != 0
    return fm.sum(rated, axis=1, keepdims=True), fm.sum(rated, axis=0, keepdims=True).T


@fm.jit
def _normal_equations(X, VV, V, lam, eye, weighted):
    """Per user (row of X) the normal equations A u = b of its ratings' least-squares fit: A =
    sum_j v_j v_j' + lam * w * I over the rated items j (flattened r x r: VV's rows are the
    items' v v', ``eye`` is I), w the number of ratings if ``weighted``, else 1; b = sum_j
    rating_j v_j."""
    rated = X != 0
    w = fm.sum(rated, axis=1, keepdims=True) if weighted else 1.0
    return rated @ VV + lam * w * eye, X @ V


@fm.jit
def _errors(X, U, V):
    """Predicted minus given ratings at the rated entries (CSR)."""
    return (X != 0) * (U @ V.T) - X


@fm.jit
def _square_sum(E, c):
    return fm.sum((E * c) ** 2)


def _ratings_scale(X, reg: float) -> float:
    """The power of four (its square root is exact too) that balances X's ratings against the
    penalty, which scales with c where the ratings do (see ``balancing_scale``)."""
    c = balancing_scale(max(max_abs(X), reg))
    return c / 2 if round(math.log2(c)) % 2 else c


def _solved(A, b, r, c):
    """numpy solves the small systems A_i u_i = b_i of rows (fusedml has no solver): the least-
    squares solutions, as singular ones have when reg is 0; a row without ratings gets 0."""
    inverse = np.linalg.pinv(np.reshape(A, (-1, r, r)), rcond=r * EPS, hermitian=True)
    return np.einsum("ijk,ik->ij", inverse, b) / math.sqrt(c)


class ALSCG(FusedEstimatorMixin, TransformerMixin, BaseEstimator):
    """Parameters follow SystemDS ``alsCG``: ``rank``, ``reg``, ``reg_type`` ("L2" or "wL2"),
    ``max_iter`` (maxi: full U+V iterations), ``tol`` (thr: relative loss decrease),
    ``check_loss`` (check) and ``random_state`` (seed; a different generator)."""

    def __init__(
        self,
        rank=10,
        reg=1e-6,
        reg_type="L2",
        max_iter=50,
        tol=1e-4,
        check_loss=True,
        random_state=None,
        fusion=None,
        verbose=False,
    ):
        self.rank = rank
        self.reg = reg
        self.reg_type = reg_type
        self.max_iter = max_iter
        self.tol = tol
        self.check_loss = check_loss
        self.random_state = random_state
        self.fusion = fusion
        self.verbose = verbose

    def _check_params(self):
        self._check_numbers({"rank": 1, "max_iter": 1}, ("reg", "tol"))
        if self.reg_type not in ("L2", "wL2"):
            raise ValueError(f"reg_type must be 'L2' or 'wL2', got {self.reg_type!r}")

    def _ratings(self, X, reset):
        X = validated(self, X, reset=reset)
        return canonical_csr(X, drop_zeros=True)  # zeros are missing entries

    @in_fusion_mode
    def fit(self, X, y=None, U0=None, V0=None):
        """Factorize the ratings X (zeros missing); ``U0`` (m x rank) and ``V0`` (n x rank)
        replace the random initial factors (e.g. to replay another implementation's run)."""
        self._check_params()
        X = self._ratings(X, reset=True)
        # the problem on c * X with reg * c and factors sqrt(c) * (U, V) is the problem on X
        # with its loss times c**2; random factors are drawn at the rescaled ratings' magnitude
        c = _ratings_scale(X, float(self.reg))
        X, lam, root = scaled(X, c), float(self.reg) * c, math.sqrt(c)
        rng = check_random_state(self.random_state)
        U = self._initial_factors("U0", U0, X.shape[0], rng, root)
        V = self._initial_factors("V0", V0, X.shape[1], rng, root)
        U, V, initial, curve, converged, self.n_iter_ = self._alternate(X, U, V, lam)
        self.user_factors_, self.item_factors_ = U / root, V / root
        with np.errstate(over="ignore"):  # the loss of huge ratings may exceed float64
            self.initial_loss_, self.loss_curve_ = initial / c / c, np.array(curve) / c / c
        if self.check_loss and not converged and self.tol > 0:
            self._warn_unconverged(stacklevel=4)
        return self

    def _initial_factors(self, name, given, rows, rng, root):
        """The ``given`` factors times ``root``, or random ones (``rows`` x rank)."""
        if given is None:
            return rng.uniform(-0.5, 0.5, (rows, self.rank))
        F = np.array(given, dtype=np.float64)
        if F.shape != (rows, self.rank):
            raise ValueError(f"{name} must have shape {(rows, self.rank)}, got {F.shape}")
        return F * root

    def _alternate(self, X, U, V, lam):
        """(U, V, initial loss, [loss after each iteration], converged, iterations)."""
        W = _mask(X)
        row_w, col_w = _rating_counts(X) if self.reg_type == "wL2" else (1.0, 1.0)

        # The dense factors' own algebra (the penalty, CG's updates) stays numpy's: as fused
        # bodies it ran slower (fresh kernel outputs each step, where numpy reuses memory)
        def loss(U, V):
            penalty = np.sum(U**2 * row_w) + np.sum(V**2 * col_w)
            return _squared_error(X, U, V) + 0.5 * lam * penalty

        initial = float(loss(U, V)) if self.check_loss else 0.0
        previous, curve, converged, it = initial, [], False, 0
        while it < self.max_iter and not converged:
            U = self._cg(lambda S, V=V: _masked_times_v(W, S, V) + lam * S * row_w,
                         _residual_times_v(X, U, V) + lam * U * row_w, U)  # fmt: skip
            V = self._cg(lambda S, U=U: _masked_times_u(W, U, S) + lam * S * col_w,
                         _residual_times_u(X, U, V) + lam * V * col_w, V)  # fmt: skip
            it += 1
            if self.check_loss:
                current = float(loss(U, V))
                curve.append(current)
                decrease = (previous - current) / previous if previous else 0.0
                self._log(f"iteration {it}: loss {current:.10g} (decrease {decrease:.3g})")
                converged = previous == 0 or 0 <= decrease < self.tol
                previous = current
        return U, V, initial, curve, converged, it

    def _cg(self, hess, grad, F):
        """At most ``rank`` CG steps on the quadratic in F with Hessian ``hess`` and gradient
        ``grad`` at F."""
        R = -grad
        S = R.copy()
        norm_g2 = norm_r2 = float(np.sum(grad**2))
        inner = 1
        while norm_r2 > CG_TOL * norm_g2 and inner <= self.rank:
            HS = hess(S)
            shs = float(np.sum(S * HS))
            if not shs > 0:
                break  # no curvature along S (no penalty, S outside the rated entries' span)
            alpha = norm_r2 / shs
            F = F + alpha * S
            R = fm.persist(R - alpha * HS)  # factors of Dask data are Dask arrays: computed
            old, norm_r2 = norm_r2, float(np.sum(R**2))  # once, not again at every step
            F, S = fm.persist(F), fm.persist(R + (norm_r2 / old) * S)
            inner += 1
        return F

    @in_fusion_mode
    def transform(self, X):
        """User factors for the rows of X (ratings of the same items): each row's regularized
        least-squares fit with the item factors fixed (rows are independent of each other)."""
        check_is_fitted(self)
        X = self._ratings(X, reset=False)
        c = _ratings_scale(X, float(self.reg))  # as in fit: the factors scale by sqrt(c)
        V, lam, r = self.item_factors_ * math.sqrt(c), float(self.reg) * c, self.rank
        VV = np.reshape(V[:, :, None] * V[:, None, :], (len(V), r * r))  # per item: v v'
        eye = np.reshape(np.eye(r), r * r)
        A, b = _normal_equations(scaled(X, c), VV, V, lam, eye, self.reg_type == "wL2")
        return per_row_block(_solved, A, b, width=r, r=r, c=c)

    @in_fusion_mode
    def predict_ratings(self, X):
        """Predicted ratings at X's non-zeros (CSR, X's shape), for users given by their ratings
        in X. Not ``predict``: sklearn's ``predict`` gives one value per sample (row), and model
        selection, pipelines and sklearn's checks rely on that."""
        U = self.transform(X)
        X = self._ratings(X, reset=False)
        mask, users, items = fm.matrix(X) != 0, fm.matrix(U), fm.matrix(self.item_factors_)
        return fm.evaluate(mask * (users @ items.T))

    @in_fusion_mode
    def score(self, X, y=None):
        """Minus the root-mean-square error of the predicted ratings at X's non-zeros (users folded
        in from their own ratings): how well the item factors explain these users; higher is
        better, as sklearn's model selection expects."""
        U = self.transform(X)
        X = self._ratings(X, reset=False)
        count = count_nonzero(X)
        if count == 0:
            raise ValueError("score needs at least one rating")
        errors = _errors(X, U, self.item_factors_)
        c = balancing_scale(max_abs(errors))  # their squares would under- or overflow
        return -math.sqrt(float(_square_sum(errors, c)) / count) / c
