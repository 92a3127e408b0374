"""Hand-written numba kernels of the paper's micro-benchmark patterns, dense and CSR: the yardstick
generated code is measured against, written as one would by hand (parallel row chunks, per-chunk
partial results, no temporaries; CSR kernels walk the sorted column indices of each row) under the
generated kernels' floating-point rules.

``KERNELS[pattern][format](data)`` runs one on a pattern's data (``datasets.PATTERNS`` inputs;
format "dense" or "csr")."""

import numba
import numpy as np
from numba import prange

# reassociated sums, as the generated kernels: FMA contraction ("contract") would round a cell's
# products differently from numpy, which a generated kernel may not (measured 1.15x faster on
# the Outer pattern, where it fuses the dot products' multiply-adds)
FLAGS = dict(parallel=True, fastmath={"reassoc"}, cache=True)
CHUNKS = 64  # row chunks of the kernels with vector or matrix partials (>= the threads)


@numba.njit(**FLAGS)
def cell_dense(X, Y, Z):
    m, n = X.shape
    total = 0.0
    for i in prange(m):
        for j in range(n):
            total += X[i, j] * Y[i, j] * Z[i, j]
    return total


@numba.njit(**FLAGS)
def cell_csr(xd, xi, xp, yd, yi, yp, zd, zi, zp):
    """sum(X*Y*Z): the columns each row of X, Y and Z all store (a three-way merge)."""
    total = 0.0
    for i in prange(xp.shape[0] - 1):
        a, b, c = xp[i], yp[i], zp[i]
        while a < xp[i + 1] and b < yp[i + 1] and c < zp[i + 1]:
            top = max(xi[a], yi[b], zi[c])
            if xi[a] == top and yi[b] == top and zi[c] == top:
                total += xd[a] * yd[b] * zd[c]
                a, b, c = a + 1, b + 1, c + 1
                continue
            a += xi[a] < top
            b += yi[b] < top
            c += zi[c] < top
    return total


@numba.njit(**FLAGS)
def magg_dense(X, Y):
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
def magg_csr(xd, xi, xp, yd, yi, yp):
    xx = xy = yy = 0.0
    for i in prange(xp.shape[0] - 1):
        a, b = xp[i], yp[i]
        for p in range(xp[i], xp[i + 1]):
            xx += xd[p] * xd[p]
        for p in range(yp[i], yp[i + 1]):
            yy += yd[p] * yd[p]
        while a < xp[i + 1] and b < yp[i + 1]:
            if xi[a] == yi[b]:
                xy += xd[a] * yd[b]
                a, b = a + 1, b + 1
            elif xi[a] < yi[b]:
                a += 1
            else:
                b += 1
    return xx, xy, yy


@numba.njit(**FLAGS)
def mmchain_dense(X, w, v):
    m, n = X.shape
    partial = np.zeros((CHUNKS, n))
    for c in prange(CHUNKS):
        for i in range(c * m // CHUNKS, (c + 1) * m // CHUNKS):
            s = 0.0
            for j in range(n):
                s += X[i, j] * v[j]
            s *= w[i]
            for j in range(n):
                partial[c, j] += s * X[i, j]
    return partial.sum(axis=0)


@numba.njit(**FLAGS)
def mmchain_csr(data, indices, indptr, n, w, v):
    m = indptr.shape[0] - 1
    partial = np.zeros((CHUNKS, n))
    for c in prange(CHUNKS):
        for i in range(c * m // CHUNKS, (c + 1) * m // CHUNKS):
            s = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                s += data[p] * v[indices[p]]
            s *= w[i]
            for p in range(indptr[i], indptr[i + 1]):
                partial[c, indices[p]] += s * data[p]
    return partial.sum(axis=0)


@numba.njit(**FLAGS)
def mlogreg_dense(X, P, V):
    """X.T @ (Q - P * rowsum(Q)) with Q = P * (X @ V), one row of Q at a time."""
    m, n = X.shape
    k = V.shape[1]
    partial = np.zeros((CHUNKS, n, k))
    for c in prange(CHUNKS):
        q = np.empty(k)
        for i in range(c * m // CHUNKS, (c + 1) * m // CHUNKS):
            q[:] = 0.0
            for j in range(n):
                for h in range(k):
                    q[h] += X[i, j] * V[j, h]
            s = 0.0
            for h in range(k):
                q[h] *= P[i, h]
                s += q[h]
            for h in range(k):
                q[h] -= P[i, h] * s
            for j in range(n):
                for h in range(k):
                    partial[c, j, h] += X[i, j] * q[h]
    return partial.sum(axis=0)


@numba.njit(**FLAGS)
def mlogreg_csr(data, indices, indptr, n, P, V):
    m = indptr.shape[0] - 1
    k = V.shape[1]
    partial = np.zeros((CHUNKS, n, k))
    for c in prange(CHUNKS):
        q = np.empty(k)
        for i in range(c * m // CHUNKS, (c + 1) * m // CHUNKS):
            q[:] = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                for h in range(k):
                    q[h] += data[p] * V[indices[p], h]
            s = 0.0
            for h in range(k):
                q[h] *= P[i, h]
                s += q[h]
            for h in range(k):
                q[h] -= P[i, h] * s
            for p in range(indptr[i], indptr[i + 1]):
                for h in range(k):
                    partial[c, indices[p], h] += data[p] * q[h]
    return partial.sum(axis=0)


@numba.njit(**FLAGS)
def outer_dense(W, U, V):
    """sum(W * (U @ V.T)**2) over W's non-zero cells only (the products elsewhere are 0)."""
    m, n = W.shape
    r = U.shape[1]
    total = 0.0
    for i in prange(m):
        for j in range(n):
            if W[i, j] != 0.0:
                uv = 0.0
                for k in range(r):
                    uv += U[i, k] * V[j, k]
                total += W[i, j] * uv * uv
    return total


@numba.njit(**FLAGS)
def outer_csr(data, indices, indptr, U, V):
    r = U.shape[1]
    total = 0.0
    for i in prange(indptr.shape[0] - 1):
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            uv = 0.0
            for k in range(r):
                uv += U[i, k] * V[j, k]
            total += data[p] * uv * uv
    return total


@numba.njit(cache=True)
def _squared_norms(C):
    """||c_q||^2 of each row of C, summed over its columns in order."""
    c2 = np.zeros(C.shape[0])
    for q in range(C.shape[0]):
        for t in range(C.shape[1]):
            c2[q] += C[q, t] * C[q, t]
    return c2


@numba.njit(**FLAGS)
def lloyd_dense(X, C):
    """The KMeans step: the sums and counts of the records each centroid attracts, a record
    tied between several nearest centroids shared equally among them (as the fused body)."""
    m, n = X.shape
    k = C.shape[0]
    c2 = _squared_norms(C)
    sums = np.zeros((CHUNKS, k, n))
    counts = np.zeros((CHUNKS, k))
    for c in prange(CHUNKS):
        d = np.empty(k)
        for i in range(c * m // CHUNKS, (c + 1) * m // CHUNKS):
            best = np.inf
            for q in range(k):
                s = 0.0
                for t in range(n):
                    s += X[i, t] * C[q, t]
                d[q] = c2[q] - 2.0 * s
                best = min(best, d[q])
            ties = 0
            for q in range(k):
                ties += d[q] <= best
            share = 1.0 / ties
            for q in range(k):
                if d[q] <= best:
                    counts[c, q] += share
                    for t in range(n):
                        sums[c, q, t] += share * X[i, t]
    return sums.sum(axis=0), counts.sum(axis=0)


TILE = 256  # rows per BLAS tile: 256 x 10 doubles stay in L1/L2 between the steps


@numba.njit(**FLAGS)
def lloyd_tiles_dense(X, C):
    """The KMeans step as ``lloyd_dense``, a tile of rows at a time, as scikit-learn's Lloyd
    iteration is written: the tile's distances by one BLAS product, then each step over the whole
    tile, stored K x rows so that every loop runs along the tile's rows (long, vectorizable)
    rather than along K, and the sums by a second BLAS product."""
    m, n = X.shape
    k = C.shape[0]
    c2 = _squared_norms(C)
    sums = np.zeros((CHUNKS, k, n))
    counts = np.zeros((CHUNKS, k))
    for c in prange(CHUNKS):
        best = np.empty(TILE)
        ties = np.empty(TILE)
        for lo in range(c * m // CHUNKS, (c + 1) * m // CHUNKS, TILE):
            hi = min(lo + TILE, (c + 1) * m // CHUNKS)
            rows = hi - lo
            d = np.dot(C, X[lo:hi].T)  # k x rows
            best[:rows] = np.inf
            for q in range(k):
                for r in range(rows):
                    v = c2[q] - 2.0 * d[q, r]
                    d[q, r] = v
                    best[r] = min(best[r], v)
            ties[:rows] = 0.0
            for q in range(k):
                for r in range(rows):
                    d[q, r] = 1.0 if d[q, r] <= best[r] else 0.0
                    ties[r] += d[q, r]
            for q in range(k):
                share = 0.0  # a register, not counts[c, q]: a store per row was 1.6x slower
                for r in range(rows):
                    d[q, r] /= ties[r]
                    share += d[q, r]
                counts[c, q] += share
            sums[c] += np.dot(d, X[lo:hi])
    return sums.sum(axis=0), counts.sum(axis=0)


@numba.njit(**FLAGS)
def lloyd_first_tiles_dense(X, C):
    """scikit-learn's Lloyd step, tiled as ``lloyd_tiles_dense``: the tile's distances by one
    BLAS product, each row's first nearest centroid, and the row added to that centroid's sum
    (no shares: a tie goes to the first)."""
    m, n = X.shape
    k = C.shape[0]
    c2 = _squared_norms(C)
    sums = np.zeros((CHUNKS, k, n))
    counts = np.zeros((CHUNKS, k))
    for c in prange(CHUNKS):
        best = np.empty(TILE)
        label = np.zeros(TILE, np.int64)
        for lo in range(c * m // CHUNKS, (c + 1) * m // CHUNKS, TILE):
            hi = min(lo + TILE, (c + 1) * m // CHUNKS)
            rows = hi - lo
            d = np.dot(C, X[lo:hi].T)  # k x rows
            best[:rows] = np.inf
            for q in range(k):
                for r in range(rows):
                    v = c2[q] - 2.0 * d[q, r]
                    take = v < best[r]
                    label[r] = q if take else label[r]
                    best[r] = v if take else best[r]
            for r in range(rows):
                g = label[r]
                counts[c, g] += 1.0
                for t in range(n):
                    sums[c, g, t] += X[lo + r, t]
    return sums.sum(axis=0), counts.sum(axis=0)


@numba.njit(**FLAGS)
def mlogreg_loss_dense(X, Yk, yb, B):
    """MLogReg's loss and gradient at B (K non-baseline classes, the baseline's score 0):
    X.T @ (softmax - Y) and the negative log-likelihood, one row of scores at a time."""
    m, n = X.shape
    k = B.shape[1]
    grad = np.zeros((CHUNKS, n, k))
    losses = np.zeros(CHUNKS)
    for c in prange(CHUNKS):
        s = np.empty(k)
        for i in range(c * m // CHUNKS, (c + 1) * m // CHUNKS):
            s[:] = 0.0
            for j in range(n):
                for h in range(k):
                    s[h] += X[i, j] * B[j, h]
            top = 0.0
            for h in range(k):
                top = max(top, s[h])
            total = np.exp(-top)
            for h in range(k):
                s[h] = s[h] - top
                total += np.exp(s[h])
            loss = yb[i] * top + np.log(total)
            for h in range(k):
                loss -= Yk[i, h] * s[h]
                s[h] = np.exp(s[h]) / total - Yk[i, h]
            losses[c] += loss
            for j in range(n):
                for h in range(k):
                    grad[c, j, h] += X[i, j] * s[h]
    return grad.sum(axis=0), losses.sum()


@numba.njit(**FLAGS)
def stream_dense(X):
    """One read of X and nothing else: the memory floor of any single pass over it."""
    m, n = X.shape
    total = 0.0
    for i in prange(m):
        for j in range(n):
            total += X[i, j]
    return total


def _csr(A):
    """(data, indices, indptr) with each row's column indices sorted (the merges need them)."""
    if not A.has_sorted_indices:
        A = A.sorted_indices()
    return A.data, A.indices, A.indptr


KERNELS = {
    "cell": {
        "dense": lambda d: cell_dense(d["X"], d["Y"], d["Z"]),
        "csr": lambda d: cell_csr(*_csr(d["X"]), *_csr(d["Y"]), *_csr(d["Z"])),
    },
    "magg": {
        "dense": lambda d: magg_dense(d["X"], d["Y"]),
        "csr": lambda d: magg_csr(*_csr(d["X"]), *_csr(d["Y"])),
    },
    "row-mmchain": {
        "dense": lambda d: mmchain_dense(d["X"], d["w"], d["v"]),
        "csr": lambda d: mmchain_csr(*_csr(d["X"]), d["X"].shape[1], d["w"], d["v"]),
    },
    "row-mlogreg": {
        "dense": lambda d: mlogreg_dense(d["X"], d["P"], d["V"]),
        "csr": lambda d: mlogreg_csr(*_csr(d["X"]), d["X"].shape[1], d["P"], d["V"]),
    },
    "outer": {
        "dense": lambda d: outer_dense(d["W"], d["U"], d["V"]),
        "csr": lambda d: outer_csr(*_csr(d["W"]), d["U"], d["V"]),
    },
}
