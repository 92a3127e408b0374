"""Hand-written cellwise operators: tak+* (sum(X*Y*Z) and its column sums), uasqk+ (sum of
squares, full/row/col), axpy (X +- s*Y), 1-* (1 - X*Y), sprop (X*(1-X)) and sigmoid."""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp
from numba import prange

from fusedml.runtime.hand._common import (
    CHUNKS,
    INLINE,
    JIT,
    annihilates,
    bounds,
    dense,
    f,
    get,
    operand,
    partial_chunks,
)


# Dense operands of one shape are C-contiguous here, so full aggregates and elementwise results
# run over the flat arrays: a loop over rows of an (n, 1) column would not vectorize. Each chunk
# loops over slices from index 0: with `range(lo, hi)` numba must allow negative indices and the
# loop stays scalar (3-4x slower on 1M elements).
@numba.njit(**JIT)
def _flat_sum_product(x, y, z):
    parts = np.zeros(CHUNKS)
    for c in prange(CHUNKS):
        lo, hi = bounds(c, x.size, CHUNKS)
        xs, ys, zs = x[lo:hi], y[lo:hi], z[lo:hi]
        s = 0.0
        for p in range(xs.size):
            s += f.mul(f.mul(xs[p], ys[p]), zs[p])
        parts[c] = s
    return parts.sum()


@numba.njit(**JIT)
def _flat_axpy(x, y, s, sign):
    out = np.empty_like(x)
    f.huge_pages(out)
    for c in prange(CHUNKS):
        lo, hi = bounds(c, x.size, CHUNKS)
        xs, ys, os = x[lo:hi], y[lo:hi], out[lo:hi]
        for p in range(xs.size):
            os[p] = f.add(xs[p], f.mul(sign, f.mul(s, ys[p])))
    return out


@numba.njit(**JIT)
def _flat_one_minus(x, y):
    out = np.empty_like(x)
    f.huge_pages(out)
    for c in prange(CHUNKS):
        lo, hi = bounds(c, x.size, CHUNKS)
        xs, ys, os = x[lo:hi], y[lo:hi], out[lo:hi]
        for p in range(xs.size):
            os[p] = f.sub(1.0, f.mul(xs[p], ys[p]))
    return out


@numba.njit(**JIT)
def _flat_sigmoid(x):
    out = np.empty_like(x)
    f.huge_pages(out)
    for c in prange(CHUNKS):
        lo, hi = bounds(c, x.size, CHUNKS)
        xs, os = x[lo:hi], out[lo:hi]
        for p in range(xs.size):
            os[p] = f.sigmoid(xs[p])
    return out


def _flat(value) -> np.ndarray:
    return dense(value).reshape(-1)


# -- tak+* ------------------------------------------------------------------------------------
@numba.njit(**JIT)
def _tak_dense(X, Y, Z, chunks, by_column):
    m, n = X.shape
    parts = np.zeros((chunks, n if by_column else 1))
    for c in prange(chunks):
        lo, hi = bounds(c, m, chunks)
        acc = parts[c]
        if by_column:
            for i in range(lo, hi):
                for j in range(n):
                    acc[j] += f.mul(f.mul(X[i, j], Y[i, j]), Z[i, j])
        else:
            s = 0.0
            for i in range(lo, hi):
                for j in range(n):
                    s += f.mul(f.mul(X[i, j], Y[i, j]), Z[i, j])
            acc[0] = s
    out = np.zeros(parts.shape[1])
    for c in range(chunks):
        out += parts[c]
    return out


@numba.njit(**INLINE)
def _read(o, pos, driver, d, i, j):
    return d if pos == driver else get(o, i, j)


@numba.njit(**JIT)
def _tak_sparse(data, indices, indptr, driver, m, n, X, Y, Z, chunks, by_column):
    """(X * Y) * Z over the non-zeros of one CSR operand (``driver``: 0, 1, 2). The reference's
    rule holds for the intermediate too: where X * Y is CSR, its zeros annihilate Z's inf/NaN."""
    xy_csr = X[4] or Y[4]
    parts = np.zeros((chunks, n if by_column else 1))
    for c in prange(chunks):
        lo, hi = bounds(c, m, chunks)
        acc = parts[c]
        s = 0.0
        for i in range(lo, hi):
            for p in range(indptr[i], indptr[i + 1]):
                d = data[p]
                if d == 0.0:
                    continue
                j = indices[p]
                x = _read(X, 0, driver, d, i, j)
                y = _read(Y, 1, driver, d, i, j)
                if annihilates(X, x) or annihilates(Y, y):
                    continue
                t = f.mul(x, y)
                z = _read(Z, 2, driver, d, i, j)
                if (xy_csr and t == 0.0) or annihilates(Z, z):
                    continue
                if by_column:
                    acc[j] += f.mul(t, z)
                else:
                    s += f.mul(t, z)
        if not by_column:
            acc[0] = s
    out = np.zeros(parts.shape[1])
    for c in range(chunks):
        out += parts[c]
    return out


def tak(variant: str, x, y, z):
    by_column = variant == "col"
    m, n = x.shape
    chunks = partial_chunks(n) if by_column else CHUNKS
    values = (x, y, z)
    sparse = [k for k in range(3) if sp.issparse(values[k])]
    if sparse:
        driver = min(sparse, key=lambda k: values[k].nnz)  # the sparsest drives
        d = values[driver]
        ops = [operand(v) for v in values]
        out = _tak_sparse(d.data, d.indices, d.indptr, driver, m, n, *ops, chunks, by_column)
    else:
        if not by_column:
            return float(_flat_sum_product(_flat(x), _flat(y), _flat(z)))
        out = _tak_dense(dense(x), dense(y), dense(z), chunks, by_column)
    return out.reshape(1, n) if by_column else float(out[0])


# -- uasqk+ -----------------------------------------------------------------------------------
@numba.njit(**JIT)
def _sumsq_dense(X, axis, chunks):
    m, n = X.shape
    width = 1 if axis < 0 else n
    parts = np.zeros((chunks, width))
    rows = np.zeros(m)
    for c in prange(chunks):
        lo, hi = bounds(c, m, chunks)
        acc = parts[c]
        s = 0.0
        for i in range(lo, hi):
            r = 0.0
            for j in range(n):
                v = f.mul(X[i, j], X[i, j])
                if axis == 0:
                    acc[j] += v
                else:
                    r += v
            rows[i] = r
            s += r
        if axis < 0:
            acc[0] = s
    out = np.zeros(width)
    for c in range(chunks):
        out += parts[c]
    return out, rows


@numba.njit(**JIT)
def _sumsq_sparse(data, indices, indptr, m, n, axis, chunks):
    width = 1 if axis < 0 else n
    parts = np.zeros((chunks, width))
    rows = np.zeros(m)
    for c in prange(chunks):
        lo, hi = bounds(c, m, chunks)
        acc = parts[c]
        s = 0.0
        for i in range(lo, hi):
            r = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                v = f.mul(data[p], data[p])
                if axis == 0:
                    acc[indices[p]] += v
                else:
                    r += v
            rows[i] = r
            s += r
        if axis < 0:
            acc[0] = s
    out = np.zeros(width)
    for c in range(chunks):
        out += parts[c]
    return out, rows


def sumsq(variant: str, x):
    axis = {"full": -1, "col": 0, "row": 1}[variant]
    m, n = x.shape
    chunks = partial_chunks(n) if axis == 0 else CHUNKS
    if sp.issparse(x):
        out, rows = _sumsq_sparse(x.data, x.indices, x.indptr, m, n, axis, chunks)
    else:
        out, rows = _sumsq_dense(dense(x), axis, chunks)
    if axis == 1:
        return rows.reshape(m, 1)
    return out.reshape(1, n) if axis == 0 else float(out[0])


# -- axpy -------------------------------------------------------------------------------------
@numba.njit(**JIT)
def _axpy(X, Y, s, sign, ydata, yindices, yindptr, xdata, xindices, xindptr, mode):
    """mode 1: Y CSR (X dense); 2: X CSR (Y dense)."""
    m, n = X.shape if mode != 2 else Y.shape
    out = np.empty((m, n))
    f.huge_pages(out)
    for c in prange(CHUNKS):
        lo, hi = bounds(c, m, CHUNKS)
        for i in range(lo, hi):
            if mode == 1:
                for j in range(n):
                    out[i, j] = X[i, j]
                for p in range(yindptr[i], yindptr[i + 1]):
                    if ydata[p] != 0.0:
                        j = yindices[p]
                        out[i, j] = f.add(X[i, j], f.mul(sign, f.mul(s, ydata[p])))
            else:
                for j in range(n):
                    out[i, j] = f.add(0.0, f.mul(sign, f.mul(s, Y[i, j])))
                for p in range(xindptr[i], xindptr[i + 1]):
                    j = xindices[p]
                    out[i, j] = f.add(xdata[p], f.mul(sign, f.mul(s, Y[i, j])))
    return out


def axpy(variant: str, x, s, y):
    sign = 1.0 if variant == "plus" else -1.0
    e2, e1, ei, ep = np.zeros((0, 0)), np.zeros(0), np.zeros(0, np.int32), np.zeros(1, np.int32)
    if sp.issparse(y):
        return _axpy(dense(x), e2, float(s), sign, y.data, y.indices, y.indptr, e1, ei, ep, 1)
    if sp.issparse(x):
        return _axpy(e2, dense(y), float(s), sign, e1, ei, ep, x.data, x.indices, x.indptr, 2)
    return _flat_axpy(_flat(x), _flat(y), float(s), sign).reshape(x.shape)


# -- 1-* --------------------------------------------------------------------------------------
@numba.njit(**JIT)
def _one_minus_sparse(data, indices, indptr, m, n, other):
    out = np.empty((m, n))
    f.huge_pages(out)
    for c in prange(CHUNKS):
        lo, hi = bounds(c, m, CHUNKS)
        for i in range(lo, hi):
            out[i, :] = 1.0
            for p in range(indptr[i], indptr[i + 1]):
                d = data[p]
                if d == 0.0:
                    continue
                j = indices[p]
                o = get(other, i, j)
                if not annihilates(other, o):
                    out[i, j] = f.sub(1.0, f.mul(d, o))
    return out


def one_minus_product(variant: str, x, y):
    if sp.issparse(x) or sp.issparse(y):
        d, o = (x, y) if sp.issparse(x) else (y, x)
        return _one_minus_sparse(d.data, d.indices, d.indptr, *d.shape, operand(o))
    return _flat_one_minus(_flat(x), _flat(y)).reshape(x.shape)


# -- sprop and sigmoid ------------------------------------------------------------------------
@numba.njit(**JIT)
def _sprop_values(v):
    out = np.empty_like(v)
    f.huge_pages(out)
    for c in prange(CHUNKS):
        lo, hi = bounds(c, v.size, CHUNKS)
        vs, os = v[lo:hi], out[lo:hi]
        for p in range(vs.size):
            x = vs[p]
            os[p] = 0.0 if x == 0.0 else f.mul(x, f.sub(1.0, x))
    return out


def sprop(variant: str, x):
    if sp.issparse(x):
        return sp.csr_array((_sprop_values(x.data), x.indices, x.indptr), shape=x.shape)
    return _sprop_values(_flat(x)).reshape(x.shape)  # x*(1-x) is 0 at 0 anyway


@numba.njit(**JIT)
def _sigmoid_csr(data, indices, indptr, m, n):
    out = np.empty((m, n))
    f.huge_pages(out)
    for c in prange(CHUNKS):
        lo, hi = bounds(c, m, CHUNKS)
        for i in range(lo, hi):
            out[i, :] = 0.5
            for p in range(indptr[i], indptr[i + 1]):
                out[i, indices[p]] = f.sigmoid(data[p])
    return out


def sigmoid_op(variant: str, x):
    if sp.issparse(x):
        return _sigmoid_csr(x.data, x.indices, x.indptr, *x.shape)
    return _flat_sigmoid(_flat(x)).reshape(x.shape)
