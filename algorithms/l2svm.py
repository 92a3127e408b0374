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

import numpy as np
from fusedml.algorithms._base import (
    ETA0,
    FusedEstimatorMixin,
    as_float_matrix,
    class_codes,
    coefficients,
    in_fusion_mode,
    joined,
    linear,
    rescaled,
    sample_weights,
    steihaug,
    take,
    transposed,
    trust_radius,
    unscaled_coefficients,
    validated,
)
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

import fusedml as fm

# The coefficients w of [X, 1] enter the traced bodies split (see _base.coefficients): ``b`` is the
# intercept's coefficient (None without one), ``intercept`` whether [X, 1].T products have its row.


@fm.jit
def _labels(codes, positive):
    """Y (+1 for the records of class index ``positive``, else -1) and X @ w at w = 0."""
    hit = codes == positive
    return 2.0 * hit - 1.0, 0.0 * hit


@fm.jit
def _start(X, Y, sw, intercept):
    """The first direction, [X, 1].T @ (sw * Y), in parts."""
    return transposed(X, sw * Y, intercept)


@fm.jit
def _direction(X, s, b):
    return linear(X, s, b)


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
def _update(X, Y, sw, Xw, Xd, step, intercept):
    """X @ w after the step, the objective's data term 1/2 sum(sw * hinge**2) and minus its
    gradient, [X, 1].T @ (sw * hinge * Y), in parts."""
    Xw = Xw + step * Xd
    out = 1 - Y * Xw
    out = (out > 0) * out
    return Xw, 0.5 * fm.sum(sw * out * out), *transposed(X, sw * out * Y, intercept)


@fm.jit
def _loss_and_gradient(X, w, b, Y, sw, intercept):
    """At w: the data term 1/2 sum(sw * hinge**2), the weights of its (generalized) Hessian
    ``sw * active`` (the active records those with a positive hinge) and minus its gradient,
    [X, 1].T @ (sw * hinge * Y), in parts: one pass over X when fused."""
    margin = 1 - Y * linear(X, w, b)
    active = margin > 0
    out = active * margin
    return 0.5 * fm.sum(sw * out * out), sw * active, *transposed(X, sw * out * Y, intercept)


@fm.jit
def _hessian_times(X, D, p, q, intercept):
    """The data term's Hessian times p, [X, 1].T @ (D * [X, 1] @ p), for the Hessian weights D
    that ``_loss_and_gradient`` gives (kept per Newton iteration: each product then reads one
    vector instead of recomputing X @ w, a third of the work on data too small to fuse)."""
    return transposed(X, D * linear(X, p, q), intercept)


@fm.jit
def _scores(X, W, b):
    """One column per one-vs-rest problem; binary: 1-D."""
    S = X @ W + b
    return S[:, 0] if W.shape[1] == 1 else S


@fm.jit
def _class_indices(X, W, b):
    """Indices into classes_: the largest score; binary: 1 where the score is positive (the
    larger of -score and score; at a tie, 0, the first)."""
    S = X @ W + b
    return fm.argmax(fm.hstack([-S, S]) if W.shape[1] == 1 else S, axis=1)


def _squared_norm_ratio(a, b) -> float:
    """||a||^2 / ||b||^2 for b != 0, with both scaled by one power of two (exact) so that
    neither squared norm under- or overflows."""
    e = math.frexp(float(np.max(np.abs(b))))[1]
    a, b = np.ldexp(a, -e), np.ldexp(b, -e)
    return float(a @ a) / float(b @ b)


SOLVERS = ("cg", "newton")


class L2SVM(FusedEstimatorMixin, ClassifierMixin, BaseEstimator):
    """Parameters follow SystemDS ``l2svm``: ``reg`` (lambda), ``fit_intercept`` (intercept),
    ``tol`` (epsilon: line-search and outer tolerance), ``max_iter`` (maxIterations) and
    ``max_inner_iter`` (maxii).

    ``solver``: ``"cg"`` (SystemDS's nonlinear conjugate gradient with a Newton line search; the
    default) or ``"newton"``: trust-region Newton with inner conjugate gradient on the primal, as
    liblinear's solver for this loss, each gradient and each Hessian-vector product one fused
    pass over X; ``tol`` is then the gradient norm relative to its norm at w = 0 and
    ``max_inner_iter`` the conjugate-gradient steps per iteration.
    """

    def __init__(
        self,
        reg=1.0,
        fit_intercept=False,
        tol=1e-3,
        max_iter=100,
        max_inner_iter=20,
        solver="cg",
        fusion=None,
        verbose=False,
    ):
        self.reg = reg
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.max_iter = max_iter
        self.max_inner_iter = max_inner_iter
        self.solver = solver
        self.fusion = fusion
        self.verbose = verbose

    @in_fusion_mode
    def fit(self, X, y, sample_weight=None):
        self._check_numbers({"max_iter": 1, "max_inner_iter": 1}, ("reg", "tol"))
        if self.solver not in SOLVERS:
            raise ValueError(f"solver must be one of {SOLVERS}, got {self.solver!r}")
        X, y = validated(self, X, y)
        sw = sample_weights(sample_weight, X)
        self.classes_, codes = class_codes(y)
        if len(self.classes_) < 2:
            raise ValueError(
                f"L2SVM needs samples of at least 2 classes; got 1 class ({self.classes_[0]!r})"
            )
        reg = float(self.reg)
        X, c = rescaled(as_float_matrix(X), reg)
        lam = np.full(X.shape[1] + self.fit_intercept, reg * c * c)
        if self.fit_intercept:
            lam[-1] = reg  # the ones column is not rescaled
        fits = []  # (w, iterations) per one-vs-rest problem; binary: classes_[1] against [0]
        for positive in [1] if len(self.classes_) == 2 else range(len(self.classes_)):
            Y, Xw = _labels(codes, positive)
            if self.solver == "newton":
                fits.append(self._newton(X, Y, sw, lam))
            else:
                fits.append(self._fit_binary(X, Y, Xw, sw, lam))
        W = np.array([w for w, _ in fits])  # (classes or 1, features [+ 1])
        d = self.n_features_in_
        self.coef_ = unscaled_coefficients(W[:, :d], c, "L2SVM")
        self.intercept_ = W[:, d] if self.fit_intercept else np.zeros(len(W))
        self.n_iter_ = max(n_iter for _, n_iter in fits)
        return self

    def _fit_binary(self, X, Y, Xw, sw, lam):
        """(w, iterations) for the labels Y (+-1) from w = 0, where X @ w is ``Xw``."""
        tol = float(self.tol)
        n_features = X.shape[1]
        intercept = len(lam) > n_features
        w = np.zeros(len(lam))
        g_old = joined(_start(X, Y, sw, intercept))
        s = g_old.copy()
        if not np.any(s):
            return w, 0  # the gradient vanishes at w = 0: the minimizer
        for it in range(1, self.max_iter + 1):
            # the line search runs along s scaled by a power of two (exact) to a largest entry
            # in [0.5, 1): its curvature terms (s's squares) neither under- nor overflow
            d = np.ldexp(s, -math.frexp(float(np.max(np.abs(s))))[1])
            Xd = _direction(X, *coefficients(d, n_features))
            wd, dd = float(w @ (lam * d)), float(d @ (lam * d))
            step, inner = self._line_search(Y, sw, Xw, Xd, wd, dd, tol)
            Xw, loss, *parts = _update(X, Y, sw, Xw, Xd, step, intercept)
            w = w + step * d
            obj = loss + 0.5 * float(np.sum(lam * w * w))
            g_new = joined(parts) - lam * w
            self._log(f"iter {it}: {inner} line-search steps, objective {obj:.10g}")
            if not step * float(d @ g_old) >= tol * obj:
                return w, it
            s = _squared_norm_ratio(g_new, g_old) * s + g_new
            g_old = g_new
            if not np.any(s):
                return w, it  # a stationary point
        if tol > 0:
            self._warn_unconverged(stacklevel=5)
        return w, self.max_iter

    def _newton(self, X, Y, sw, lam):
        """(w, iterations) for the labels Y (+-1) by trust-region Newton from w = 0."""
        d = X.shape[1]
        intercept = len(lam) > d

        def at(w):  # (objective, the data term's gradient, its Hessian's weights)
            loss, D, *parts = _loss_and_gradient(X, *coefficients(w, d), Y, sw, intercept)
            return float(loss) + 0.5 * float(np.sum(lam * w * w)), -joined(parts), D

        w = np.zeros(len(lam))
        obj, g, D = at(w)
        norm0 = float(np.linalg.norm(g))
        delta = norm0
        for it in range(1, self.max_iter + 1):
            if not norm0 or np.linalg.norm(g + lam * w) <= self.tol * norm0:
                return w, it - 1

            def hessian_times(p, D=D):
                return joined(_hessian_times(X, D, *coefficients(p, d), intercept))

            z, predicted, _ = steihaug(hessian_times, g, w, lam, delta, self.max_inner_iter)
            obj_new, g_new, D_new = at(w + z)
            change = obj_new - obj
            with np.errstate(divide="ignore", invalid="ignore"):
                rho = np.float64(change) / predicted  # 0/0: no step
            snorm = float(np.linalg.norm(z))
            if it == 1:
                delta = min(delta, snorm)
            delta = trust_radius(delta, rho, change, float((g + lam * w) @ z), snorm)
            self._log(f"iter {it}: objective {obj_new:.10g}, rho {rho:.3g}")
            if rho > ETA0:
                w, obj, g, D = w + z, obj_new, g_new, D_new
            if not predicted < 0 or abs(change) <= 1e-12 * abs(obj):
                return w, it  # no decrease left to find at float64's precision
        if self.tol > 0:
            self._warn_unconverged(stacklevel=5)
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

    @in_fusion_mode
    def _predictions(self, body, X):
        check_is_fitted(self)
        X = validated(self, X, reset=False)
        return body(as_float_matrix(X), self.coef_.T, self.intercept_)

    def decision_function(self, X):
        return self._predictions(_scores, X)

    def predict(self, X):
        indices = self._predictions(_class_indices, X)
        return take(self.classes_, indices)
