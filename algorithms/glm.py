"""GLM: generalized linear models as SystemDS's ``glm`` builtin fits them.

Fisher scoring in a trust region with inner conjugate gradient (Steihaug) on ``-loglik(beta) +
reg/2 * ||beta||**2`` (log-likelihood summed over rows; the intercept, a ones column appended
last, is not penalized). The family/link arithmetic is in ``_glm_family.py``; all data-sized work
is three traced bodies, each one pass over X when fused: the log-likelihood at ``beta``, the
gradient ``X.T @ g_Y(X @ beta)`` and the CG's ``X.T @ (w(X @ beta) * (X @ p))`` (the weights are
recomputed per row rather than materialized). As in SystemDS 3.4, the returned coefficients are
the last iteration's candidate.
"""

from __future__ import annotations

import math

import numpy as np
from fusedml.algorithms import _glm_family as fam
from fusedml.algorithms._base import (
    FusedEstimatorMixin,
    as_float_matrix,
    coefficients,
    in_fusion_mode,
    joined,
    lbfgs,
    linear,
    max_abs,
    max_row_norm,
    rescaled,
    sample_weights,
    steihaug,
    total_weight,
    transposed,
    unscaled_coefficients,
    validated,
    weight_column,
)
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.metrics import d2_log_loss_score, d2_tweedie_score
from sklearn.utils.validation import check_is_fitted

import fusedml as fm

SOLVERS = ("trust_region", "lbfgs")
FAMILIES = {"gaussian": 0.0, "poisson": 1.0, "gamma": 2.0, "inverse_gaussian": 3.0}
LINKS = {  # name -> (SystemDS link type, link power)
    "log": (fam.POWER_LINK, 0.0), "identity": (fam.POWER_LINK, 1.0),
    "inverse": (fam.POWER_LINK, -1.0), "sqrt": (fam.POWER_LINK, 0.5),
    "logit": (fam.LOGIT, 0.0), "probit": (fam.PROBIT, 0.0), "cloglog": (fam.CLOGLOG, 0.0),
    "cauchit": (fam.CAUCHIT, 0.0),
}  # fmt: skip


# ``spec`` = (family, var_power, link, link_power): static, one trace per family and link.
# ``no`` is the binomial's second response column, None for power families.
# ``sw``: the sample weights, or the scalar 1.0. Coefficients of [X, 1] enter split (see
# _base.coefficients): ``b`` and ``q`` are the intercept's (None without one).
@fm.jit(static_argnames=("spec",))
def _log_lik(X, beta, b, y, no, sw, spec):
    total, bad = fam.log_lik(fm, linear(X, beta, b), _responses(y, no), *spec, sw=sw)
    return total, *bad


@fm.jit(static_argnames=("spec",))
def _log_lik_at(eta, y, no, sw, spec):
    total, bad = fam.log_lik(fm, eta, _responses(y, no), *spec, sw=sw)
    return total, *bad


@fm.jit(static_argnames=("spec",))
def _saturated_eta(y, no, spec):
    """The saturated model's linear terms, then the numbers of records outside the range."""
    family, _, link, link_power = spec
    eta, bad = fam.saturated_eta(fm, _responses(y, no), family, link, link_power)
    return eta, *[fm.sum(mask) for mask in bad]


@fm.jit(static_argnames=("spec",))
def _gradient(X, beta, b, y, no, sw, spec):
    g_y, _ = fam.dist(fm, linear(X, beta, b), _responses(y, no), *spec)
    return transposed(X, sw * g_y, b is not None)


@fm.jit(static_argnames=("spec",))
def _loss_and_gradient(X, beta, b, y, no, sw, spec):
    """[X, 1].T @ (sw * g_Y) (``transposed``'s parts), the log-likelihood sum, then the weights
    of the records outside the domain: one pass over X when fused."""
    eta = linear(X, beta, b)
    total, bad = fam.log_lik(fm, eta, _responses(y, no), *spec, sw=sw)
    g_y, _ = fam.dist(fm, eta, _responses(y, no), *spec)
    return *transposed(X, sw * g_y, b is not None), total, *bad


@fm.jit(static_argnames=("spec",))
def _hessian_times(X, beta, b, y, no, sw, p, q, spec):
    _, w = fam.dist(fm, linear(X, beta, b), _responses(y, no), *spec)
    return transposed(X, sw * w * linear(X, p, q), b is not None)


@fm.jit
def _gram_times(X, sw, p):
    return X.T @ (sw * (X @ p))


@fm.jit
def _moments(X, sw):
    """(the weighted column sums, the weighted sum of squares); ``sw``: (n, 1) or 1.0."""
    return fm.sum(sw * X, axis=0), fm.sum(sw * (X * X))


@fm.jit
def _binomial_responses(y):
    """The "no" column 1 - y, the number of responses other than 0 and 1, min(y) and max(y)."""
    return 1.0 - y, fm.sum((y != 0) * (y != 1)), fm.min(y), fm.max(y)


@fm.jit(static_argnames=("spec",))
def _mean(X, coef, intercept, spec):
    """The mean response at X (binomial: the probability of 1)."""
    family, _, link, link_power = spec
    eta = X @ coef + intercept
    if family == fam.BINOMIAL:
        return fam.binomial_probabilities(fm, eta, link, link_power)[0]
    return fm.exp(eta) if link_power == 0 else eta ** (1.0 / link_power)


def _weighted_features(X, sw) -> bool:
    """Whether a record of positive weight has a non-zero feature, for an X that has one."""
    return np.isscalar(sw) or max_row_norm(X, sw) > 0


def _responses(y, no):
    return (y,) if no is None else (y, no)


class GLM(FusedEstimatorMixin, RegressorMixin, BaseEstimator):
    """Parameters follow SystemDS ``glm`` (see DESIGN.md section 3): ``family`` (dfam/vpow),
    ``link`` and ``link_power`` (link/lpow), ``var_power`` (tweedie), ``reg``, ``fit_intercept``
    (icpt 0/1), ``tol``, ``max_iter`` (moi), ``max_inner_iter`` (mii; 0 = number of columns).
    Binomial responses are 0/1 (1 = "yes").

    ``solver``: ``"trust_region"`` (SystemDS's Fisher scoring in a trust region with inner
    conjugate gradient; the default) or ``"lbfgs"``: scipy's L-BFGS-B on the same objective
    divided by the total sample weight, each evaluation one fused pass over X for the
    log-likelihood and its gradient; ``tol`` is then its gradient tolerance and ``max_iter``
    its iteration limit, as in scikit-learn's GLMs (``reg`` = alpha * the total weight gives
    their objective).
    """

    def __init__(
        self,
        family="poisson",
        link="canonical",
        var_power=0.0,
        link_power=1.0,
        reg=0.0,
        fit_intercept=False,
        tol=1e-6,
        max_iter=200,
        max_inner_iter=0,
        solver="trust_region",
        fusion=None,
        verbose=False,
    ):
        self.family = family
        self.link = link
        self.var_power = var_power
        self.link_power = link_power
        self.reg = reg
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.max_iter = max_iter
        self.max_inner_iter = max_inner_iter
        self.solver = solver
        self.fusion = fusion
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.positive_only = self.family != "gaussian"
        return tags

    def _spec(self):
        """(dfam, var_power, link type, link power) as SystemDS numbers them."""
        if self.family == "binomial":
            family, var_power = fam.BINOMIAL, 0.0
        elif self.family == "tweedie":
            family, var_power = fam.POWER, float(self.var_power)
        elif self.family in FAMILIES:
            family, var_power = fam.POWER, FAMILIES[self.family]
        else:
            raise ValueError(f"unknown family {self.family!r}")
        if self.link == "canonical":
            if family == fam.BINOMIAL:
                return family, var_power, fam.LOGIT, 0.0
            return family, var_power, fam.POWER_LINK, 1.0 - var_power
        if self.link == "power":
            return family, var_power, fam.POWER_LINK, float(self.link_power)
        if self.link not in LINKS:
            raise ValueError(f"unknown link {self.link!r}")
        link, link_power = LINKS[self.link]
        if family == fam.POWER and link != fam.POWER_LINK:
            raise ValueError(f"link {self.link!r} needs the binomial family")
        return family, var_power, link, link_power

    @staticmethod
    def _response_columns(y, family):
        """(y, None) for power families; the binomial's (yes, no) from 0/1 responses."""
        if family != fam.BINOMIAL:
            return y, None
        no, others, low, high = _binomial_responses(y)
        if others:
            raise ValueError("the binomial family needs 0/1 responses (1 = yes)")
        if low == high:
            raise ValueError("binomial responses must contain both 0 and 1")
        return y, no

    @in_fusion_mode
    def fit(self, X, y, sample_weight=None):
        spec = self._spec()
        self._check_numbers({"max_iter": 1, "max_inner_iter": 0}, ("reg", "tol"))
        if self.solver not in SOLVERS:
            raise ValueError(f"solver must be one of {SOLVERS}, got {self.solver!r}")
        X, y = validated(self, X, y, y_numeric=True)
        sw = sample_weights(sample_weight, X)
        reg = float(self.reg)
        X = as_float_matrix(X)
        magnitude = max_abs(X)
        X, c = rescaled(X, reg, magnitude)
        lam = np.full(X.shape[1] + self.fit_intercept, reg * c * c)
        if self.fit_intercept:
            lam[-1] = 0.0
        y, no = self._response_columns(y, spec[0])
        beta = self._fit(X, y, no, sw, lam, spec, magnitude)
        d = self.n_features_in_
        self.coef_ = unscaled_coefficients(beta[:d], c, "GLM")
        self.intercept_ = float(beta[d]) if self.fit_intercept else 0.0
        return self

    def _fit(self, X, y, no, sw, lam, spec, magnitude):
        """The coefficients of [X, 1] (of X without an intercept, ``lam`` one shorter);
        ``magnitude``: X's largest |entry|."""
        family, _, link, link_power = spec
        D, d = len(lam), X.shape[1]
        max_cg = self.max_inner_iter or D
        sat_eta, *out_of_range = _saturated_eta(y, no, spec)
        if any(count > 0 for count in out_of_range):
            raise ValueError("responses are out of range for this family and link")
        total, *bad = _log_lik_at(sat_eta, y, no, sw, spec)
        saturated = fam.log_lik_value(total, bad)

        def evaluate(beta, ll=None):
            """(penalized log-likelihood, deviance) at beta; ``ll``: its log-likelihood if
            known."""
            if ll is None:
                total, *bad = _log_lik(X, *coefficients(beta, d), y, no, sw, spec)
                ll = fam.log_lik_value(total, bad)
            if not np.isfinite(ll):
                return -np.inf, np.nan
            return ll - 0.5 * float(np.sum(lam * beta**2)), 2.0 * (saturated - ll)

        if self.solver == "lbfgs":  # no trust radius: row norms only where weights hide X
            if len(lam) == d and (magnitude == 0 or not _weighted_features(X, sw)):
                return self._fit_null(D, evaluate)
            beta = self._initial_beta(X, D, sw, family, link, link_power, max_cg)
            return self._lbfgs(X, y, no, sw, lam, spec, evaluate, beta)
        row_norm = max_row_norm(X, sw, intercept=len(lam) > d)
        if row_norm == 0:
            return self._fit_null(D, evaluate)
        beta = self._initial_beta(X, D, sw, family, link, link_power, max_cg)
        delta = 0.5 * math.sqrt(D) / row_norm
        return self._trust_region(X, y, no, sw, lam, spec, evaluate, beta, delta, max_cg)

    def _lbfgs(self, X, y, no, sw, lam, spec, evaluate, beta):
        """L-BFGS-B from ``beta`` on (-loglik + penalty) / total weight."""
        d = X.shape[1]
        parts = 1 + (len(lam) > d)  # X.T @ G, and the ones column's sum
        n = total_weight(sw, X.shape[0]) or 1.0  # no weight at all: the penalty alone

        last = {}  # the latest point's log-likelihood: usually the result's (a pass fewer)

        def objective(beta):
            out = _loss_and_gradient(X, *coefficients(beta, d), y, no, sw, spec)
            ll = fam.log_lik_value(out[parts], out[parts + 1 :])
            last.update(beta=beta.copy(), ll=ll)
            if not np.isfinite(ll):  # outside the domain: the line search steps back
                return np.inf, np.zeros_like(beta)
            penalty = 0.5 * float(np.sum(lam * beta**2))
            return (penalty - ll) / n, (lam * beta - joined(out[:parts])) / n

        result = lbfgs(objective, beta, self.max_iter, self.tol)
        known = np.array_equal(result.x, last.get("beta"))
        ll, self.deviance_ = evaluate(result.x, last["ll"] if known else None)
        if not np.isfinite(ll):
            raise ValueError(
                "GLM found no coefficients with a finite (penalized) log-likelihood from its "
                "starting point: the responses are outside the model's range there"
            )
        self.n_iter_ = int(result.nit)
        if result.status == 1 and self.tol > 0:
            self._warn_unconverged(stacklevel=6)
        return result.x

    def _fit_null(self, D, evaluate):
        """No record of positive weight has a non-zero feature (and there is no intercept):
        X @ beta = 0 on them for every beta, the penalty alone decides, at beta = 0."""
        beta = np.zeros(D)
        ll, self.deviance_ = evaluate(beta)
        if not np.isfinite(ll):
            raise ValueError(
                "X is all zero and there is no intercept: the model's mean at a linear "
                "predictor of 0 is outside this family and link's domain for these responses; "
                "fit an intercept"
            )
        self.n_iter_ = 0
        return beta

    def _trust_region(self, X, y, no, sw, lam, spec, evaluate, beta, delta, max_cg):
        d = X.shape[1]
        new_beta = beta
        new_ll, new_dev = evaluate(new_beta)
        log_l, dev, log_l_defined = 0.0, 0.0, None
        predicted, reached, it, code = 0.0, False, 0, 0
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            while code == 0:
                accept = True
                new_defined = np.isfinite(new_ll)
                if it > 0:
                    accept = not log_l_defined
                    rho = np.float64(-new_ll + log_l) / np.float64(predicted)
                    if rho < 0.25 or not new_defined:
                        delta *= 0.25
                    if rho > 0.75 and new_defined and reached:
                        delta *= 2
                    if rho > 0.1 and new_defined:
                        accept = True
                if accept:
                    beta, log_l, dev, log_l_defined = new_beta, new_ll, new_dev, new_defined
                    at = coefficients(beta, d)
                    g = -joined(_gradient(X, *at, y, no, sw, spec))

                    def hessian_times(p, at=at):
                        return joined(_hessian_times(X, *at, y, no, sw, *coefficients(p, d), spec))

                z, predicted, reached = steihaug(hessian_times, g, beta, lam, delta, max_cg)
                new_beta = beta + z
                new_ll, new_dev = evaluate(new_beta)
                change = new_ll - log_l
                # <=: no change at a log-likelihood of exactly 0 is converged too
                if (not reached and np.isfinite(new_ll)
                        and (2.0 * abs(change) < self.tol * (dev + 0.1)
                             or abs(change) <= (abs(log_l) + abs(new_ll)) * 1e-14)):  # fmt: skip
                    code = 1
                it += 1
                self._log(f"iter {it}: log-likelihood {new_ll:.10g}, change {change:.4g}")
                if it == self.max_iter and code == 0:
                    code = 2
        if not log_l_defined:
            raise ValueError(
                "GLM found no coefficients with a finite (penalized) log-likelihood: the "
                "responses are outside the model's range at every X @ beta tried (e.g. a link "
                "that needs X @ beta > 0 on every record, without an intercept), or X's "
                "values are too small for the penalty"
            )
        self.n_iter_ = it
        if code == 2 and self.tol > 0:
            self._warn_unconverged(stacklevel=6)
        if np.isfinite(new_ll):
            self.deviance_ = new_dev
            return new_beta  # SystemDS returns the last candidate
        self.deviance_ = dev
        return beta  # the last candidate is outside the domain: the last accepted point

    def _initial_beta(self, X, D, sw, family, link, link_power, max_cg):
        if (family == fam.POWER and link_power == 0) or (family == fam.BINOMIAL and link >= 2):
            return np.zeros(D)
        if link == fam.POWER_LINK:
            target = math.log(0.5) if link_power == 0 else 0.5**link_power
        else:
            target = 0.5
        beta = np.zeros(D)
        if self.fit_intercept:
            beta[-1] = target
            return beta
        return self._straighten(X, sw, max_cg) * target

    @staticmethod
    def _straighten(X, sw, max_cg):
        """w with ||X @ w - 1|| small and mean(X @ w) = 1 (regularized least squares by CG; every
        sum over records weighted)."""
        col_sums, x2 = _moments(X, weight_column(sw))
        n = total_weight(sw, X.shape[0])
        lam = 1e-6 * x2 / X.shape[1]
        r = -col_sums
        z = np.zeros(X.shape[1])
        p = -r
        norm_r2 = float(r @ r)
        i = 0
        while i < max_cg and i < X.shape[1] and norm_r2 >= 1e-6 * n:
            q = _gram_times(X, sw, p) + lam * p
            alpha = norm_r2 / float(p @ q)
            z = z + alpha * p
            old, r = norm_r2, r + alpha * q
            norm_r2 = float(r @ r)
            p = -r + (norm_r2 / old) * p
            i += 1
        scale = float(col_sums @ z)
        return (n / scale) * z if scale else z  # degenerate X: start from zero

    @in_fusion_mode
    def predict(self, X):
        """The mean response (binomial: the probability of 1)."""
        check_is_fitted(self)
        X = validated(self, X, reset=False)
        return _mean(as_float_matrix(X), self.coef_, self.intercept_, self._spec())

    def score(self, X, y, sample_weight=None):
        """D^2: the fraction of deviance explained (1 - deviance / null deviance)."""
        family, var_power, _, _ = self._spec()
        mu = self.predict(X)
        if family == fam.BINOMIAL:
            return d2_log_loss_score(y, np.column_stack([1 - mu, mu]), sample_weight=sample_weight)
        return d2_tweedie_score(y, mu, sample_weight=sample_weight, power=var_power)
