"""Seeded synthetic matrices (numpy ``default_rng``), dense or CSR."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def dense_matrix(rows: int, cols: int, seed: int = 0, low: float = -1.0, high: float = 1.0):
    rng = np.random.default_rng(seed)
    return rng.uniform(low, high, size=(rows, cols))


def sparse_matrix(
    rows: int, cols: int, density: float, seed: int = 0, low: float = 0.1, high: float = 2.1
) -> sp.csr_array:
    """CSR with ``round(density * rows * cols)`` non-zeros at uniform positions."""
    rng = np.random.default_rng(seed)
    nnz = round(density * rows * cols)
    keys = rng.choice(rows * cols, size=nnz, replace=False) if nnz else np.zeros(0, np.int64)
    r, c = np.divmod(np.sort(keys), cols)
    values = rng.uniform(low, high, size=nnz)
    out = sp.csr_array((values, (r, c)), shape=(rows, cols))
    if nnz < 2**31 and rows < 2**31 and cols < 2**31:  # scipy's (and sklearn's) usual indices
        out.indices = out.indices.astype(np.int32)
        out.indptr = out.indptr.astype(np.int32)
    return out


def coded_matrix(rows: int, cols: int, seed: int = 0, max_distinct: int = 1000) -> np.ndarray:
    """Dense matrix whose columns each hold few distinct values (as integer-coded tables do, so
    it compresses): column j draws from its own dictionary of 2..max_distinct values in (-1, 1)
    (log-uniform size) with Zipf-skewed frequencies."""
    rng = np.random.default_rng(seed)
    out = np.empty((rows, cols))
    for j in range(cols):
        distinct = int(np.exp(rng.uniform(np.log(2), np.log(max_distinct))))
        odds = 1.0 / np.arange(1, distinct + 1)
        codes = rng.choice(distinct, size=rows, p=odds / odds.sum())
        out[:, j] = rng.uniform(-1.0, 1.0, distinct)[codes]
    return out
