"""The GLM family/link arithmetic of SystemDS's ``glm`` builtin, written against an array module
``xp``: ``fusedml`` inside the traced bodies of fitting and prediction, where the whole chain fuses
with ``X @ beta`` (``numpy`` computes the same on arrays).

Power families (``dfam=1``: variance mu**var_power, link mu**link_power, link_power 0 = log) and the
binomial (``dfam=2``, responses ``(yes, no)``) with power, logit, probit (the Abramowitz-Stegun
7.1.26 normal CDF, as SystemDS), cloglog and cauchit links. ``dist`` gives the IRLS quantities
g_Y = residual / (variance * link') and w = 1 / (variance * link'^2); ``log_lik`` the
log-likelihood up to terms independent of the coefficients, as a sum and the counts of records
outside the domain (any non-zero count makes it -inf); ``saturated_eta`` the linear terms of the
saturated model, from which the deviance is measured. Responses ``ys`` are ``(y,)`` for power
families and ``(yes, no)`` for the binomial.
"""

from __future__ import annotations

import numpy as np

POWER, BINOMIAL = 1, 2
POWER_LINK, LOGIT, PROBIT, CLOGLOG, CAUCHIT = 1, 2, 3, 4, 5
ONE_OVER_SQRT_2PI = 0.39894228040143267793994605993438


def _float(mask):
    return mask * 1.0  # numpy: bool -> 0/1 floats; fusedml comparisons already are


def _finite(xp, eta):
    return xp.where(xp.abs(eta) == np.inf, 0.0, eta)


# Abramowitz & Stegun 7.1.26: erfc(x) ~ as_erfc_polynomial(t) * exp(-x^2) for x >= 0, with
# t = 1 / (1 + AS_ERFC_P * x)
AS_ERFC_P = 0.3275911


def as_erfc_polynomial(t):
    """A&S 7.1.26's polynomial in ``t`` (numpy arrays or fusedml expressions)."""
    return t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027
                + t * 1.061405429))))  # fmt: skip


def _erfc_as(x_abs):
    """The polynomial with erfc(x / sqrt(2)) ~ p * exp(-x^2 / 2): t's constant is SystemDS's
    AS_ERFC_P / sqrt(2)."""
    return as_erfc_polynomial(1.0 / (1.0 + x_abs * 0.231641888))


def binomial_probabilities(xp, eta, link, link_power):
    """(P(yes), P(no), masks of records outside the link's domain)."""
    if link == POWER_LINK:
        if link_power == 0:
            mu, bad = xp.exp(eta), []
        elif link_power == 0.5:
            mu, bad = eta**2, []
        else:
            mu, bad = eta ** (1.0 / link_power), [eta < 0]
        return mu, 1 - mu, bad
    finite = _finite(xp, eta)
    if link == LOGIT:
        e = xp.exp(finite)
        p_yes, p_no = e / (e + 1.0), 1.0 / (e + 1.0)
    elif link == PROBIT:
        pos, neg = _float(finite >= 0), _float(finite < 0)
        tail = xp.exp(-(finite**2) / 2.0) * _erfc_as(xp.abs(finite))
        p_yes, p_no = pos + (0.5 - pos) * tail, neg + (0.5 - neg) * tail
    elif link == CLOGLOG:
        e = xp.exp(finite)
        ee = xp.exp(-e)
        small = _float((10000000 + e) == 10000000)
        p_yes, p_no = (1 - small) * (1 - ee) + small * e * (1 - e / 2), ee
    else:
        a = xp.arctan(finite) / np.pi
        p_yes, p_no = 0.5 + a, 0.5 - a
    inf_yes, inf_no = _float(eta == np.inf), _float(eta == -np.inf)
    rest = 1.0 - (inf_yes + inf_no)
    return p_yes * rest + inf_yes, p_no * rest + inf_no, []


def dist(xp, eta, ys, family, var_power, link, link_power):
    """(g_Y, w) at the linear predictor ``eta``."""
    if family == POWER:
        (y,) = ys
        if link_power == 0:
            mu = xp.exp(eta)
            mu_pow = mu ** (1 - var_power)
            return mu_pow * (y - mu), mu_pow * mu
        if link_power == 1.0:
            w = eta ** (-var_power)
            return w * (-(eta - y)), w
        mu = eta ** (1.0 / link_power)
        c1 = (1 - var_power) / link_power - 1
        c2 = (2 - var_power) / link_power - 2
        return (eta**c1) * (y - mu) / link_power, (eta**c2) / link_power**2
    yes, no = ys
    total = yes + no
    if link == POWER_LINK:
        if link_power == 0:
            v = 1 / (xp.exp(-eta) - 1)
            return yes - no * v, total * v
        v = (
            1 / (1 - eta**2)
            if link_power == 0.5
            else eta ** (-2 + 1 / link_power) / (1 - eta ** (1 / link_power))
        )
        zero = _float(yes == 0)
        v2 = (yes + zero) / (eta * (1 - zero) + zero) - zero
        return (v2 - no * v * eta) / link_power, total * v / link_power**2
    if link == LOGIT:
        p_yes, p_no, _ = binomial_probabilities(xp, eta, LOGIT, 0.0)
        return yes * p_no - no * p_yes, yes * p_no * p_yes + no * p_yes * p_no
    if link == PROBIT:
        pos = _float(eta >= 0)
        pt = _erfc_as(xp.abs(_finite(xp, eta)))
        gauss = xp.exp(-(eta**2) / 2.0)
        v1 = 0.25 * pt * (2 - gauss * pt)
        v2 = yes - total * pos + gauss * pt * total * (pos - 0.5)
        return ONE_OVER_SQRT_2PI * v2 / v1, gauss * ONE_OVER_SQRT_2PI**2 * total / v1
    if link == CLOGLOG:
        e = xp.exp(eta)
        ee = xp.exp(-e)
        small = _float((10000000 + e) == 10000000)
        ratio = (1 - small) * (1 - ee) / (e + small) + small * (1 - e / 2)
        return (total * ee - no) / ratio, ee * e * total / ratio
    p_yes, p_no, _ = binomial_probabilities(xp, eta, CAUCHIT, 0.0)
    residual = yes * p_no - no * p_yes
    variance = total * p_yes * p_no
    grad = (1 + eta**2) * np.pi
    return total * residual / (variance * grad), total**2 / (variance * grad**2)


def _power_log_lik(xp, eta, y, var_power, link_power):
    """(summands, masks outside the domain)."""
    log_zero, bad = None, []
    if var_power == 1.0 and link_power == 0:
        b, log_zero = xp.exp(eta), _float(eta == -np.inf)
        theta = xp.where(eta == -np.inf, 0.0, eta)
    elif var_power == 1.0 and link_power > 0:
        bad.append(eta < 0)
        log_zero = _float(eta == 0)
        if link_power == 1.0:
            b, theta = eta, xp.log(eta + log_zero)
        elif link_power == 0.5:
            b, theta = eta**2, 2.0 * xp.log(eta + log_zero)
        else:
            b = (eta + log_zero) ** (1.0 / link_power) - log_zero
            theta = xp.log(eta + log_zero) / link_power
    elif var_power == 1.0:
        bad.append(eta <= 0)
        b, theta = eta ** (1.0 / link_power), xp.log(eta) / link_power
    elif var_power == 2.0 and link_power == 0:
        b, theta = eta, -xp.exp(-eta)
    elif var_power == 2.0:
        bad.append(eta <= 0)
        if link_power == -1.0:
            b, theta = -xp.log(eta), -eta
        elif link_power == 1.0:
            b, theta = xp.log(eta), -1.0 / eta
        else:
            b, theta = xp.log(eta) / link_power, -(eta ** (-1.0 / link_power))
    elif link_power == 0:
        theta = xp.exp(eta * (1.0 - var_power)) / (1.0 - var_power)
        b = xp.exp(eta * (2.0 - var_power)) / (2.0 - var_power)
    else:
        theta = _power_term(eta, link_power, 1.0 - var_power, bad)
        b = _power_term(eta, link_power, 2.0 - var_power, bad)
    if log_zero is not None:
        bad.append(log_zero * xp.abs(y))
    return y * theta - b, bad


def _power_term(eta, link_power, c, bad):
    """eta**(c / link_power) / c with SystemDS's exact cases."""
    if -2 * link_power == c:
        return 1.0 / (eta**2) / c
    if -1 * link_power == c:
        return 1.0 / eta / c
    if link_power == c:
        return eta / c
    if 2 * link_power == c:
        return eta**2 / c
    bad.append(eta <= 0)
    return eta ** (c / link_power) / c


def log_lik(xp, eta, ys, family, var_power, link, link_power, sw=1.0):
    """(sum of the log-likelihood terms, [weight of the records outside the domain, ...]); each
    record's terms weighted by ``sw``."""
    if family == POWER:
        terms, bad = _power_log_lik(xp, eta, ys[0], var_power, link_power)
    else:
        p_yes, p_no, bad = binomial_probabilities(xp, eta, link, link_power)
        terms = 0.0
        for y, p in zip(ys, (p_yes, p_no), strict=True):
            nonpositive = _float(p <= 0)
            bad.append(nonpositive * xp.abs(y))
            terms = terms + y * xp.log(p * (1 - nonpositive) + nonpositive)
    return xp.sum(sw * terms), [xp.sum(sw * _float(m)) for m in bad]


def log_lik_value(total, bad_counts) -> float:
    """The log-likelihood from ``log_lik``'s parts: -inf outside the domain or when not finite."""
    total = float(total)
    if any(float(b) > 0 for b in bad_counts) or not np.isfinite(total):
        return -np.inf
    return total


def saturated_eta(xp, ys, family, link, link_power):
    """SystemDS's linear terms of the saturated model, and masks of the records whose responses
    are outside this family and link's range (where any is non-zero, it has none)."""
    if family == BINOMIAL:
        yes, no = ys
        total = yes + no
        zero_n = _float(total == 0)
        y = yes / (total + zero_n) + (0.5 - yes) * zero_n
    else:
        (y,) = ys
    if family == POWER or link == POWER_LINK:
        return _saturated_power_eta(xp, y, family, link_power)
    zero, one = _float(y <= 0), _float(y >= 1.0)
    y = y * (1.0 - zero) * (1.0 - one) + 0.5 * (zero + one)
    edge = one / (1.0 - one) - zero / (1.0 - zero)
    if link == LOGIT:
        return xp.log(y / (1.0 - y)) + edge, []
    if link == PROBIT:
        upper = _float(y > 0.5)
        below = y + (1.0 - 2.0 * y) * upper
        t = xp.sqrt(-2.0 * xp.log(below))
        approx = -t + (2.515517 + t * (0.802853 + t * 0.010328)) / (
            1.0 + t * (1.432788 + t * (0.189269 + t * 0.001308))
        )
        return approx * (1.0 - 2.0 * upper) + edge, []
    if link == CLOGLOG:
        return xp.log(-xp.log(1.0 - y)) - np.log(-np.log(0.5)) * (zero + one) + edge, []
    # cauchit: tan((y - 0.5) * pi) + edge. fusedml has no tan, and the 0/1 responses GLM takes
    # need none: each record is at an edge, where y is 0.5 by now and the term tan(0) = 0. Other
    # responses are reported out of range rather than computed wrong.
    return edge, [y != 0.5]


def _saturated_power_eta(xp, y, family, link_power):
    if link_power == 0:
        z = _float(y == 0)
        return xp.log(y + z) - z / (1.0 - z), [y < 0]
    if family == POWER and link_power == 1.0:
        return y, []
    if family == POWER and link_power == -1.0:
        return 1.0 / y, []
    if family == POWER and link_power == 0.5:
        return xp.sqrt(y), [y < 0]
    if link_power > 0:
        z = _float(y == 0)
        return (y + z) ** link_power - z, [y < 0]
    return y**link_power, [y <= 0]
