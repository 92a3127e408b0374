"""MLogReg: multinomial logistic regression as SystemDS's ``multiLogReg`` builtin fits it.

Trust-region Newton with inner (Steihaug) conjugate gradient (Lin, Weng, Keerthi 2008) on
``-sum(s_i * log P(y_i)) + reg/2 * ||B||**2`` (``s``: sample weights, 1 by default); the last
class (the largest label) is the baseline whose
coefficients are fixed at 0, and the intercept (a ones column appended last) is not penalized.
The data-sized work of an iteration is three traced bodies: the Hessian-vector product of the CG
loop, the objective with the new probabilities, and the gradient.
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
    lbfgs,
    linear,
    max_row_norm,
    rescaled,
    sample_weights,
    take,
    total_weight,
    transposed,
    trust_radius,
    unscaled_coefficients,
    validated,
    weight_column,
)
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

import fusedml as fm

SOLVERS = ("trust_region", "lbfgs")
PSI = 0.1  # inner CG stops at ||r|| <= PSI * ||gradient||


# ``sw``: the sample weights as an (n, 1) column, or the scalar 1.0. Coefficients of [X, 1]
# enter split (see _base.coefficients): ``b``, ``v`` are the intercept's row (None without one).
@fm.jit
def _targets(codes, classes):
    """The one-hot targets of the K non-baseline classes and of the baseline (K), and the
    probabilities at B = 0 (uniform). ``codes``: each record's class index, an (n, 1) column;
    ``classes``: 0, ..., K - 1."""
    K = classes.shape[0]
    Yk = codes == classes
    return Yk, codes == K, 0.0 * Yk + 1.0 / (K + 1)


@fm.jit
def _hessian_times(X, P, V, v, sw):
    Q = P * linear(X, V, v)
    return transposed(X, sw * (Q - P * fm.sum(Q, axis=1, keepdims=True)), v is not None)


@fm.jit
def _probabilities(X, Yk, yb, B, b, sw):
    return _probabilities_and_loss(X, Yk, yb, B, b, sw)


def _probabilities_and_loss(X, Yk, yb, B, b, sw):
    """P of the K non-baseline classes and -sum(Y * LT) + sum(log(rowSums(exp(LT)))), each
    record's terms weighted (in a traced body)."""
    XB = linear(X, B, b)
    top = fm.maximum(fm.max(XB, axis=1, keepdims=True), 0.0)  # the baseline's LT is 0
    E = fm.exp(XB - top)
    total = fm.sum(E, axis=1, keepdims=True) + fm.exp(-top)
    loss = -fm.sum(sw * Yk * (XB - top)) + fm.sum(sw * yb * top) + fm.sum(sw * fm.log(total))
    return E / total, loss


@fm.jit
def _loss_and_gradient(X, Yk, yb, B, b, sw):
    """``_probabilities``' loss and the gradient ``transposed``'s parts at B, without keeping P:
    (X.T @ G, [ones column's sums,] loss), one pass over X when fused."""
    P, loss = _probabilities_and_loss(X, Yk, yb, B, b, sw)
    return *transposed(X, sw * (P - Yk), b is not None), loss


@fm.jit
def _gradient(X, P, Yk, sw, intercept):
    return transposed(X, sw * (P - Yk), intercept)


@fm.jit(static_argnames=("output",))
def _predict(X, W, b, output):
    """``output`` of the scores X @ W + b: "labels" (class indices), "decision", "proba" or
    "log_proba" (softmax, as sklearn's)."""
    S = X @ W + b
    if output == "labels":
        return fm.argmax(S, axis=1)
    if output == "decision":
        return S[:, 1] - S[:, 0] if W.shape[1] == 2 else S
    E = fm.exp(S - fm.max(S, axis=1, keepdims=True))
    P = E / fm.sum(E, axis=1, keepdims=True)
    return fm.log(P) if output == "log_proba" else P


class MLogReg(FusedEstimatorMixin, ClassifierMixin, BaseEstimator):
    """Parameters follow SystemDS ``multiLogReg``: ``reg``, ``fit_intercept`` (icpt 0/1),
    ``tol`` (relative gradient norm), ``max_iter`` (maxi), ``max_inner_iter`` (maxii; 0 = D*K).

    ``solver``: ``"trust_region"`` (SystemDS's trust-region Newton with inner conjugate
    gradient; the default) or ``"lbfgs"``: scipy's L-BFGS-B on the same objective divided by
    the total sample weight, each evaluation one fused pass over X for the loss and its
    gradient; ``tol`` is then its gradient tolerance (the largest entry) and ``max_iter`` its
    iteration limit, as in scikit-learn's ``LogisticRegression``.
    """

    def __init__(
        self,
        reg=1.0,
        fit_intercept=False,
        tol=1e-6,
        max_iter=100,
        max_inner_iter=20,
        solver="trust_region",
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
        self._check_numbers({"max_iter": 1, "max_inner_iter": 0}, ("reg", "tol"))
        if self.solver not in SOLVERS:
            raise ValueError(f"solver must be one of {SOLVERS}, got {self.solver!r}")
        X, y = validated(self, X, y)
        sw = weight_column(sample_weights(sample_weight, X))
        self.classes_, codes = class_codes(y)
        if len(self.classes_) < 2:
            raise ValueError(
                f"MLogReg needs samples of at least 2 classes; got 1 class ({self.classes_[0]!r})"
            )
        reg = float(self.reg)
        X, c = rescaled(as_float_matrix(X), reg)
        lam = np.full((X.shape[1] + self.fit_intercept, 1), reg * c * c)
        if self.fit_intercept:
            lam[-1] = 0.0
        classes = np.arange(len(self.classes_) - 1, dtype=np.float64)
        Yk, yb, P = _targets(np.reshape(codes, (-1, 1)), classes)
        if self.solver == "lbfgs":
            B = self._lbfgs(X, Yk, yb, sw, lam)
        else:
            B = self._newton(X, Yk, yb, P, sw, lam)
        d = self.n_features_in_
        coef = np.vstack([B.T, np.zeros((1, B.shape[0]))])  # the baseline class: zeros
        self.coef_ = unscaled_coefficients(coef[:, :d], c, "MLogReg")
        self.intercept_ = coef[:, d] if self.fit_intercept else np.zeros(len(coef))
        return self

    def _newton(self, X, Yk, yb, P, sw, lam):
        """B of [X, 1] from B = 0, where the probabilities are ``P``."""
        n, d = X.shape
        D, K = len(lam), Yk.shape[1]
        intercept = len(lam) > d
        B = np.zeros((D, K))
        obj = total_weight(sw, n) * math.log(K + 1)
        grad = joined(_gradient(X, P, Yk, sw, intercept)) + lam * B
        norm_grad = norm_grad0 = float(np.sqrt(np.sum(grad**2)))
        max_inner = self.max_inner_iter or D * K
        self._log(f"initial objective {obj:.10g}, gradient norm {norm_grad:.10g}")
        # <=: a zero gradient (e.g. all-zero X) is converged even at tol = 0; it leaves no
        # direction to search (and X no row norm to size the trust region by)
        it, converged = 1, norm_grad <= self.tol
        delta = 0.5 * math.sqrt(D) / max_row_norm(X, sw, intercept) if not converged else 0.0
        while not converged and it <= self.max_iter:
            S, R, boundary = self._trust_region_step(
                X, P, sw, lam, grad, norm_grad, delta, max_inner
            )
            gs = float(np.sum(S * grad))
            qk = -0.5 * (gs - float(np.sum(S * R)))
            B_new = B + S
            P_new, loss = _probabilities(X, Yk, yb, *coefficients(B_new, d), sw)
            obj_new = loss + 0.5 * float(np.sum(lam * B_new**2))
            actred = obj - obj_new
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                rho = np.float64(actred) / qk  # as SystemDS's doubles: 0/0 rejects the step
            snorm = float(np.sqrt(np.sum(S**2)))
            if it == 1:
                delta = min(delta, snorm)
            delta = trust_radius(delta, rho, obj_new - obj, gs, snorm)
            if rho > ETA0:
                B, P, obj = B_new, P_new, obj_new
                grad = joined(_gradient(X, P, Yk, sw, intercept)) + lam * B
                norm_grad = float(np.sqrt(np.sum(grad**2)))
            self._log(f"iter {it}: objective {obj:.10g}, gradient norm {norm_grad:.10g}")
            it += 1
            small_change = abs(actred) < (abs(obj) + abs(obj_new)) * 1e-14
            converged = norm_grad <= self.tol * norm_grad0 or (not boundary and small_change)
        self.n_iter_ = it - 1
        if not converged and self.tol > 0:
            self._warn_unconverged(stacklevel=5)
        return B

    def _lbfgs(self, X, Yk, yb, sw, lam):
        """B of [X, 1] by L-BFGS-B from B = 0 on (loss + penalty) / total weight."""
        d = X.shape[1]
        n = total_weight(sw, X.shape[0]) or 1.0  # no weight at all: the penalty alone

        def objective(B):
            *gradient, loss = _loss_and_gradient(X, Yk, yb, *coefficients(B, d), sw)
            value = float(loss) + 0.5 * float(np.sum(lam * B**2))
            return value / n, (joined(gradient) + lam * B) / n

        result = lbfgs(objective, np.zeros((len(lam), Yk.shape[1])), self.max_iter, self.tol)
        self.n_iter_ = int(result.nit)
        if result.status == 1 and self.tol > 0:
            self._warn_unconverged(stacklevel=5)
        return result.x

    @staticmethod
    def _trust_region_step(X, P, sw, lam, grad, norm_grad, delta, max_inner):
        """Steihaug CG on the Newton system within the trust radius: (step, residual, boundary)."""
        S = np.zeros_like(grad)
        R = -grad
        V = R.copy()
        delta2 = delta * delta  # not **: Python raises OverflowError where * gives inf
        norm_r2 = float(np.sum(R**2))
        inner, done, boundary = 1, math.sqrt(norm_r2) <= PSI * norm_grad, False
        while not done:
            HV = joined(_hessian_times(X, P, *coefficients(V, X.shape[1]), sw)) + lam * V
            vhv = float(np.sum(V * HV))
            # no curvature along V (no penalty, saturated probabilities): the model is linear
            # along it and its minimizer lies on the boundary
            interior = vhv > 0
            if interior:
                alpha = norm_r2 / vhv
                S_new = S + alpha * V
                interior = float(np.sum(S_new**2)) <= delta2
            if interior:
                S = S_new
                R = R - alpha * HV
                old, norm_r2 = norm_r2, float(np.sum(R**2))
                V = R + (norm_r2 / old) * V
                done = math.sqrt(norm_r2) <= PSI * norm_grad
            else:
                boundary = True
                sv, v2, s2 = float(np.sum(S * V)), float(np.sum(V**2)), float(np.sum(S**2))
                rad = math.sqrt(sv * sv + v2 * (delta2 - s2))
                alpha = (delta2 - s2) / (sv + rad) if sv >= 0 else (rad - sv) / v2
                S = S + alpha * V
                R = R - alpha * HV
                done = True
            inner += 1
            done = done or inner > max_inner
        return S, R, boundary

    @in_fusion_mode
    def _predictions(self, X, output):
        check_is_fitted(self)
        X = validated(self, X, reset=False)
        return _predict(as_float_matrix(X), self.coef_.T, self.intercept_, output)

    def decision_function(self, X):
        """Per-class scores (log-probabilities up to a per-row constant); binary: the log-odds of
        ``classes_[1]``."""
        return self._predictions(X, "decision")

    def predict_proba(self, X):
        return self._predictions(X, "proba")

    def predict_log_proba(self, X):
        return self._predictions(X, "log_proba")

    def predict(self, X):
        indices = self._predictions(X, "labels")
        return take(self.classes_, indices)
