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
import warnings

import numpy as np
import scipy.sparse as sp
from fusedml.algorithms._base import (
    FusedEstimatorMixin,
    balancing_scale,
    canonical_csr,
    max_abs,
)
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

import fusedml as fm

CG_TOL = 1e-9  # inner CG stops at ||r||^2 <= CG_TOL * ||gradient||^2


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


def _ratings_scale(X, reg: float) -> float:
    """The power of four (its square root is exact too) that balances X's ratings against the
    penalty, which scales with c where the ratings do (see ``balancing_scale``)."""
    c = balancing_scale(max(max_abs(X), reg))
    return c / 2 if round(math.log2(c)) % 2 else c


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
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=reset)
        return canonical_csr(X, drop_zeros=True)  # zeros are missing entries

    def fit(self, X, y=None, U0=None, V0=None):
        """Factorize the ratings X (zeros missing); ``U0`` (m x rank) and ``V0`` (n x rank)
        replace the random initial factors (e.g. to replay another implementation's run)."""
        self._check_params()
        X = self._ratings(X, reset=True)
        m, n = X.shape
        # the problem on c * X with reg * c and factors sqrt(c) * (U, V) is the problem on X
        # with its loss times c**2; random factors are drawn at the rescaled ratings' magnitude
        c = _ratings_scale(X, float(self.reg))
        X, lam, root = X if c == 1.0 else X * c, float(self.reg) * c, math.sqrt(c)
        rng = check_random_state(self.random_state)
        U = (
            np.array(U0, dtype=np.float64) * root
            if U0 is not None
            else rng.uniform(-0.5, 0.5, (m, self.rank))
        )
        V = (
            np.array(V0, dtype=np.float64) * root
            if V0 is not None
            else rng.uniform(-0.5, 0.5, (n, self.rank))
        )
        if U.shape != (m, self.rank) or V.shape != (n, self.rank):
            raise ValueError(f"U0/V0 must be {(m, self.rank)} and {(n, self.rank)}")
        with self._fusion_scope():
            U, V, initial, curve, converged, self.n_iter_ = self._alternate(X, U, V, lam)
        self.user_factors_, self.item_factors_ = U / root, V / root
        with np.errstate(over="ignore"):  # the loss of huge ratings may exceed float64
            self.initial_loss_, self.loss_curve_ = initial / c / c, np.array(curve) / c / c
        if self.check_loss and not converged and self.tol > 0:
            warnings.warn(
                f"ALSCG did not converge in max_iter={self.max_iter} iterations",
                ConvergenceWarning,
                stacklevel=2,
            )
        return self

    def _alternate(self, X, U, V, lam):
        """(U, V, initial loss, [loss after each iteration], converged, iterations)."""
        m, n = X.shape
        W = sp.csr_array((np.ones(X.nnz), X.indices, X.indptr), shape=X.shape)
        if self.reg_type == "wL2":
            row_w = np.diff(X.indptr).astype(np.float64)[:, None]
            col_w = np.bincount(X.indices, minlength=n).astype(np.float64)[:, None]
        else:
            row_w, col_w = np.ones((m, 1)), np.ones((n, 1))

        def loss(U, V):
            penalty = np.sum(U**2 * row_w) + np.sum(V**2 * col_w)
            return _squared_error(X, U, V) + 0.5 * lam * penalty

        initial = loss(U, V) if self.check_loss else 0.0
        previous, curve, converged, it = initial, [], False, 0
        while it < self.max_iter and not converged:
            U = self._cg(lambda S, V=V: _masked_times_v(W, S, V) + lam * S * row_w,
                         _residual_times_v(X, U, V) + lam * U * row_w, U)  # fmt: skip
            V = self._cg(lambda S, U=U: _masked_times_u(W, U, S) + lam * S * col_w,
                         _residual_times_u(X, U, V) + lam * V * col_w, V)  # fmt: skip
            it += 1
            if self.check_loss:
                current = loss(U, V)
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
            R = R - alpha * HS
            old, norm_r2 = norm_r2, float(np.sum(R**2))
            S = R + (norm_r2 / old) * S
            inner += 1
        return F

    def transform(self, X):
        """User factors for the rows of X (ratings of the same items): each row's regularized
        least-squares fit with the item factors fixed (rows are independent of each other)."""
        check_is_fitted(self)
        X = self._ratings(X, reset=False)
        c = _ratings_scale(X, float(self.reg))  # as in fit: the factors scale by sqrt(c)
        X = X if c == 1.0 else X * c
        V, lam = self.item_factors_ * math.sqrt(c), float(self.reg) * c
        U = np.zeros((X.shape[0], self.rank))
        for i in range(X.shape[0]):
            cols = X.indices[X.indptr[i] : X.indptr[i + 1]]
            if not len(cols):
                continue  # no ratings: the penalty alone, minimized at 0
            Vi = V[cols]
            weight = len(cols) if self.reg_type == "wL2" else 1.0
            A = Vi.T @ Vi + lam * weight * np.eye(self.rank)
            b = Vi.T @ X.data[X.indptr[i] : X.indptr[i + 1]]
            U[i] = np.linalg.lstsq(A, b, rcond=None)[0]
        return U / math.sqrt(c)

    def predict_ratings(self, X):
        """Predicted ratings at X's non-zeros (CSR, X's shape), for users given by their ratings
        in X. Not ``predict``: sklearn's ``predict`` gives one value per sample (row), and model
        selection, pipelines and sklearn's checks rely on that."""
        U = self.transform(X)
        X = self._ratings(X, reset=False)
        with self._fusion_scope():
            mask, users, items = fm.matrix(X) != 0, fm.matrix(U), fm.matrix(self.item_factors_)
            return fm.evaluate(mask * (users @ items.T))

    def score(self, X, y=None):
        """Minus the root-mean-square error of the predicted ratings at X's non-zeros (users folded
        in from their own ratings): how well the item factors explain these users; higher is
        better, as sklearn's model selection expects."""
        U = self.transform(X)
        X = self._ratings(X, reset=False)
        if X.nnz == 0:
            raise ValueError("score needs at least one rating")
        rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
        errors = np.sum(U[rows] * self.item_factors_[X.indices], axis=1) - X.data
        c = balancing_scale(max_abs(errors))  # their squares would under- or overflow
        return -float(np.sqrt(np.mean((errors * c) ** 2))) / c
