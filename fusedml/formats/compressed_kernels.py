"""numba kernels over blocks of rows of a compressed matrix: decoding them into a dense tile,
their products with a matrix, their share of a transposed product. The reference interpreter's
products use them (``compressed_ops.py``), and generated kernels call them
(``fusedml/codegen/compressed.py``, ``cla_row.py``).

Their arguments are a matrix's packed arrays in ``arrays``' order (``P`` below). Generated kernels
call them after ``import fusedml.formats.compressed_kernels as cla``: compiled once per process
and linked into each kernel, instead of being compiled again inside every kernel module (which
tripled their compile time). They work on blocks of rows, not single rows: numba does not inline
one njit function into another, and a call per row (with some twenty arrays) cost more than the
row's work. Kernel sources carry ``SOURCE_DIGEST``, so a change here is a new kernel.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numba
import numpy as np

SOURCE_DIGEST = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]


def arrays(x) -> list:
    """A ``CompressedMatrix``'s packed arrays, in the order these kernels take them."""
    ddc, sdc = x.ddc, x.sdc
    return [
        x.base, *x.codes, ddc.cols, ddc.colptr, ddc.values, ddc.valptr, x.sdc_offsets,
        x.sdc_codes, x.sdc_ptr, sdc.cols, sdc.colptr, sdc.values, sdc.valptr, x.uc_cols, x.uc,
        ddc.tupptr, ddc.counts, sdc.tupptr, sdc.counts, x.const_cols,
    ]  # fmt: skip


_STRICT = dict(fastmath=False, error_model="numpy", cache=True)


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
def _decode_ddc(tile, lo, hi, codes, first, cols, colptr, vals, valptr):
    # unsigned indices: LLVM drops numba's negative-index wrap-around (3x on these loops)
    for q in range(codes.shape[1]):
        g = first + q
        start, width = np.uint64(colptr[g]), np.uint64(colptr[g + 1] - colptr[g])
        at0 = np.uint64(valptr[g])
        for i in range(np.uint64(lo), np.uint64(hi)):
            at = at0 + np.uint64(codes[i, q]) * width
            for e in range(width):
                tile[i - np.uint64(lo), np.uint64(cols[start + e])] = vals[at + e]
    return first + codes.shape[1]


@numba.njit(**_STRICT)
def decode_block(tile, lo, hi, base, c8, c16, c32, dcols, dcolptr, dvals, dvalptr, soff, scodes,
                 sptr, scols, scolptr, svals, svalptr, ucols, uc):  # fmt: skip
    """tile[i - lo] = row i of the matrix, for the rows lo..hi-1."""
    for i in range(hi - lo):
        for j in range(base.shape[0]):
            tile[i, j] = base[j]
    g = _decode_ddc(tile, lo, hi, c8, 0, dcols, dcolptr, dvals, dvalptr)
    g = _decode_ddc(tile, lo, hi, c16, g, dcols, dcolptr, dvals, dvalptr)
    _decode_ddc(tile, lo, hi, c32, g, dcols, dcolptr, dvals, dvalptr)
    for s in range(sptr.shape[0] - 1):
        start = scolptr[s]
        width = scolptr[s + 1] - start
        p = first_at_or_after(soff, sptr[s], sptr[s + 1], lo)
        while p < sptr[s + 1] and soff[p] < hi:
            at = svalptr[s] + np.int64(scodes[p]) * width
            for e in range(width):
                tile[soff[p] - lo, scols[start + e]] = svals[at + e]
            p += 1
    for i in range(lo, hi):
        for q in range(ucols.shape[0]):
            tile[i - lo, ucols[q]] = uc[i, q]


# -- products with the groups ------------------------------------------------------------------
# Accumulator rows of X.T @ Y: every DDC tuple, every SDC tuple, each SDC
# group's default, the constant columns (one row).


@numba.njit(**_STRICT)
def premultiply(b, base, c8, c16, c32, dcols, dcolptr, dvals, dvalptr, soff, scodes, sptr,
                scols, scolptr, svals, svalptr, ucols, uc, dtupptr, dcounts, stupptr, scounts,
                ccols):  # fmt: skip
    """Each tuple's product with b's rows at its columns: (DDC, SDC, SDC defaults, constant)."""
    k = b.shape[1]
    pd = _tuple_products(b, dcols, dcolptr, dvals, dvalptr, dtupptr)
    ps = _tuple_products(b, scols, scolptr, svals, svalptr, stupptr)
    pdef = np.zeros((scolptr.shape[0] - 1, k))
    for s in range(scolptr.shape[0] - 1):
        for q in range(scolptr[s], scolptr[s + 1]):
            j = scols[q]
            for r in range(k):
                pdef[s, r] += base[j] * b[j, r]
    pc = np.zeros(k)
    for q in range(ccols.shape[0]):
        j = ccols[q]
        for r in range(k):
            pc[r] += base[j] * b[j, r]
    return pd, ps, pdef, pc


@numba.njit(**_STRICT)
def _tuple_products(b, cols, colptr, vals, valptr, tupptr):
    k = b.shape[1]
    out = np.zeros((tupptr[tupptr.shape[0] - 1], k))
    for g in range(colptr.shape[0] - 1):
        lo = colptr[g]
        width = colptr[g + 1] - lo
        for t in range(tupptr[g + 1] - tupptr[g]):
            at = valptr[g] + t * width
            for q in range(width):
                v = vals[at + q]
                j = cols[lo + q]
                for r in range(k):
                    out[tupptr[g] + t, r] += v * b[j, r]
    return out


@numba.njit(**_STRICT)
def _add_ddc(out, lo, hi, codes, first, tupptr, pd):
    # unsigned indices: LLVM drops numba's negative-index wrap-around (3x on these loops)
    k = out.shape[1]
    ulo = np.uint64(lo)
    for q in range(codes.shape[1]):
        at = np.uint64(tupptr[first + q])
        if k == 1:
            for i in range(ulo, np.uint64(hi)):
                out[i - ulo, 0] += pd[at + np.uint64(codes[i, q]), 0]
        else:
            for i in range(ulo, np.uint64(hi)):
                row = at + np.uint64(codes[i, q])
                for r in range(k):
                    out[i - ulo, r] += pd[row, r]
    return first + codes.shape[1]


@numba.njit(**_STRICT)
def lookup_block(out, lo, hi, pd, ps, pdef, pc, b, base, c8, c16, c32, dcols, dcolptr, dvals,
                 dvalptr, soff, scodes, sptr, scols, scolptr, svals, svalptr, ucols, uc, dtupptr,
                 dcounts, stupptr, scounts, ccols):  # fmt: skip
    """out[i - lo] = row i of X times b for the rows lo..hi-1, from the tuples' products."""
    k = out.shape[1]
    for i in range(hi - lo):
        for r in range(k):
            out[i, r] = pc[r]
    g = _add_ddc(out, lo, hi, c8, 0, dtupptr, pd)
    g = _add_ddc(out, lo, hi, c16, g, dtupptr, pd)
    _add_ddc(out, lo, hi, c32, g, dtupptr, pd)
    for s in range(sptr.shape[0] - 1):
        p = first_at_or_after(soff, sptr[s], sptr[s + 1], lo)
        for i in range(lo, hi):
            if p < sptr[s + 1] and soff[p] == i:
                row = stupptr[s] + np.int64(scodes[p])
                p += 1
                for r in range(k):
                    out[i - lo, r] += ps[row, r]
            elif k == 1:
                out[i - lo, 0] += pdef[s, 0]
            else:
                for r in range(k):
                    out[i - lo, r] += pdef[s, r]
    for i in range(lo, hi):
        for q in range(ucols.shape[0]):
            v = uc[i, q]
            j = ucols[q]
            for r in range(k):
                out[i - lo, r] += v * b[j, r]


@numba.njit(**_STRICT)
def accumulator_rows(base, c8, c16, c32, dcols, dcolptr, dvals, dvalptr, soff, scodes, sptr,
                     scols, scolptr, svals, svalptr, ucols, uc, dtupptr, dcounts, stupptr,
                     scounts, ccols):  # fmt: skip
    """Per accumulator row of X.T @ Y: whether every value of its tuple is finite (a tuple with
    inf or NaN also records the signs of the rows' Y values: inf * 0 and inf - inf are NaN in
    the dense product, not in a product with summed Y)."""
    nd, ns = dtupptr[dtupptr.shape[0] - 1], stupptr[stupptr.shape[0] - 1]
    nsdc = scolptr.shape[0] - 1
    fin = np.ones(nd + ns + nsdc + 1, dtype=np.bool_)
    _finite_tuples(fin, 0, dcolptr, dvals, dvalptr, dtupptr)
    _finite_tuples(fin, nd, scolptr, svals, svalptr, stupptr)
    for s in range(nsdc):
        for q in range(scolptr[s], scolptr[s + 1]):
            if not np.isfinite(base[scols[q]]):
                fin[nd + ns + s] = False
    for q in range(ccols.shape[0]):
        if not np.isfinite(base[ccols[q]]):
            fin[nd + ns + nsdc] = False
    return fin


@numba.njit(**_STRICT)
def _finite_tuples(fin, first, colptr, vals, valptr, tupptr):
    for g in range(colptr.shape[0] - 1):
        width = colptr[g + 1] - colptr[g]
        for t in range(tupptr[g + 1] - tupptr[g]):
            at = valptr[g] + t * width
            for q in range(width):
                if not np.isfinite(vals[at + q]):
                    fin[first + tupptr[g] + t] = False


@numba.njit(**_STRICT)
def _signs(flags, row, y, i):
    """Record the signs of row i's Y values (for a tuple with inf or NaN; see ``_times``)."""
    for r in range(y.shape[1]):
        v = y[i, r]
        flags[row, r] |= np.uint8(1 if v > 0 else (2 if v < 0 else 4))


@numba.njit(**_STRICT)
def _add_run(acc, flags, fin, row, y, start, stop):
    """y's rows start..stop-1 added into accumulator row ``row``."""
    for r in range(y.shape[1]):
        total = 0.0
        for i in range(np.uint64(start), np.uint64(stop)):
            total += y[i, r]
        acc[row, r] += total
    if not fin[row]:
        for i in range(start, stop):
            _signs(flags, row, y, i)


@numba.njit(**_STRICT)
def _scatter_sdc(acc, flags, fin, y, lo, hi, soff, first, last, scodes, tuples, end, default):
    """One SDC group's rows lo..hi-1: a row at an offset into its tuple's row (from ``tuples``),
    every other row into the default's."""
    k = y.shape[1]
    p = first_at_or_after(soff, first, last, lo)
    if k == 1 and fin[default] and fin[tuples:end].all():  # the common case, without checks
        total = 0.0
        for i in range(lo, hi):
            if p < last and soff[p] == i:
                acc[tuples + np.int64(scodes[p]), 0] += y[i - lo, 0]
                p += 1
            else:
                total += y[i - lo, 0]
        acc[default, 0] += total
        return
    for i in range(lo, hi):
        row = default
        if p < last and soff[p] == i:
            row = tuples + np.int64(scodes[p])
            p += 1
        for r in range(k):
            acc[row, r] += y[i - lo, r]
        if not fin[row]:
            _signs(flags, row, y, i - lo)


@numba.njit(**_STRICT)
def _scatter_ddc(acc, flags, fin, y, lo, hi, codes, first, tupptr):
    k = y.shape[1]
    ulo = np.uint64(lo)
    for q in range(codes.shape[1]):
        at = np.uint64(tupptr[first + q])
        finite = fin[tupptr[first + q] : tupptr[first + q + 1]].all()
        if finite and k == 1:  # the common case, without per-row checks
            for i in range(ulo, np.uint64(hi)):
                acc[at + np.uint64(codes[i, q]), 0] += y[i - ulo, 0]
            continue
        for i in range(ulo, np.uint64(hi)):
            row = at + np.uint64(codes[i, q])
            for r in range(k):  # written out, not a call: numba does not inline those
                acc[row, r] += y[i - ulo, r]
            if not finite and not fin[row]:
                _signs(flags, row, y, i - ulo)
    return first + codes.shape[1]


@numba.njit(**_STRICT)
def scatter_block(y, lo, hi, acc, flags, fin, ucacc, base, c8, c16, c32, dcols, dcolptr, dvals,
                  dvalptr, soff, scodes, sptr, scols, scolptr, svals, svalptr, ucols, uc, dtupptr,
                  dcounts, stupptr, scounts, ccols):  # fmt: skip
    """Rows lo..hi-1 of X.T @ Y (``y[i - lo]``: row i of Y): each row's y added into the rows of
    the tuples it holds; uncompressed columns multiplied out."""
    nd, ns = dtupptr[dtupptr.shape[0] - 1], stupptr[stupptr.shape[0] - 1]
    nsdc = scolptr.shape[0] - 1
    k = y.shape[1]
    g = _scatter_ddc(acc, flags, fin, y, lo, hi, c8, 0, dtupptr)
    g = _scatter_ddc(acc, flags, fin, y, lo, hi, c16, g, dtupptr)
    _scatter_ddc(acc, flags, fin, y, lo, hi, c32, g, dtupptr)
    for s in range(nsdc):
        _scatter_sdc(acc, flags, fin, y, lo, hi, soff, sptr[s], sptr[s + 1], scodes,
                     nd + stupptr[s], nd + stupptr[s + 1], nd + ns + s)  # fmt: skip
    _add_run(acc, flags, fin, nd + ns + nsdc, y, 0, hi - lo)  # constant columns: every row
    for i in range(lo, hi):
        for q in range(ucols.shape[0]):
            v = uc[i, q]
            for r in range(k):
                ucacc[q, r] += v * y[i - lo, r]


@numba.njit(**_STRICT)
def _times(v, total, flag):
    """v times the sum of the Y values that ``total`` adds up (``flag``: their signs, recorded
    when v is not finite): what sum(v * y) gives."""
    if np.isfinite(v) or flag == 0:
        return v * total
    if np.isnan(v) or flag & 4 or flag == 3:
        return np.nan
    return v if flag == 1 else -v


@numba.njit(**_STRICT)
def _finish_tuples(out, acc, flags, first, cols, colptr, vals, valptr, tupptr, counts):
    k = out.shape[1]
    for g in range(colptr.shape[0] - 1):
        lo = colptr[g]
        width = colptr[g + 1] - lo
        for t in range(tupptr[g + 1] - tupptr[g]):
            if counts[tupptr[g] + t] == 0:
                continue
            row = first + tupptr[g] + t
            at = valptr[g] + t * width
            for q in range(width):
                j = cols[lo + q]
                for r in range(k):
                    out[j, r] += _times(vals[at + q], acc[row, r], flags[row, r])


@numba.njit(**_STRICT)
def finish(acc_chunks, flag_chunks, uc_chunks, m, base, c8, c16, c32, dcols, dcolptr, dvals,
           dvalptr, soff, scodes, sptr, scols, scolptr, svals, svalptr, ucols, uc, dtupptr,
           dcounts, stupptr, scounts, ccols):  # fmt: skip
    """X.T @ Y from the chunks' accumulators (combined in chunk order)."""
    nchunk, nrows, k = acc_chunks.shape
    acc = np.zeros((nrows, k))
    flags = np.zeros((nrows, k), dtype=np.uint8)
    ucacc = np.zeros((ucols.shape[0], k))
    for c in range(nchunk):
        for row in range(nrows):
            for r in range(k):
                acc[row, r] += acc_chunks[c, row, r]
                flags[row, r] |= flag_chunks[c, row, r]
        for q in range(ucols.shape[0]):
            for r in range(k):
                ucacc[q, r] += uc_chunks[c, q, r]
    out = np.zeros((base.shape[0], k))
    nd, ns = dtupptr[dtupptr.shape[0] - 1], stupptr[stupptr.shape[0] - 1]
    nsdc = scolptr.shape[0] - 1
    _finish_tuples(out, acc, flags, 0, dcols, dcolptr, dvals, dvalptr, dtupptr, dcounts)
    _finish_tuples(out, acc, flags, nd, scols, scolptr, svals, svalptr, stupptr, scounts)
    for s in range(nsdc):
        if m - scounts[stupptr[s] : stupptr[s + 1]].sum() == 0:
            continue  # no row holds the default
        for q in range(scolptr[s], scolptr[s + 1]):
            j = scols[q]
            for r in range(k):
                out[j, r] += _times(base[j], acc[nd + ns + s, r], flags[nd + ns + s, r])
    if m > 0:
        for q in range(ccols.shape[0]):
            j = ccols[q]
            for r in range(k):
                out[j, r] += _times(base[j], acc[nd + ns + nsdc, r], flags[nd + ns + nsdc, r])
    for q in range(ucols.shape[0]):
        for r in range(k):
            out[ucols[q], r] += ucacc[q, r]
    return out
