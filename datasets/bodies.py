"""Iteration bodies of the paper's algorithms (reference/paper.md section 5) as ``fm.jit``
functions, with data makers: the optimizer's realistic workloads for tests and benchmarks."""

from __future__ import annotations

import math

import numpy as np
from fusedml.algorithms._glm_family import AS_ERFC_P, as_erfc_polynomial
from fusedml.datasets.generators import sparse_matrix

import fusedml as fm


def glm_binomial_probit_step(X, y, beta, p, lam):
    """One Fisher-scoring iteration of a binomial-probit GLM: log-likelihood, gradient and one
    Hessian-vector product of the inner CG (glm_dist's long cellwise chain, then mmchains)."""
    eta = X @ beta
    z = eta / math.sqrt(2.0)
    t = 1.0 / (1.0 + AS_ERFC_P * fm.abs(z))
    erf_abs = 1.0 - as_erfc_polynomial(t) * fm.exp(-z * z)  # Abramowitz & Stegun 7.1.26
    cdf = 0.5 * (1.0 + fm.sign(z) * erf_abs)  # Phi(eta)
    pdf = fm.exp(-0.5 * eta * eta) / math.sqrt(2.0 * math.pi)  # phi(eta)
    var = cdf * (1.0 - cdf)
    g_y = (y - cdf) * pdf / var
    w = pdf * pdf / var
    loglik = fm.sum(y * fm.log(cdf) + (1.0 - y) * fm.log(1.0 - cdf))
    grad = lam * beta - X.T @ g_y
    hess_p = X.T @ (w * (X @ p)) + lam * p
    return loglik, grad, hess_p


def mlogreg_step(X, Y, B, V, lam):
    """One trust-region Newton iteration of multinomial logistic regression (K non-baseline
    classes): objective, gradient and the inner CG's Hessian-vector product."""
    LT = X @ B
    shift = fm.maximum(fm.max(LT, axis=1, keepdims=True), 0.0)  # the baseline's logit is 0
    E = fm.exp(LT - shift)
    denom = fm.sum(E, axis=1, keepdims=True) + fm.exp(-shift)
    P = E / denom
    obj = fm.sum(fm.log(denom) + shift) - fm.sum(Y * LT) + 0.5 * lam * fm.sum(B * B)
    grad = X.T @ (P - Y) + lam * B
    Q = P * (X @ V)
    hess_v = X.T @ (Q - P * fm.sum(Q, axis=1, keepdims=True)) + lam * V
    return obj, grad, hess_v


def l2svm_step(X, y, w, Xd, step, lam):
    """One L2SVM iteration: a Newton step's line-search sums over the rows (MAgg), then the
    objective and the gradient at the new weights (a Row operator, mmchain-like)."""
    Xw = X @ w
    out = 1.0 - y * (Xw + step * Xd)
    sv = out > 0
    out = out * sv
    g = -fm.sum(out * y * Xd)
    h = fm.sum(Xd * sv * Xd)
    margin = fm.maximum(1.0 - y * Xw, 0.0)
    obj = 0.5 * fm.sum(margin * margin) + 0.5 * lam * fm.sum(w * w)
    grad = X.T @ (margin * y) - lam * w
    return g, h, obj, grad


def kmeans_step(X, C):
    """One Lloyd iteration: distances to the centroids, the nearest one per row (ties shared),
    the new centroids' sums and counts."""
    D = -2.0 * (X @ C.T) + fm.sum(C * C, axis=1)
    nearest = fm.min(D, axis=1, keepdims=True) >= D
    P = nearest / fm.sum(nearest, axis=1, keepdims=True)
    return P.T @ X, fm.sum(P, axis=0), fm.sum(fm.min(D, axis=1))


def alscg_step(X, U, V, S, lam):
    """One ALS-CG half step for U: the gradient over the observed ratings and one CG
    direction's Hessian product (sparsity-exploiting Outer products)."""
    W = X != 0
    G = (W * (U @ V.T - X)) @ V + lam * U
    HS = (W * (S @ V.T)) @ V + lam * S
    return G, HS, fm.sum(S * HS)


def l2svm_data(rows: int, cols: int = 10, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((rows, cols))
    y = np.where(rng.random(rows) < 0.5, 1.0, -1.0)
    return X, y, rng.standard_normal(cols) * 0.1, X @ rng.standard_normal(cols), 0.5, 1e-3


def kmeans_data(rows: int, cols: int = 10, k: int = 5, seed: int = 0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((rows, cols)), rng.standard_normal((k, cols))


def alscg_data(rows: int, cols: int = 1_000, rank: int = 10, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = sparse_matrix(rows, cols, 0.01, seed)
    factors = [rng.standard_normal(shape) for shape in ((rows, rank), (cols, rank), (rows, rank))]
    return X, *factors, 1e-3


def glm_data(rows: int, cols: int = 10, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((rows, cols))
    y = (rng.random(rows) < 0.5).astype(float)
    return X, y, rng.standard_normal(cols) * 0.1, rng.standard_normal(cols), 1e-3


def mlogreg_data(rows: int, cols: int = 10, classes: int = 3, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((rows, cols))
    labels = rng.integers(0, classes + 1, rows)
    Y = (labels[:, None] == np.arange(classes)).astype(float)
    B = rng.standard_normal((cols, classes)) * 0.1
    V = rng.standard_normal((cols, classes))
    return X, Y, B, V, 1e-3


# the optimizer's workloads: search spaces worth pruning (8+ interesting points)
BODIES = {
    "glm_binomial_probit": (glm_binomial_probit_step, glm_data),
    "mlogreg": (mlogreg_step, mlogreg_data),
}
# every algorithm's iteration body (``fusedml explain`` prints their plans)
ITERATION_BODIES = {
    **BODIES,
    "l2svm": (l2svm_step, l2svm_data),
    "kmeans": (kmeans_step, kmeans_data),
    "alscg": (alscg_step, alscg_data),
}
