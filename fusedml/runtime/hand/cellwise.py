"""Hand-written cellwise operators: tak+* (sum(X*Y*Z) and its column sums), uasqk+ (sum of
squares, full/row/col), axpy (X +- s*Y), 1-* (1 - X*Y), sprop (X*(1-X)) and sigmoid."""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp

from fusedml.runtime.hand._common import (
    BODY,
    EMPTY1,
    EMPTY2,
    EMPTY_INDICES,
    EMPTY_INDPTR,
    annihilates,
    bounds,
    dense,
    f,
    get,
    merged,
    operand,
    partial_chunks,
    row_chunks,
    row_start,
)
from fusedml.runtime.hand._launch import run


# Dense operands of one shape are C-contiguous here, so full aggregates and elementwise results
# run over the flat arrays: a loop over rows of an (n, 1) column would not vectorize. Each chunk
# loops over slices from index 0: with `range(lo, hi)` numba must allow negative indices and the
# loop stays scalar (3-4x slower on 1M elements).
@numba.njit(**BODY)
def _flat_sum_product(c, chunks, x, y, z, parts):
    lo, hi = bounds(c, x.size, chunks)
    xs, ys, zs = x[lo:hi], y[lo:hi], z[lo:hi]
    s = 0.0
    for p in range(xs.size):
        s += f.mul(f.mul(xs[p], ys[p]), zs[p])
    parts[c] = s


@numba.njit(**BODY)
def _flat_axpy(c, chunks, x, y, s, sign, out):
    lo, hi = bounds(c, x.size, chunks)
    xs, ys, os = x[lo:hi], y[lo:hi], out[lo:hi]
    for p in range(xs.size):
        os[p] = f.add(xs[p], f.mul(sign, f.mul(s, ys[p])))


@numba.njit(**BODY)
def _flat_one_minus(c, chunks, x, y, out):
    lo, hi = bounds(c, x.size, chunks)
    xs, ys, os = x[lo:hi], y[lo:hi], out[lo:hi]
    for p in range(xs.size):
        os[p] = f.sub(1.0, f.mul(xs[p], ys[p]))


@numba.njit(**BODY)
def _flat_sigmoid(c, chunks, x, out):
    lo, hi = bounds(c, x.size, chunks)
    xs, os = x[lo:hi], out[lo:hi]
    for p in range(xs.size):
        os[p] = f.sigmoid(xs[p])


def _cells(*values) -> int:
    """The cells a kernel over ``values`` visits: the sparsest CSR one's non-zeros, else all."""
    return min((v.nnz for v in values if sp.issparse(v)), default=int(np.prod(values[0].shape)))


def _flat(value) -> np.ndarray:
    return dense(value).reshape(-1)


def _flat_map(body, operands: tuple, scalars: tuple = ()) -> np.ndarray:
    """``body`` over flat operands of one shape (then the scalars), into a fresh array of that
    shape."""
    flat = [_flat(v) for v in operands]
    out = np.empty(flat[0].size)
    run(body, row_chunks(out.size, out.size), *flat, *scalars, out)
    return out.reshape(np.shape(operands[0]))


# -- tak+* ------------------------------------------------------------------------------------
@numba.njit(**BODY)
def _tak_dense(c, chunks, X, Y, Z, by_column, parts):
    m, n = X.shape
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


@numba.njit(**BODY)
def _tak_sparse(c, chunks, data, indices, indptr, m, X, Y, Z, by_column, parts):
    """(X * Y) * Z over the non-zeros of one CSR operand (the driver: ``data, indices,
    indptr``), the CSR operands read by merge cursors along each row. The reference's rule holds
    for the intermediate too: where X * Y is CSR, its zeros annihilate Z's inf/NaN."""
    xy_csr = X[4] or Y[4]
    lo, hi = bounds(c, m, chunks)
    acc = parts[c]
    s = 0.0
    for i in range(lo, hi):
        qx, qy, qz = row_start(X, i), row_start(Y, i), row_start(Z, i)
        for p in range(indptr[i], indptr[i + 1]):
            if data[p] == 0.0:
                continue
            j = indices[p]
            x, qx = merged(X, i, j, qx)
            y, qy = merged(Y, i, j, qy)
            if annihilates(X, x) or annihilates(Y, y):
                continue
            t = f.mul(x, y)
            z, qz = merged(Z, i, j, qz)
            if (xy_csr and t == 0.0) or annihilates(Z, z):
                continue
            if by_column:
                acc[j] += f.mul(t, z)
            else:
                s += f.mul(t, z)
    if not by_column:
        acc[0] = s


def tak(variant: str, x, y, z):
    by_column = variant == "col"
    m, n = x.shape
    values = (x, y, z)
    sparse = [k for k in range(3) if sp.issparse(values[k])]
    if not sparse and not by_column:
        chunks = row_chunks(m * n, m * n)
        parts = np.zeros(chunks)
        run(_flat_sum_product, chunks, _flat(x), _flat(y), _flat(z), parts)
        return float(parts.sum())
    chunks = partial_chunks(n) if by_column else row_chunks(m, _cells(x, y, z))
    parts = np.zeros((chunks, n if by_column else 1))
    if sparse:
        d = values[min(sparse, key=lambda k: values[k].nnz)]  # the sparsest drives
        ops = [operand(v) for v in values]
        run(_tak_sparse, chunks, d.data, d.indices, d.indptr, m, *ops, by_column, parts)
    else:
        run(_tak_dense, chunks, dense(x), dense(y), dense(z), by_column, parts)
    out = np.add.reduce(parts, axis=0)  # in chunk order
    return out.reshape(1, n) if by_column else float(out[0])


# -- uasqk+ -----------------------------------------------------------------------------------
@numba.njit(**BODY)
def _sumsq_dense(c, chunks, X, axis, parts, rows):
    m, n = X.shape
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


@numba.njit(**BODY)
def _sumsq_sparse(c, chunks, data, indices, indptr, m, axis, parts, rows):
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


def sumsq(variant: str, x):
    axis = {"full": -1, "col": 0, "row": 1}[variant]
    m, n = x.shape
    chunks = partial_chunks(n) if axis == 0 else row_chunks(m, _cells(x))
    parts = np.zeros((chunks, 1 if axis < 0 else n))
    rows = np.zeros(m)
    if sp.issparse(x):
        run(_sumsq_sparse, chunks, x.data, x.indices, x.indptr, m, axis, parts, rows)
    else:
        run(_sumsq_dense, chunks, dense(x), axis, parts, rows)
    if axis == 1:
        return rows.reshape(m, 1)
    out = np.add.reduce(parts, axis=0)  # in chunk order
    return out.reshape(1, n) if axis == 0 else float(out[0])


# -- axpy -------------------------------------------------------------------------------------
@numba.njit(**BODY)
def _axpy(c, chunks, X, Y, s, sign, ydata, yindices, yindptr, xdata, xindices, xindptr, mode, out):
    """mode 1: Y CSR (X dense); 2: X CSR (Y dense)."""
    m, n = out.shape
    lo, hi = bounds(c, m, chunks)
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


def axpy(variant: str, x, s, y):
    sign = 1.0 if variant == "plus" else -1.0
    s = float(s)
    if not (sp.issparse(x) or sp.issparse(y)):
        return _flat_map(_flat_axpy, (x, y), (s, sign))
    out = np.empty(x.shape)
    e2, e1, ei, ep = EMPTY2, EMPTY1, EMPTY_INDICES, EMPTY_INDPTR
    if sp.issparse(y):
        args = (dense(x), e2, s, sign, y.data, y.indices, y.indptr, e1, ei, ep, 1)
    else:
        args = (e2, dense(y), s, sign, e1, ei, ep, x.data, x.indices, x.indptr, 2)
    run(_axpy, row_chunks(out.shape[0], out.size), *args, out)
    return out


# -- 1-* --------------------------------------------------------------------------------------
@numba.njit(**BODY)
def _one_minus_sparse(c, chunks, data, indices, indptr, other, out):
    m = out.shape[0]
    lo, hi = bounds(c, m, chunks)
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


def one_minus_product(variant: str, x, y):
    if sp.issparse(x) or sp.issparse(y):
        d, o = (x, y) if sp.issparse(x) else (y, x)
        out = np.empty(d.shape)
        chunks = row_chunks(out.shape[0], out.size)
        run(_one_minus_sparse, chunks, d.data, d.indices, d.indptr, operand(o), out)
        return out
    return _flat_map(_flat_one_minus, (x, y))


# -- sprop and sigmoid ------------------------------------------------------------------------
@numba.njit(**BODY)
def _sprop_values(c, chunks, v, out):
    lo, hi = bounds(c, v.size, chunks)
    vs, os = v[lo:hi], out[lo:hi]
    for p in range(vs.size):
        x = vs[p]
        os[p] = 0.0 if x == 0.0 else f.mul(x, f.sub(1.0, x))


def sprop(variant: str, x):
    if sp.issparse(x):
        out = np.empty(x.data.size)
        run(_sprop_values, row_chunks(out.size, out.size), dense(x.data), out)
        return sp.csr_array((out, x.indices, x.indptr), shape=x.shape)
    return _flat_map(_sprop_values, (x,))  # x*(1-x) is 0 at 0 anyway


@numba.njit(**BODY)
def _sigmoid_csr(c, chunks, data, indices, indptr, out):
    m = out.shape[0]
    lo, hi = bounds(c, m, chunks)
    for i in range(lo, hi):
        out[i, :] = 0.5
        for p in range(indptr[i], indptr[i + 1]):
            out[i, indices[p]] = f.sigmoid(data[p])


def sigmoid_op(variant: str, x):
    if sp.issparse(x):
        out = np.empty(x.shape)
        run(_sigmoid_csr, row_chunks(out.shape[0], out.size), x.data, x.indices, x.indptr, out)
        return out
    return _flat_map(_flat_sigmoid, (x,))
