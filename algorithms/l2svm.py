"""L2SVM: the primal squared-hinge SVM of SystemDS's ``l2svm`` builtin.

Minimizes ``1/2 sum(s * max(0, 1 - y * (X @ w))**2) + reg/2 * ||w||**2`` (``s``: sample weights,
1 by default) by nonlinear conjugate
gradient (Fletcher-Reeves; w = 0, first direction X.T @ y) with a Newton line search on the step
size (reference/paper.md section 5). The intercept, when fitted, is the weight of a ones column
appended last and is penalized like the others (as in SystemDS). Binary natively; more classes
one-vs-rest.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from fusedml.algorithms._base import (
    FusedEstimatorMixin,
    append_ones,
    as_float_matrix,
    rescaled,
    sample_weights,
    unscaled_coefficients,
)
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

import fusedml as fm


@fm.jit
def _direction(X, s):
    return X @ s


@fm.jit
def _line_search_terms(Y, sw, Xw, Xd, step, wd, dd):
    """Gradient g and curvature h of the objective along the direction, at ``step``."""
    out = 1 - Y * (Xw + step * Xd)
    sv = out > 0
    out = out * sv
    g = wd + step * dd - fm.sum(sw * out * Y * Xd)
    h = dd + fm.sum(sw * Xd * sv * Xd)
    return g, h


@fm.jit
def _update(X, Y, sw, Xw, Xd, w, s, step, lam):
    """``lam``: each weight's penalty."""
    w = w + step * s
    Xw = Xw + step * Xd
    out = 1 - Y * Xw
    out = (out > 0) * out
    obj = 0.5 * fm.sum(sw * out * out) + 0.5 * fm.sum(lam * w * w)
    grad = X.T @ (sw * out * Y) - lam * w
    return w, Xw, obj, grad


def _squared_norm_ratio(a, b) -> float:
    """||a||^2 / ||b||^2 for b != 0, with both scaled by one power of two (exact) so that
    neither squared norm under- or overflows."""
    e = math.frexp(float(np.max(np.abs(b))))[1]
    a, b = np.ldexp(a, -e), np.ldexp(b, -e)
    return float(a @ a) / float(b @ b)


class L2SVM(FusedEstimatorMixin, ClassifierMixin, BaseEstimator):
    """Parameters follow SystemDS ``l2svm``: ``reg`` (lambda), ``fit_intercept`` (intercept),
    ``tol`` (epsilon: line-search and outer tolerance), ``max_iter`` (maxIterations) and
    ``max_inner_iter`` (maxii)."""

    def __init__(
        self,
        reg=1.0,
        fit_intercept=False,
        tol=1e-3,
        max_iter=100,
        max_inner_iter=20,
        fusion=None,
        verbose=False,
    ):
        self.reg = reg
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.max_iter = max_iter
        self.max_inner_iter = max_inner_iter
        self.fusion = fusion
        self.verbose = verbose

    def fit(self, X, y, sample_weight=None):
        self._check_numbers({"max_iter": 1, "max_inner_iter": 1}, ("reg", "tol"))
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64)
        sw = sample_weights(sample_weight, X)
        check_classification_targets(y)
        self.classes_ = np.unique(y)
        if len(self.classes_) < 2:
            raise ValueError(
                f"L2SVM needs samples of at least 2 classes; got 1 class ({self.classes_[0]!r})"
            )
        reg = float(self.reg)
        X, c = rescaled(as_float_matrix(X), reg)
        lam = np.full(X.shape[1] + self.fit_intercept, reg * c * c)
        if self.fit_intercept:
            X = append_ones(X)
            lam[-1] = reg
        columns = [self.classes_[1:]] if len(self.classes_) == 2 else self.classes_
        weights, iters = [], []
        with self._fusion_scope():
            for positive in columns:
                Y = np.where(y == positive, 1.0, -1.0)
                w, n_iter = self._fit_binary(X, Y, sw, lam)
                weights.append(w)
                iters.append(n_iter)
        W = np.array(weights)  # (classes or 1, features [+ 1])
        d = self.n_features_in_
        self.coef_ = unscaled_coefficients(W[:, :d], c, "L2SVM")
        self.intercept_ = W[:, d] if self.fit_intercept else np.zeros(len(W))
        self.n_iter_ = max(iters)
        return self

    def _fit_binary(self, X, Y, sw, lam):
        tol = float(self.tol)
        w = np.zeros(X.shape[1])
        g_old = np.asarray(X.T @ (sw * Y)).ravel()
        s = g_old.copy()
        Xw = np.zeros(X.shape[0])
        if not np.any(s):
            return w, 0  # the gradient vanishes at w = 0: the minimizer
        for it in range(1, self.max_iter + 1):
            # the line search runs along s scaled by a power of two (exact) to a largest entry
            # in [0.5, 1): its curvature terms (s's squares) neither under- nor overflow
            d = np.ldexp(s, -math.frexp(float(np.max(np.abs(s))))[1])
            Xd = _direction(X, d)
            wd, dd = float(w @ (lam * d)), float(d @ (lam * d))
            step, inner = self._line_search(Y, sw, Xw, Xd, wd, dd, tol)
            w, Xw, obj, g_new = _update(X, Y, sw, Xw, Xd, w, d, step, lam)
            self._log(f"iter {it}: {inner} line-search steps, objective {obj:.10g}")
            if not step * float(d @ g_old) >= tol * obj:
                return w, it
            s = _squared_norm_ratio(g_new, g_old) * s + g_new
            g_old = g_new
            if not np.any(s):
                return w, it  # a stationary point
        if tol > 0:
            warnings.warn(
                f"L2SVM did not converge in max_iter={self.max_iter} iterations",
                ConvergenceWarning,
                stacklevel=3,
            )
        return w, self.max_iter

    def _line_search(self, Y, sw, Xw, Xd, wd, dd, tol):
        """Newton steps on the step size: (step, number of steps)."""
        step, inner = 0.0, 0
        while inner < self.max_inner_iter:
            g, h = _line_search_terms(Y, sw, Xw, Xd, step, wd, dd)
            inner += 1
            if not h > 0:
                break  # no penalty and no support vector along the line: it is flat there
            step -= g / h
            if not g * g / h >= tol:
                break
        return step, inner

    def decision_function(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        scores = np.asarray(X @ self.coef_.T) + self.intercept_
        return scores.ravel() if scores.shape[1] == 1 else scores

    def predict(self, X):
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(int)]
        return self.classes_[np.argmax(scores, axis=1)]
