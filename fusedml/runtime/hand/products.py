"""Hand-written matrix products: mmchain (``X.T @ (X @ v)``, ``X.T @ (w * (X @ v))``,
``X.T @ ((X @ v) - y)``: one pass over X, each row's ``x_i . v`` folded straight back into
``x_i * q_i``) and tsmm (``X.T @ X`` / ``X @ X.T``: BLAS syrk for dense X, which computes one
triangle, and a triangle-only accumulation over each CSR row's non-zeros)."""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp
from scipy.linalg import blas

from fusedml.runtime.hand._common import BODY, bounds, column, dense, f, partial_chunks
from fusedml.runtime.hand._launch import run

MMCHAIN = {"XtXv": 0, "XtwXv": 1, "XtXv-y": 2}


@numba.njit(**BODY)
def _mmchain_dense(c, chunks, X, v, w, y, variant, parts):
    m, n = X.shape
    lo, hi = bounds(c, m, chunks)
    acc = parts[c]
    for i in range(lo, hi):
        q = 0.0
        for j in range(n):
            q += f.mul(X[i, j], v[j])
        if variant == 1:
            q = f.mul(w[i], q)
        elif variant == 2:
            q = f.sub(q, y[i])
        for j in range(n):
            acc[j] += f.mul(X[i, j], q)


@numba.njit(**BODY)
def _mmchain_sparse(c, chunks, data, indices, indptr, m, v, w, y, variant, parts):
    lo, hi = bounds(c, m, chunks)
    acc = parts[c]
    for i in range(lo, hi):
        q = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            if data[p] != 0.0:  # CSR zeros annihilate (also against inf in v)
                q += f.mul(data[p], v[indices[p]])
        if variant == 1:
            q = f.mul(w[i], q)
        elif variant == 2:
            q = f.sub(q, y[i])
        for p in range(indptr[i], indptr[i + 1]):
            if data[p] != 0.0:
                acc[indices[p]] += f.mul(data[p], q)


def mmchain(variant: str, x, v, third=None):
    code = MMCHAIN[variant]
    m, n = x.shape
    v = column(v)
    w = column(third) if code == 1 else np.zeros(0)
    y = column(third) if code == 2 else np.zeros(0)
    chunks = partial_chunks(n)
    parts = np.zeros((chunks, n))
    if sp.issparse(x):
        run(_mmchain_sparse, chunks, x.data, x.indices, x.indptr, m, v, w, y, code, parts)
    else:
        run(_mmchain_dense, chunks, dense(x), v, w, y, code, parts)
    return np.add.reduce(parts, axis=0).reshape(n, 1)  # in chunk order


@numba.njit(**BODY)
def _tsmm_sparse(c, chunks, data, indices, indptr, m, parts):
    lo, hi = bounds(c, m, chunks)
    acc = parts[c]
    for i in range(lo, hi):
        start, end = indptr[i], indptr[i + 1]
        for p in range(start, end):
            a = data[p]
            if a == 0.0:
                continue
            ja = indices[p]
            for q in range(p, end):  # sorted indices: the upper triangle only
                if data[q] != 0.0:
                    acc[ja, indices[q]] += f.mul(a, data[q])


def tsmm(variant: str, x):
    """``X.T @ X`` (left) or ``X @ X.T`` (right)."""
    if sp.issparse(x):
        if variant == "right":
            x = x.T.tocsr()
        m, n = x.shape
        chunks = partial_chunks(n * n)
        parts = np.zeros((chunks, n, n))
        run(_tsmm_sparse, chunks, x.data, x.indices, x.indptr, m, parts)
        out = np.add.reduce(parts, axis=0)  # in chunk order
        lower = np.tril_indices(n, -1)
        out[lower] = out.T[lower]
        return sp.csr_array(out)
    x = dense(x)
    size = x.shape[1] if variant == "left" else x.shape[0]
    if x.size == 0:
        return np.zeros((size, size))
    # syrk(a) = a @ a.T; x.T is x's F-ordered view, so neither call copies x
    upper = blas.dsyrk(1.0, x.T, trans=0 if variant == "left" else 1)
    return np.triu(upper) + np.triu(upper, 1).T
