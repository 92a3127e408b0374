"""Shared pieces of the hand-written kernels: numba options, row chunks, operand access.

Conventions (the same as the generated skeletons, so the comparison is fair): a serial body of
one row chunk, run on the chunk launcher (``_launch.py``) over a fixed number of chunks, with
partials combined in chunk order (results do not depend on the thread count),
``error_model="numpy"``, and fastmath reassociation only for the accumulations across cells:
each cell's arithmetic goes through ``fusedml.codegen.cellops`` (``f.``), which no fast-math
flag reaches, so NaN, inf and signed zeros come out as numpy's. A CSR operand's zero (stored or
implicit) annihilates in products and as a numerator, exactly as in the reference interpreter.

An *operand* is a matrix the kernel reads at arbitrary ``(i, j)``: the tuple
``(dense, data, indices, indptr, is_csr)``, unused parts empty, so one compiled kernel serves
dense and CSR side inputs (the format branch is perfectly predictable).
"""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp

import fusedml.codegen.cellops as f
from fusedml._native import NoAliasCompiler
from fusedml.codegen.chunking import CHUNKS, JIT, MIN_CHUNK_CELLS, partial_chunks  # noqa: F401
from fusedml.runtime import threads as _threads  # noqa: F401  (threading layer, idle policy)

INLINE = dict(inline="always", error_model="numpy")
# A kernel body: called by its reader only (``_launch.py``); it writes only arrays its caller
# allocated for it, so no array it is given overlaps one it writes. It allocates nothing, so it
# needs no reference counting: with it, each read of an operand tuple's array counted references
# in the innermost loop (tak+* over three CSR operands ran 2.5-3x slower).
BODY = dict(
    JIT, pipeline_class=NoAliasCompiler, no_cpython_wrapper=True, no_cfunc_wrapper=True, _nrt=False
)

EMPTY2 = np.zeros((0, 0))
EMPTY1 = np.zeros(0)
EMPTY_INDICES = np.zeros(0, dtype=np.int32)
EMPTY_INDPTR = np.zeros(1, dtype=np.int32)


def row_chunks(rows: int, cells: int) -> int:
    """Chunks of a kernel over ``rows`` rows holding ``cells`` cells (or non-zeros), as a
    generated kernel takes them (``chunking.chunks_source``): at most ``CHUNKS``, at least
    ``MIN_CHUNK_CELLS`` cells each, and 2 for an input of 2 or more rows (a 20k vector in 64
    chunks took 12.7 us a call on the launcher, in 2 chunks 7.8 us)."""
    return min(rows, max(2, cells // MIN_CHUNK_CELLS), CHUNKS)


def dense(value) -> np.ndarray:
    return np.ascontiguousarray(value, dtype=np.float64)


def operand(value) -> tuple:
    if sp.issparse(value):
        return (EMPTY2, value.data, value.indices, value.indptr, True)
    return (dense(value), EMPTY1, EMPTY_INDICES, EMPTY_INDPTR, False)


def column(value) -> np.ndarray:
    """An (m, 1) column as a 1-D array."""
    return dense(value.toarray() if sp.issparse(value) else value).reshape(-1)


@numba.njit(**INLINE)
def bounds(c, m, chunks):
    return c * m // chunks, (c + 1) * m // chunks


@numba.njit(**INLINE)
def csr_get(data, indices, indptr, i, j):
    lo, end = indptr[i], indptr[i + 1]
    hi = end
    while lo < hi:
        mid = (lo + hi) >> 1
        if indices[mid] < j:
            lo = mid + 1
        else:
            hi = mid
    if lo < end and indices[lo] == j:
        return data[lo]
    return 0.0


@numba.njit(**INLINE)
def get(o, i, j):
    if o[4]:
        return csr_get(o[1], o[2], o[3], i, j)
    return o[0][i, j]


@numba.njit(**INLINE)
def row_start(o, i):
    """A merge cursor into row ``i`` of a CSR operand (0 for a dense one)."""
    return o[3][i] if o[4] else 0


@numba.njit(**INLINE)
def merged(o, i, j, q):
    """``get(o, i, j)`` and the cursor after it, for columns ``j`` visited in increasing order
    along row ``i`` (a CSR operand's cursor only moves forward: no search)."""
    if not o[4]:
        return o[0][i, j], q
    end = o[3][i + 1]
    while q < end and o[2][q] < j:
        q += 1
    return (o[1][q] if q < end and o[2][q] == j else 0.0), q


@numba.njit(**INLINE)
def annihilates(o, value):
    """A zero read from a CSR operand wins over anything it multiplies."""
    return o[4] and value == 0.0


@numba.njit(**INLINE)
def dot(U, V, i, j):
    s = 0.0
    for r in range(U.shape[1]):
        s += f.mul(U[i, r], V[j, r])
    return s


# unary functions of ``wumm`` by code (UNARY_CODES)
UNARY_CODES = {
    "exp": 0,
    "log": 1,
    "abs": 2,
    "sqrt": 3,
    "sign": 4,
    "neg": 5,
    "sigmoid": 6,
    "pow2": 7,
}


@numba.njit(**INLINE)
def unary(code, x):
    if code == 0:
        return f.exp(x)
    if code == 1:
        return f.log(x)
    if code == 2:
        return f.fabs(x)
    if code == 3:
        return f.sqrt(x)
    if code == 4:
        return f.sign(x)
    if code == 5:
        return f.neg(x)
    if code == 6:
        return f.sigmoid(x)
    return f.mul(x, x)
