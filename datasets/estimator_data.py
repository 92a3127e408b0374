"""Benchmark data for the estimators: a dense 1M x 10 and a sparse 200k x 1000 (1 %) design with
labels for each estimator, and a Netflix-like ratings matrix (seeded, generated, scalable)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from fusedml.datasets.generators import dense_matrix, sparse_matrix

DESIGNS = {"dense": (1_000_000, 10, 1.0), "sparse": (200_000, 1_000, 0.01)}
RATINGS = (480_189 // 40, 17_770, 0.012)  # Netflix's users / 40, its movies, ~its density


def design(fmt: str, scale: float = 1.0, seed: int = 0):
    """X and a linear predictor eta (standardized) for it."""
    rows, cols, density = DESIGNS[fmt]
    rows = max(int(rows * scale), 10)
    X = (
        sparse_matrix(rows, cols, density, seed)
        if fmt == "sparse"
        else dense_matrix(rows, cols, seed)
    )
    rng = np.random.default_rng(seed + 1)
    eta = np.asarray(X @ rng.standard_normal(cols)).ravel()
    eta = (eta - eta.mean()) / (eta.std() or 1.0)
    return X, eta


def labels(kind: str, eta: np.ndarray, seed: int = 0) -> np.ndarray | None:
    rng = np.random.default_rng(seed + 2)
    n = len(eta)
    if kind == "binary":
        return np.where(eta + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
    if kind == "yes_no":  # the binomial GLM's 0/1 responses
        return np.where(eta + rng.standard_normal(n) > 0, 1.0, 0.0)
    if kind == "multiclass":
        scores = np.column_stack([eta * s for s in (1.5, -1.0, 0.5)]) + rng.gumbel(size=(n, 3))
        return 1.0 + np.argmax(scores, axis=1)
    if kind == "counts":
        return rng.poisson(np.exp(0.5 + 0.5 * eta)).astype(np.float64)
    return None


def ratings(scale: float = 1.0, seed: int = 0, rank: int = 5) -> sp.csr_array:
    """Ratings 1..5 from a rank-``rank`` model plus noise at uniform positions (zeros missing)."""
    users, items, density = RATINGS
    users = max(int(users * scale), 10)
    R = sparse_matrix(users, items, density, seed)
    rng = np.random.default_rng(seed + 3)
    U = rng.standard_normal((users, rank)) / np.sqrt(rank)
    V = rng.standard_normal((items, rank)) / np.sqrt(rank)
    rows = np.repeat(np.arange(users), np.diff(R.indptr))
    values = 3 + 1.2 * np.sum(U[rows] * V[R.indices], axis=1) + 0.5 * rng.standard_normal(R.nnz)
    R.data = np.clip(np.round(values), 1, 5)
    return R
