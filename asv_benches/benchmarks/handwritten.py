"""Hand-written numba kernels for the paper's four patterns: the yardstick generated code is
measured against (written as one would by hand: parallel row chunks, no temporaries)."""

import numba
import numpy as np
from numba import prange

FLAGS = dict(parallel=True, fastmath={"reassoc", "contract"}, cache=True)


@numba.njit(**FLAGS)
def sum_xyz(X, Y, Z):
    m, n = X.shape
    total = 0.0
    for i in prange(m):
        for j in range(n):
            total += X[i, j] * Y[i, j] * Z[i, j]
    return total


@numba.njit(**FLAGS)
def magg_xy(X, Y):
    m, n = X.shape
    xx = xy = yy = 0.0
    for i in prange(m):
        for j in range(n):
            x, y = X[i, j], Y[i, j]
            xx += x * x
            xy += x * y
            yy += y * y
    return xx, xy, yy


@numba.njit(**FLAGS)
def mmchain(X, w, v):
    m, n = X.shape
    chunks = 64
    partial = np.zeros((chunks, n))
    for c in prange(chunks):
        for i in range(c * m // chunks, (c + 1) * m // chunks):
            s = 0.0
            for j in range(n):
                s += X[i, j] * v[j]
            s *= w[i]
            for j in range(n):
                partial[c, j] += X[i, j] * s
    return partial.sum(axis=0)


@numba.njit(**FLAGS)
def outer_sq_loss(data, indices, indptr, U, V):
    m = indptr.shape[0] - 1
    r = U.shape[1]
    total = 0.0
    for i in prange(m):
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            uv = 0.0
            for k in range(r):
                uv += U[i, k] * V[j, k]
            total += data[p] * uv * uv
    return total
