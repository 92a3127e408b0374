"""Hand-written numba kernels for the two patterns no hand-coded fused operator covers (the
multi-aggregate and the outer loss without X): the yardstick generated code is measured against
there (written as one would by hand: parallel row chunks, no temporaries). sum(X*Y*Z) and the
mmchain are measured against fusedml's hand operators (``fusion="hand"``: tak+*, mmchain)."""

import numba
from numba import prange

FLAGS = dict(parallel=True, fastmath={"reassoc", "contract"}, cache=True)


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
