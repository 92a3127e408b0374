"""Hand-written operators over a low-rank product ``U @ V.T`` that is never materialized: wsloss,
wsigmoid, wdivmm, wcemm and wumm. With a CSR weight/data matrix they compute ``U[i] . V[j]`` only
at its non-zeros; with a dense one at every cell (numpy's NaN rules then apply to zeros too)."""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp

from fusedml.runtime.hand._common import (
    BODY,
    UNARY_CODES,
    bounds,
    dense,
    dot,
    f,
    get,
    operand,
    partial_chunks,
    row_chunks,
    unary,
)
from fusedml.runtime.hand._launch import run


def _summed(body, chunks: int, *values) -> float:
    """The sum of ``body``'s per-chunk partial sums (in chunk order)."""
    parts = np.zeros(chunks)
    run(body, chunks, *values, parts)
    return float(np.add.reduce(parts))


# -- wsloss: sum(W * (X - U V')^2), sum((X != 0) * (X - U V')^2), sum((X - U V')^2) ------------
@numba.njit(**BODY)
def _wsloss_sparse(c, chunks, data, indices, indptr, m, X, U, V, mode, parts):
    """Over the driver's non-zeros; mode 0: driver W (weights), 1: driver X (mask X != 0),
    2: driver X, the correction (x - uv)^2 - uv^2 to a sum over all cells of (U V')^2."""
    lo, hi = bounds(c, m, chunks)
    s = 0.0
    for i in range(lo, hi):
        q = q_end = 0  # a merge cursor into a CSR X's row (sorted indices)
        if X[4]:
            q, q_end = X[3][i], X[3][i + 1]
        for p in range(indptr[i], indptr[i + 1]):
            d = data[p]
            if d == 0.0:
                continue
            j = indices[p]
            uv = dot(U, V, i, j)
            if mode == 0:
                if X[4]:
                    while q < q_end and X[2][q] < j:
                        q += 1
                    x = X[1][q] if q < q_end and X[2][q] == j else 0.0
                else:
                    x = X[0][i, j]
                r = f.sub(x, uv)
                s += f.mul(d, f.mul(r, r))
            elif mode == 1:
                r = f.sub(d, uv)
                s += f.mul(r, r)
            else:
                r = f.sub(d, uv)
                s += f.sub(f.mul(r, r), f.mul(uv, uv))
    parts[c] = s


@numba.njit(**BODY)
def _wsloss_dense(c, chunks, W, X, U, V, mode, parts):
    """Every cell; mode 0: weights W, 1: mask X != 0, 2: unweighted."""
    m, n = U.shape[0], V.shape[0]
    lo, hi = bounds(c, m, chunks)
    s = 0.0
    for i in range(lo, hi):
        for j in range(n):
            x = get(X, i, j)
            r = f.sub(x, dot(U, V, i, j))
            if mode == 0:
                s += f.mul(W[i, j], f.mul(r, r))
            elif mode == 1:
                s += f.mul(1.0 if x != 0.0 else 0.0, f.mul(r, r))
            else:
                s += f.mul(r, r)
    parts[c] = s


def wsloss(variant: str, *args):
    if variant == "post":
        w, x, u, v = args
    else:
        (x, u, v), w = args, None
    u, v = dense(u), dense(v)
    m = u.shape[0]

    def over(d, mode):  # the non-zeros of the CSR driver d
        args = (d.data, d.indices, d.indptr, m, operand(x), u, v, mode)
        return _summed(_wsloss_sparse, row_chunks(m, d.nnz), *args)

    if variant == "post" and sp.issparse(w):
        return over(w, 0)
    if variant == "post_nz" and sp.issparse(x):
        return over(x, 1)
    if variant == "none" and sp.issparse(x):
        # sum over all cells of (U V')^2 is sum((U'U) * (V'V)): O((m + n) k^2), not O(m n k)
        with np.errstate(all="ignore"):
            total = float(np.sum((u.T @ u) * (v.T @ v)))
        total += over(x, 2)
        if np.isfinite(total):
            return total
        # a non-finite factor or an overflow inside the expansion (0 * inf): the cell-by-cell
        # sum decides
    mode = {"post": 0, "post_nz": 1, "none": 2}[variant]
    weights = dense(w) if mode == 0 else np.zeros((0, 0))
    return _summed(_wsloss_dense, row_chunks(m, m * v.shape[0]), weights, operand(x), u, v, mode)


# -- wsigmoid: W * sigmoid(+-U V'), W * log(sigmoid(+-U V')) ----------------------------------
@numba.njit(**BODY)
def _wsigmoid(c, chunks, W, data, indices, indptr, is_csr, U, V, minus, log, out):
    m, n = U.shape[0], V.shape[0]
    lo, hi = bounds(c, m, chunks)
    for i in range(lo, hi):
        if is_csr:
            for p in range(indptr[i], indptr[i + 1]):
                w = data[p]
                if w == 0.0:
                    out[p] = 0.0
                    continue
                uv = dot(U, V, i, indices[p])
                g = f.sigmoid(f.neg(uv) if minus else uv)
                out[p] = f.mul(w, f.log(g) if log else g)
        else:
            for j in range(n):
                uv = dot(U, V, i, j)
                g = f.sigmoid(f.neg(uv) if minus else uv)
                out[i * n + j] = f.mul(W[i, j], f.log(g) if log else g)


def wsigmoid(variant: str, w, u, v):
    minus, log = variant.endswith("_minus"), variant.startswith("log")
    values, data, indices, indptr, is_csr = operand(w)
    u, v = dense(u), dense(v)
    out = np.empty(data.size if is_csr else u.shape[0] * v.shape[0])
    run(
        _wsigmoid,
        row_chunks(u.shape[0], out.size),
        values,
        data,
        indices,
        indptr,
        is_csr,
        u,
        v,
        minus,
        log,
        out,
    )
    if is_csr:
        return sp.csr_array((out, w.indices, w.indptr), shape=w.shape)
    return out.reshape(w.shape)


# -- wdivmm: (W * U V') @ V, (W / U V') @ V and the left products with U ------------------------
@numba.njit(**BODY)
def _wdivmm(c, chunks, W, data, indices, indptr, is_csr, U, V, div, left, minus, X, parts, right):
    m, n, k = U.shape[0], V.shape[0], U.shape[1]
    lo, hi = bounds(c, m, chunks)
    for i in range(lo, hi):
        if is_csr:
            start, end = indptr[i], indptr[i + 1]
        else:
            start, end = 0, n
        for p in range(start, end):
            if is_csr:
                w = data[p]
                j = indices[p]
                if w == 0.0:
                    continue
            else:
                w = W[i, p]
                j = p
            uv = dot(U, V, i, j)
            if minus:
                t = f.mul(w, f.sub(uv, get(X, i, j)))
            else:
                t = f.div(w, uv) if div else f.mul(w, uv)
            if is_csr and t == 0.0:
                continue  # a zero of the sparse intermediate annihilates in the product
            if left:
                for r in range(k):
                    parts[c, j, r] += f.mul(t, U[i, r])
            else:
                for r in range(k):
                    right[i, r] += f.mul(t, V[j, r])


def wdivmm(variant: str, w, u, v, x=None):
    """Variants ``{mult,div,mult_minus}_{right,left,left_t}``; ``mult_minus`` is
    ``(W * (U V' - X))`` times the other factor."""
    div, left, minus = variant.startswith("div"), "_left" in variant, "_minus" in variant
    u, v = dense(u), dense(v)
    (m, k), n = u.shape, v.shape[0]
    values, data, indices, indptr, is_csr = operand(w)
    chunks = partial_chunks(n * k) if left else row_chunks(m, w.nnz if is_csr else m * n)
    x_operand = operand(x if minus else np.zeros((0, 0)))
    parts = np.zeros((chunks, n, k) if left else (1, 0, k))
    right = np.zeros((0 if left else m, k))
    run(_wdivmm, chunks, values, data, indices, indptr, is_csr, u, v, div, left, minus, x_operand,
        parts, right)  # fmt: skip
    if not left:
        return right
    out = np.add.reduce(parts, axis=0)  # in chunk order
    return np.ascontiguousarray(out.T) if variant.endswith("_left_t") else out


# -- wcemm: sum(X * log(U V' + eps)) ----------------------------------------------------------
@numba.njit(**BODY)
def _wcemm(c, chunks, X, data, indices, indptr, is_csr, U, V, eps, parts):
    m, n = U.shape[0], V.shape[0]
    lo, hi = bounds(c, m, chunks)
    s = 0.0
    for i in range(lo, hi):
        if is_csr:
            for p in range(indptr[i], indptr[i + 1]):
                x = data[p]
                if x != 0.0:
                    s += f.mul(x, f.log(f.add(dot(U, V, i, indices[p]), eps)))
        else:
            for j in range(n):
                s += f.mul(X[i, j], f.log(f.add(dot(U, V, i, j), eps)))
    parts[c] = s


def wcemm(variant: str, x, u, v, eps=0.0):
    # log(uv + 0.0) == log(uv) bit for bit, so "basic" is "eps" with eps = 0
    values, data, indices, indptr, is_csr = operand(x)
    u, v = dense(u), dense(v)
    chunks = row_chunks(u.shape[0], data.size if is_csr else u.shape[0] * v.shape[0])
    return _summed(_wcemm, chunks, values, data, indices, indptr, is_csr, u, v, float(eps))


# -- wumm: X * f(U V'), X / f(U V') -------------------------------------------------------------
@numba.njit(**BODY)
def _wumm(c, chunks, X, data, indices, indptr, is_csr, U, V, code, div, out):
    m, n = U.shape[0], V.shape[0]
    lo, hi = bounds(c, m, chunks)
    for i in range(lo, hi):
        if is_csr:
            for p in range(indptr[i], indptr[i + 1]):
                x = data[p]
                if x == 0.0:
                    out[p] = 0.0
                    continue
                g = unary(code, dot(U, V, i, indices[p]))
                out[p] = f.div(x, g) if div else f.mul(x, g)
        else:
            for j in range(n):
                g = unary(code, dot(U, V, i, j))
                out[i * n + j] = f.div(X[i, j], g) if div else f.mul(X[i, j], g)


def wumm(variant: str, x, u, v):
    kind, fn = variant.split("_", 1)
    values, data, indices, indptr, is_csr = operand(x)
    u, v = dense(u), dense(v)
    out = np.empty(data.size if is_csr else u.shape[0] * v.shape[0])
    chunks = row_chunks(u.shape[0], out.size)
    run(_wumm, chunks, values, data, indices, indptr, is_csr, u, v, UNARY_CODES[fn],
        kind == "div", out)  # fmt: skip
    if is_csr:
        return sp.csr_array((out, x.indices, x.indptr), shape=x.shape)
    return out.reshape(x.shape)
