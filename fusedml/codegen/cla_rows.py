"""Decoding one row of a compressed matrix inside a generated kernel (see ``compressed.py``).

Kernels call ``cla.row(...)`` after ``import fusedml.codegen.cla_rows as cla``: compiled once per
process and linked into each kernel, instead of being compiled again inside every kernel module
(which tripled their compile time). Kernel sources carry ``SOURCE_DIGEST``, so a change here
is a new kernel.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numba
import numpy as np

SOURCE_DIGEST = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]

_STRICT = dict(fastmath=False, error_model="numpy")


@numba.njit(**_STRICT)
def put_tuple(buf, g, t, cols, colptr, vals, valptr):
    lo = colptr[g]
    width = colptr[g + 1] - lo
    at = valptr[g] + t * width
    for q in range(width):
        buf[cols[lo + q]] = vals[at + q]


@numba.njit(**_STRICT)
def put_ddc(buf, i, codes, first, cols, colptr, vals, valptr):
    for q in range(codes.shape[1]):
        put_tuple(buf, first + q, np.int64(codes[i, q]), cols, colptr, vals, valptr)
    return first + codes.shape[1]


@numba.njit(**_STRICT)
def first_at_or_after(offsets, lo, hi, i):
    """The first position in offsets[lo:hi] (ascending) holding a row >= i."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if offsets[mid] < i:
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(**_STRICT)
def row(
    buf,
    cur,
    i,
    base,
    c8,
    c16,
    c32,
    dcols,
    dcolptr,
    dvals,
    dvalptr,
    soff,
    scodes,
    sptr,
    scols,
    scolptr,
    svals,
    svalptr,
    ucols,
    uc,
):
    for q in range(base.shape[0]):  # not buf[:] = base: its shape check compiles string code
        buf[q] = base[q]
    g = put_ddc(buf, i, c8, 0, dcols, dcolptr, dvals, dvalptr)
    g = put_ddc(buf, i, c16, g, dcols, dcolptr, dvals, dvalptr)
    put_ddc(buf, i, c32, g, dcols, dcolptr, dvals, dvalptr)
    ngroups = sptr.shape[0] - 1
    if cur[ngroups] != i - 1:  # a chunk's first row: find each group's next entry
        for s in range(ngroups):
            cur[s] = first_at_or_after(soff, sptr[s], sptr[s + 1], i)
    cur[ngroups] = i
    for s in range(ngroups):
        p = cur[s]
        if p < sptr[s + 1] and soff[p] == i:
            put_tuple(buf, s, np.int64(scodes[p]), scols, scolptr, svals, svalptr)
            cur[s] = p + 1
    for q in range(ucols.shape[0]):
        buf[ucols[q]] = uc[i, q]
