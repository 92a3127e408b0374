"""L2SVM: the primal squared-hinge SVM of SystemDS's ``l2svm`` builtin.

Minimizes ``1/2 sum(s * max(0, 1 - y * (X @ w))**2) + reg/2 * ||w||**2`` (``s``: sample weights,
1 by default) by nonlinear conjugate
gradient (Fletcher-Reeves; w = 0, first direction X.T @ y) with a Newton line search on the step
size (reference/paper.md section 5). The intercept, when fitted, is the weight of a ones column
appended last and is penalized like the others (as in SystemDS). Binary natively; more classes
one-vs-rest.
"""

from __future__ import annotations

import warnings

import numpy as np
from fusedml.algorithms._base import (
    FusedEstimatorMixin,
    append_ones,
    as_float_matrix,
    sample_weights,
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
def _update(X, Y, sw, Xw, Xd, w, s, step, reg):
    w = w + step * s
    Xw = Xw + step * Xd
    out = 1 - Y * Xw
    out = (out > 0) * out
    obj = 0.5 * fm.sum(sw * out * out) + reg / 2 * fm.sum(w * w)
    grad = X.T @ (sw * out * Y) - reg * w
    return w, Xw, obj, grad


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
        X = as_float_matrix(X)
        if self.fit_intercept:
            X = append_ones(X)
        columns = [self.classes_[1:]] if len(self.classes_) == 2 else self.classes_
        weights, iters = [], []
        with self._fusion_scope():
            for positive in columns:
                Y = np.where(y == positive, 1.0, -1.0)
                w, n_iter = self._fit_binary(X, Y, sw)
                weights.append(w)
                iters.append(n_iter)
        W = np.array(weights)  # (classes or 1, features [+ 1])
        d = self.n_features_in_
        self.coef_ = W[:, :d]
        self.intercept_ = W[:, d] if self.fit_intercept else np.zeros(len(W))
        self.n_iter_ = max(iters)
        return self

    def _fit_binary(self, X, Y, sw):
        reg, tol = float(self.reg), float(self.tol)
        w = np.zeros(X.shape[1])
        g_old = np.asarray(X.T @ (sw * Y)).ravel()
        s = g_old.copy()
        Xw = np.zeros(X.shape[0])
        for it in range(1, self.max_iter + 1):
            Xd = _direction(X, s)
            wd, dd = reg * float(w @ s), reg * float(s @ s)
            step, inner = 0.0, 0
            while inner < self.max_inner_iter:
                g, h = _line_search_terms(Y, sw, Xw, Xd, step, wd, dd)
                step -= g / h
                inner += 1
                if not g * g / h >= tol:
                    break
            w, Xw, obj, g_new = _update(X, Y, sw, Xw, Xd, w, s, step, reg)
            self._log(f"iter {it}: {inner} line-search steps, objective {obj:.10g}")
            converged = not (step * float(s @ g_old) >= tol * obj and float(s @ s) != 0)
            s = float(g_new @ g_new) / float(g_old @ g_old) * s + g_new
            g_old = g_new
            if converged:
                return w, it
        if tol > 0:
            warnings.warn(
                f"L2SVM did not converge in max_iter={self.max_iter} iterations",
                ConvergenceWarning,
                stacklevel=3,
            )
        return w, self.max_iter

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
