"""The GLM family/link arithmetic of SystemDS's ``glm`` builtin, on n-vectors (numpy).

Power families (``dfam=1``: variance mu**var_power, link mu**link_power, link_power 0 = log) and the
binomial (``dfam=2``, a two-column response [yes, no]) with power, logit, probit (the
Abramowitz-Stegun 7.1.26 normal CDF, as SystemDS), cloglog and cauchit links. ``dist`` gives the
IRLS quantities g_Y = residual / (variance * link') and w = 1 / (variance * link'^2); ``log_lik``
the log-likelihood up to terms independent of the coefficients (-inf when undefined).
"""

from __future__ import annotations

import numpy as np

POWER, BINOMIAL = 1, 2
POWER_LINK, LOGIT, PROBIT, CLOGLOG, CAUCHIT = 1, 2, 3, 4, 5
ONE_OVER_SQRT_2PI = 0.39894228040143267793994605993438


def _erfc_as(t_abs):
    """A&S 7.1.26 pieces: t and the polynomial p(t) with erfc(x) ~ p(t) exp(-x^2)."""
    t = 1.0 / (1.0 + t_abs * 0.231641888)
    p = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027
             + t * 1.061405429))))  # fmt: skip
    return p


def binomial_probabilities(eta, link, link_power):
    """(n, 2) probabilities of [yes, no]; None if undefined."""
    if link == POWER_LINK:
        if link_power == 0:
            mu = np.exp(eta)
        elif link_power == 0.5:
            mu = eta**2
        elif np.all(eta >= 0):
            mu = eta ** (1.0 / link_power)
        else:
            return None
        return np.column_stack([mu, 1 - mu])
    inf = np.column_stack([eta == np.inf, eta == -np.inf]).astype(float)
    finite = np.where(np.isinf(eta), 0.0, eta)
    if link == LOGIT:
        prob = np.column_stack([np.exp(finite), np.ones_like(finite)])
        prob = prob / prob.sum(axis=1, keepdims=True)
    elif link == PROBIT:
        pos_neg = np.column_stack([finite >= 0, finite < 0]).astype(float)
        tail = (np.exp(-(finite**2) / 2.0) * _erfc_as(np.abs(finite)))[:, None]
        prob = pos_neg + (0.5 - pos_neg) * tail
    elif link == CLOGLOG:
        e = np.exp(finite)
        ee = np.exp(-e)
        small = ((10000000 + e) == 10000000).astype(float)
        prob = np.column_stack([(1 - small) * (1 - ee) + small * e * (1 - e / 2), ee])
    else:
        a = np.arctan(finite)
        prob = 0.5 + np.column_stack([a, -a]) / np.pi
    return prob * (1.0 - inf.sum(axis=1, keepdims=True)) + inf


def dist(eta, Y, family, var_power, link, link_power):
    """(g_Y, w) at the linear predictor ``eta``."""
    if family == POWER:
        if link_power == 0:
            mu = np.exp(eta)
            mu_pow = mu ** (1 - var_power)
            return mu_pow * (Y - mu), mu_pow * mu
        if link_power == 1.0:
            w = eta ** (-var_power)
            return w * (-(eta - Y)), w
        mu = eta ** (1.0 / link_power)
        c1 = (1 - var_power) / link_power - 1
        c2 = (2 - var_power) / link_power - 2
        return (eta**c1) * (Y - mu) / link_power, (eta**c2) / link_power**2
    yes, no = Y[:, 0], Y[:, 1]
    total = yes + no
    if link == POWER_LINK:
        if link_power == 0:
            v = 1 / (np.exp(-eta) - 1)
            return yes - no * v, total * v
        v = (
            1 / (1 - eta**2)
            if link_power == 0.5
            else eta ** (-2 + 1 / link_power) / (1 - eta ** (1 / link_power))
        )
        zero = (yes == 0).astype(float)
        v2 = (yes + zero) / (eta * (1 - zero) + zero) - zero
        return (v2 - no * v * eta) / link_power, total * v / link_power**2
    if link == LOGIT:
        prob = binomial_probabilities(eta, LOGIT, 0.0)
        g = yes * prob[:, 1] - no * prob[:, 0]
        w = yes * prob[:, 1] * prob[:, 0] + no * prob[:, 0] * prob[:, 1]
        return g, w
    if link == PROBIT:
        finite = np.where(np.isinf(eta), 0.0, eta)
        pos = (eta >= 0).astype(float)
        pt = _erfc_as(np.abs(finite))
        gauss = np.exp(-(eta**2) / 2.0)
        v1 = 0.25 * pt * (2 - gauss * pt)
        v2 = yes - total * pos + gauss * pt * total * (pos - 0.5)
        return ONE_OVER_SQRT_2PI * v2 / v1, gauss * ONE_OVER_SQRT_2PI**2 * total / v1
    if link == CLOGLOG:
        e = np.exp(eta)
        ee = np.exp(-e)
        small = ((10000000 + e) == 10000000).astype(float)
        ratio = (1 - small) * (1 - ee) / (e + small) + small * (1 - e / 2)
        return (total * ee - no) / ratio, ee * e * total / ratio
    prob = binomial_probabilities(eta, CAUCHIT, 0.0)
    residual = yes * prob[:, 1] - no * prob[:, 0]
    variance = total * prob[:, 0] * prob[:, 1]
    grad = (1 + eta**2) * np.pi
    return total * residual / (variance * grad), total**2 / (variance * grad**2)


def _power_log_lik(eta, y, var_power, link_power):
    log_zero = np.zeros_like(eta)
    if var_power == 1.0 and link_power == 0:
        b, log_zero, theta = (
            np.exp(eta),
            (eta == -np.inf).astype(float),
            np.where(eta == -np.inf, 0.0, eta),
        )
    elif var_power == 1.0 and link_power > 0:
        if np.any(eta < 0):
            return -np.inf
        log_zero = (eta == 0).astype(float)
        if link_power == 1.0:
            b, theta = eta, np.log(eta + log_zero)
        elif link_power == 0.5:
            b, theta = eta**2, 2.0 * np.log(eta + log_zero)
        else:
            b = (eta + log_zero) ** (1.0 / link_power) - log_zero
            theta = np.log(eta + log_zero) / link_power
    elif var_power == 1.0:
        if np.any(eta <= 0):
            return -np.inf
        b, theta = eta ** (1.0 / link_power), np.log(eta) / link_power
    elif var_power == 2.0 and link_power == 0:
        b, theta = eta, -np.exp(-eta)
    elif var_power == 2.0:
        if np.any(eta <= 0):
            return -np.inf
        if link_power == -1.0:
            b, theta = -np.log(eta), -eta
        elif link_power == 1.0:
            b, theta = np.log(eta), -1.0 / eta
        else:
            b, theta = np.log(eta) / link_power, -(eta ** (-1.0 / link_power))
    elif link_power == 0:
        theta = np.exp(eta * (1.0 - var_power)) / (1.0 - var_power)
        b = np.exp(eta * (2.0 - var_power)) / (2.0 - var_power)
    else:
        theta = _power_term(eta, link_power, 1.0 - var_power)
        b = _power_term(eta, link_power, 2.0 - var_power)
        if theta is None or b is None:
            return -np.inf
    if np.sum(log_zero * np.abs(y)) > 0:
        return -np.inf
    value = float(np.sum(y * theta - b))
    return value if np.isfinite(value) else -np.inf


def _power_term(eta, link_power, c):
    """eta**(c / link_power) / c with SystemDS's exact cases."""
    if -2 * link_power == c:
        return 1.0 / (eta**2) / c
    if -1 * link_power == c:
        return 1.0 / eta / c
    if link_power == c:
        return eta / c
    if 2 * link_power == c:
        return eta**2 / c
    if np.all(eta > 0):
        return eta ** (c / link_power) / c
    return None


def log_lik(eta, Y, family, var_power, link, link_power):
    if family == POWER:
        return _power_log_lik(eta, Y, var_power, link_power)
    prob = binomial_probabilities(eta, link, link_power)
    if prob is None or np.sum((prob <= 0) * np.abs(Y)) != 0:
        return -np.inf
    value = float(np.sum(Y * np.log(prob * (1 - (prob <= 0)) + (prob <= 0))))
    return value if np.isfinite(value) else -np.inf


def saturated_eta(Y, family, link, link_power):
    """SystemDS's linear terms of the saturated model (None: out of range)."""
    with np.errstate(divide="ignore", invalid="ignore"):  # masked edge terms divide by zero
        return _saturated_eta(Y, family, link, link_power)


def _saturated_eta(Y, family, link, link_power):
    if family == BINOMIAL:
        total = Y.sum(axis=1)
        zero_n = (total == 0).astype(float)
        y = Y[:, 0] / (total + zero_n) + (0.5 - Y[:, 0]) * zero_n
    else:
        y = Y
    if family == POWER or link == POWER_LINK:
        if link_power == 0:
            if np.any(y < 0):
                return None
            z = (y == 0).astype(float)
            return np.log(y + z) - z / (1.0 - z)
        if family == POWER and link_power == 1.0:
            return y
        if family == POWER and link_power == -1.0:
            return 1.0 / y
        if family == POWER and link_power == 0.5:
            return None if np.any(y < 0) else np.sqrt(y)
        if link_power > 0:
            if np.any(y < 0):
                return None
            z = (y == 0).astype(float)
            return (y + z) ** link_power - z
        return None if np.any(y <= 0) else y**link_power
    zero, one = (y <= 0).astype(float), (y >= 1.0).astype(float)
    y = y * (1.0 - zero) * (1.0 - one) + 0.5 * (zero + one)
    edge = one / (1.0 - one) - zero / (1.0 - zero)
    if link == LOGIT:
        return np.log(y / (1.0 - y)) + edge
    if link == PROBIT:
        below = y + (1.0 - 2.0 * y) * (y > 0.5)
        t = np.sqrt(-2.0 * np.log(below))
        approx = -t + (2.515517 + t * (0.802853 + t * 0.010328)) / (
            1.0 + t * (1.432788 + t * (0.189269 + t * 0.001308))
        )
        return approx * (1.0 - 2.0 * (y > 0.5)) + edge
    if link == CLOGLOG:
        return np.log(-np.log(1.0 - y)) - np.log(-np.log(0.5)) * (zero + one) + edge
    return np.tan((y - 0.5) * np.pi) + edge
