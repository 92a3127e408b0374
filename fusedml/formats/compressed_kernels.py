"""numba kernels over blocks of rows of a compressed matrix: decoding them into a dense tile,
their products with a matrix, their share of a transposed product. The reference interpreter's
products use them (``compressed_ops.py``), and generated kernels call them
(``fusedml/codegen/compressed.py``, ``cla_row.py``).

Their arguments are a matrix's packed arrays in ``arrays``' order (``P`` below). Generated kernels
set up their calls after ``import fusedml.formats.compressed_kernels as cla`` and make them through
``native``: the C entry point of a wrapper taking int64 words only (arrays as addresses and
shapes, the matrix as the address of its ``words``), compiled once per machine (numba's cache),
so a kernel's compile never includes these functions' machine code (linked into each kernel, they
made a compressed Row kernel take 6 s to compile). They work on blocks of rows, not single rows:
a call per row cost more than the row's work. Kernel sources carry ``SOURCE_DIGEST``, so a change
here is a new kernel.
"""

from __future__ import annotations

import hashlib
import weakref
from pathlib import Path

import numba
import numpy as np

from fusedml import _native

SOURCE_DIGEST = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]


NAMES = (
    "base",
    "c8",
    "c16",
    "c32",
    "dcols",
    "dcolptr",
    "dvals",
    "dvalptr",
    "soff",
    "scodes",
    "sptr",
    "scols",
    "scolptr",
    "svals",
    "svalptr",
    "ucols",
    "uc",
    "dtupptr",
    "dcounts",
    "stupptr",
    "scounts",
    "ccols",
    "rends",
    "rcodes",
    "rptr",
)  # fmt: skip  (``arrays``' entries, as generated kernels name them)


def arrays(x) -> list:
    """A ``CompressedMatrix``'s packed arrays, in the order these kernels take them."""
    ddc, sdc = x.ddc, x.sdc
    return [
        x.base, *x.codes, ddc.cols, ddc.colptr, ddc.values, ddc.valptr, x.sdc_offsets,
        x.sdc_codes, x.sdc_ptr, sdc.cols, sdc.colptr, sdc.values, sdc.valptr, x.uc_cols, x.uc,
        ddc.tupptr, ddc.counts, sdc.tupptr, sdc.counts, x.const_cols, x.rle_ends, x.rle_codes,
        x.rle_ptr,
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
    for q in range(codes.shape[0]):
        g = first + q
        start, width = np.uint64(colptr[g]), np.uint64(colptr[g + 1] - colptr[g])
        at0 = np.uint64(valptr[g])
        for i in range(np.uint64(lo), np.uint64(hi)):
            at = at0 + np.uint64(codes[q, i]) * width
            for e in range(width):
                tile[i - np.uint64(lo), np.uint64(cols[start + e])] = vals[at + e]
    return first + codes.shape[0]


@numba.njit(**_STRICT)
def decode_block(tile, lo, hi, base, c8, c16, c32, dcols, dcolptr, dvals, dvalptr, soff, scodes,
                 sptr, scols, scolptr, svals, svalptr, ucols, uc, dtupptr, dcounts, stupptr,
                 scounts, ccols, rends, rcodes, rptr):  # fmt: skip
    """tile[i - lo] = row i of the matrix, for the rows lo..hi-1."""
    for i in range(hi - lo):
        for j in range(base.shape[0]):
            tile[i, j] = base[j]
    g = _decode_ddc(tile, lo, hi, c8, 0, dcols, dcolptr, dvals, dvalptr)
    g = _decode_ddc(tile, lo, hi, c16, g, dcols, dcolptr, dvals, dvalptr)
    g = _decode_ddc(tile, lo, hi, c32, g, dcols, dcolptr, dvals, dvalptr)
    for r in range(rptr.shape[0] - 1):
        start, width = dcolptr[g + r], dcolptr[g + r + 1] - dcolptr[g + r]
        p = first_at_or_after(rends, rptr[r], rptr[r + 1], lo + 1)  # the run holding row lo
        while p < rptr[r + 1] and _run_start(rends, rptr[r], p, lo) < hi:
            at = dvalptr[g + r] + np.int64(rcodes[p]) * width
            for i in range(_run_start(rends, rptr[r], p, lo), min(rends[p], hi)):
                for e in range(width):
                    tile[i - lo, dcols[start + e]] = dvals[at + e]
            p += 1
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
                ccols, rends, rcodes, rptr):  # fmt: skip
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
    paired = codes.shape[0] // 2 * 2
    for q in range(0, paired, 2):  # two groups per pass: half the loads and stores of out
        at, bt = np.uint64(tupptr[first + q]), np.uint64(tupptr[first + q + 1])
        if k == 1:
            for i in range(ulo, np.uint64(hi)):
                two = pd[at + np.uint64(codes[q, i]), 0] + pd[bt + np.uint64(codes[q + 1, i]), 0]
                out[i - ulo, 0] += two
            continue
        for i in range(ulo, np.uint64(hi)):
            a, b = at + np.uint64(codes[q, i]), bt + np.uint64(codes[q + 1, i])
            for r in range(k):
                out[i - ulo, r] += pd[a, r] + pd[b, r]
    for q in range(paired, codes.shape[0]):
        at = np.uint64(tupptr[first + q])
        if k == 1:
            for i in range(ulo, np.uint64(hi)):
                out[i - ulo, 0] += pd[at + np.uint64(codes[q, i]), 0]
        else:
            for i in range(ulo, np.uint64(hi)):
                row = at + np.uint64(codes[q, i])
                for r in range(k):
                    out[i - ulo, r] += pd[row, r]
    return first + codes.shape[0]


@numba.njit(**_STRICT)
def _add_sdc(out, lo, hi, soff, first, last, scodes, tuples, ps, pdef):
    """One SDC group's products for the rows lo..hi-1: its tuples' at its offsets, the default's
    in the runs between them (a loop per run, not a test per row)."""
    k = out.shape[1]
    p = first_at_or_after(soff, first, last, lo)
    # out starts at +0.0 or a value, and sums to which +0.0 is added never give -0.0: adding a
    # +0.0 default changes nothing, so its runs are skipped
    zero = True
    for r in range(k):
        zero = zero and pdef[r] == 0.0 and not np.signbit(pdef[r])
    i = lo
    while p < last and soff[p] < hi:
        o = soff[p]
        if not zero:
            for j in range(i - lo, o - lo):
                for r in range(k):
                    out[j, r] += pdef[r]
        row = tuples + np.int64(scodes[p])
        for r in range(k):
            out[o - lo, r] += ps[row, r]
        i = o + 1
        p += 1
    if not zero:
        for j in range(i - lo, hi - lo):
            for r in range(k):
                out[j, r] += pdef[r]


@numba.njit(**_STRICT)
def _run_start(rends, first, p, lo):
    """Where run p (of an RLE group whose runs start at position ``first``) begins, from row lo
    on."""
    return lo if p == first else max(lo, rends[p - 1])


@numba.njit(**_STRICT)
def _add_rle(out, lo, hi, rends, rcodes, first, last, at, pd):
    """One RLE group's products for the rows lo..hi-1: its tuple's, run by run."""
    k = out.shape[1]
    p = first_at_or_after(rends, first, last, lo + 1)  # the run holding row lo
    while p < last and _run_start(rends, first, p, lo) < hi:
        row = at + np.int64(rcodes[p])
        for i in range(_run_start(rends, first, p, lo) - lo, min(rends[p], hi) - lo):
            for r in range(k):
                out[i, r] += pd[row, r]
        p += 1


@numba.njit(**_STRICT)
def lookup_block(out, lo, hi, pd, ps, pdef, pc, b, base, c8, c16, c32, dcols, dcolptr, dvals,
                 dvalptr, soff, scodes, sptr, scols, scolptr, svals, svalptr, ucols, uc, dtupptr,
                 dcounts, stupptr, scounts, ccols, rends, rcodes, rptr):  # fmt: skip
    """out[i - lo] = row i of X times b for the rows lo..hi-1, from the tuples' products."""
    k = out.shape[1]
    for i in range(hi - lo):
        for r in range(k):
            out[i, r] = pc[r]
    g = _add_ddc(out, lo, hi, c8, 0, dtupptr, pd)
    g = _add_ddc(out, lo, hi, c16, g, dtupptr, pd)
    g = _add_ddc(out, lo, hi, c32, g, dtupptr, pd)
    for r in range(rptr.shape[0] - 1):
        _add_rle(out, lo, hi, rends, rcodes, rptr[r], rptr[r + 1], dtupptr[g + r], pd)
    for s in range(sptr.shape[0] - 1):
        _add_sdc(out, lo, hi, soff, sptr[s], sptr[s + 1], scodes, stupptr[s], ps, pdef[s])
    for i in range(lo, hi):
        for q in range(ucols.shape[0]):
            v = uc[i, q]
            j = ucols[q]
            for r in range(k):
                out[i - lo, r] += v * b[j, r]


@numba.njit(**_STRICT)
def accumulator_rows(base, c8, c16, c32, dcols, dcolptr, dvals, dvalptr, soff, scodes, sptr,
                     scols, scolptr, svals, svalptr, ucols, uc, dtupptr, dcounts, stupptr,
                     scounts, ccols, rends, rcodes, rptr):  # fmt: skip
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
def flag_rows(fin):
    """Rows of the sign flags X.T @ Y needs: one per accumulator row if a tuple is not finite,
    else none (the flags are only read for such tuples)."""
    return 0 if fin.all() else fin.shape[0]


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
def _scatter_sdc_dense(acc, y, lo, hi, soff, p, stop, scodes, tuples, end, default, part):
    """``_scatter_sdc`` for an SDC group holding many of the rows lo..hi-1: their codes are
    written out (the default as the last code) and added up as a DDC group's are, without a
    branch per row or per run."""
    ntup = end - tuples
    codes = np.full((1, hi - lo), ntup, dtype=np.uint16)
    for q in range(p, stop):
        codes[0, soff[q] - lo] = scodes[q]
    sums = np.zeros((ntup + 1, 1))
    _scatter_small(sums, y, 0, hi - lo, codes, 0, np.uint64(0), ntup + 1, part)
    for t in range(ntup):
        acc[tuples + t, 0] += sums[t, 0]
    acc[default, 0] += sums[ntup, 0]


@numba.njit(**_STRICT)
def _scatter_sdc(acc, flags, fin, y, lo, hi, soff, first, last, scodes, tuples, end, default,
                 part):  # fmt: skip
    """One SDC group's rows lo..hi-1: a row at an offset into its tuple's row (from ``tuples``),
    every other row into the default's."""
    k = y.shape[1]
    p = first_at_or_after(soff, first, last, lo)
    finite = fin[default] and fin[tuples:end].all()
    stop = first_at_or_after(soff, p, last, hi)
    if k == 1 and finite and end - tuples < SMALL and 8 * (stop - p) > hi - lo:
        _scatter_sdc_dense(acc, y, lo, hi, soff, p, stop, scodes, tuples, end, default, part)
        return
    if k == 1 and finite:  # the common case, without checks
        total, i = 0.0, lo
        while p < last and soff[p] < hi:  # a loop per run of default rows, not a test per row
            o = soff[p]
            for j in range(np.uint64(i - lo), np.uint64(o - lo)):
                total += y[j, 0]
            acc[tuples + np.int64(scodes[p]), 0] += y[o - lo, 0]
            i = o + 1
            p += 1
        for j in range(np.uint64(i - lo), np.uint64(hi - lo)):
            total += y[j, 0]
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


# Rows in a run of one code add into one accumulator, each add waiting for the previous one
# (store-to-load forwarding, ~5 cycles); groups with at most SMALL tuples add into LANES
# interleaved partial accumulators instead (4x faster on sorted columns), summed after the block.
SMALL, LANES = 1024, 8


@numba.njit(**_STRICT)
def _scatter_small(acc, y, lo, hi, codes, q, at, ntup, part):
    """acc[at + t] += the y of the rows lo..hi-1 whose code in row q of codes is t (y with one
    column)."""
    ulo, lanes = np.uint64(lo), np.uint64(LANES)
    part[: ntup * lanes] = 0.0
    whole = ulo + (np.uint64(hi) - ulo) // lanes * lanes
    for i in range(ulo, whole, lanes):
        for u in range(lanes):
            part[np.uint64(codes[q, i + u]) * lanes + u] += y[i + u - ulo, 0]
    for i in range(whole, np.uint64(hi)):
        part[np.uint64(codes[q, i]) * lanes] += y[i - ulo, 0]
    for t in range(np.uint64(ntup)):
        total = 0.0
        for u in range(lanes):
            total += part[t * lanes + u]
        acc[at + t, 0] += total


@numba.njit(**_STRICT)
def _scatter_column(acc, flags, fin, y, lo, hi, codes, q, at, end, part):
    """The rows lo..hi-1 of one DDC group (codes in column q, accumulator rows at..end-1)."""
    k = y.shape[1]
    ulo, at = np.uint64(lo), np.uint64(at)
    finite = fin[at:end].all()
    if finite and k == 1 and end - at <= SMALL:
        _scatter_small(acc, y, lo, hi, codes, q, at, end - at, part)
    elif finite and k == 1:  # the common case, without per-row checks
        for i in range(ulo, np.uint64(hi)):
            acc[at + np.uint64(codes[q, i]), 0] += y[i - ulo, 0]
    else:
        for i in range(ulo, np.uint64(hi)):
            row = at + np.uint64(codes[q, i])
            for r in range(k):  # written out, not a call: numba does not inline those
                acc[row, r] += y[i - ulo, r]
            if not finite and not fin[row]:
                _signs(flags, row, y, i - ulo)


@numba.njit(**_STRICT)
def _scatter_ddc(acc, flags, fin, y, lo, hi, codes, first, tupptr, part, limit):
    for q in range(codes.shape[0]):
        at, end = tupptr[first + q], tupptr[first + q + 1]
        if end - at <= limit:
            _scatter_column(acc, flags, fin, y, lo, hi, codes, q, at, end, part)
    return first + codes.shape[0]


# A DDC group with more tuples than BIG has an accumulator too large to keep per row chunk
# (each chunk's copy starts cold in cache: 2x the scatter's time on 40k-tuple groups); in
# generated kernels such groups add the rows of all chunks into one accumulator instead, one
# group per thread (``big_groups``, ``scatter_group``).
BIG = 16384
ALL = np.iinfo(np.int64).max  # scatter_block's limit when it adds every group


@numba.njit(**_STRICT)
def big_groups(base, c8, c16, c32, dcols, dcolptr, dvals, dvalptr, soff, scodes, sptr, scols,
               scolptr, svals, svalptr, ucols, uc, dtupptr, dcounts, stupptr, scounts,
               ccols, rends, rcodes, rptr):  # fmt: skip
    """The DDC groups with codes (not runs) and more than BIG tuples."""
    coded = c8.shape[0] + c16.shape[0] + c32.shape[0]
    return np.flatnonzero(np.diff(dtupptr)[:coded] > BIG)


@numba.njit(**_STRICT)
def clear_rows(acc, limit, base, c8, c16, c32, dcols, dcolptr, dvals, dvalptr, soff, scodes, sptr,
               scols, scolptr, svals, svalptr, ucols, uc, dtupptr, dcounts, stupptr, scounts,
               ccols, rends, rcodes, rptr):  # fmt: skip
    """Zero the accumulator rows ``scatter_block(..., limit, ...)`` adds into. The others are
    never touched, so a chunk's accumulator is allocated empty and the big groups' rows (most of
    it, and never read) cost no memory traffic."""
    lo = 0
    for g in range(c8.shape[0] + c16.shape[0] + c32.shape[0]):  # RLE groups: always added
        if dtupptr[g + 1] - dtupptr[g] > limit:
            acc[lo : dtupptr[g]] = 0.0
            lo = dtupptr[g + 1]
    acc[lo:] = 0.0


@numba.njit(**_STRICT)
def scatter_group(y, g, acc, flags, fin, base, c8, c16, c32, dcols, dcolptr, dvals, dvalptr,
                  soff, scodes, sptr, scols, scolptr, svals, svalptr, ucols, uc, dtupptr,
                  dcounts, stupptr, scounts, ccols, rends, rcodes, rptr):  # fmt: skip
    """Every row of X.T @ Y (``y``: all rows of Y) for DDC group g alone."""
    n8, n16, m = c8.shape[0], c16.shape[0], y.shape[0]
    at, end, part = dtupptr[g], dtupptr[g + 1], np.empty(0)
    if g < n8:
        _scatter_column(acc, flags, fin, y, 0, m, c8, g, at, end, part)
    elif g < n8 + n16:
        _scatter_column(acc, flags, fin, y, 0, m, c16, g - n8, at, end, part)
    else:
        _scatter_column(acc, flags, fin, y, 0, m, c32, g - n8 - n16, at, end, part)


@numba.njit(parallel=True, **_STRICT)
def scatter_groups(y, big, acc, flags, fin, base, c8, c16, c32, dcols, dcolptr, dvals, dvalptr,
                   soff, scodes, sptr, scols, scolptr, svals, svalptr, ucols, uc, dtupptr,
                   dcounts, stupptr, scounts, ccols, rends, rcodes, rptr):  # fmt: skip
    """``scatter_group`` for each group in ``big``, a group per thread (called from a kernel's
    ``finish``: a parallel loop compiled once, not in each generated kernel)."""
    for b in numba.prange(big.shape[0]):
        scatter_group(y, big[b], acc, flags, fin, base, c8, c16, c32, dcols, dcolptr, dvals,
                      dvalptr, soff, scodes, sptr, scols, scolptr, svals, svalptr, ucols, uc,
                      dtupptr, dcounts, stupptr, scounts, ccols, rends, rcodes, rptr)  # fmt: skip


@numba.njit(**_STRICT)
def scatter_block(y, lo, hi, acc, flags, fin, ucacc, limit, base, c8, c16, c32, dcols, dcolptr,
                  dvals, dvalptr, soff, scodes, sptr, scols, scolptr, svals, svalptr, ucols, uc,
                  dtupptr, dcounts, stupptr, scounts, ccols, rends, rcodes, rptr):  # fmt: skip
    """Rows lo..hi-1 of X.T @ Y (``y[i - lo]``: row i of Y): each row's y added into the rows of
    the tuples it holds, except for DDC groups of more than ``limit`` tuples; uncompressed
    columns multiplied out."""
    nd, ns = dtupptr[dtupptr.shape[0] - 1], stupptr[stupptr.shape[0] - 1]
    nsdc = scolptr.shape[0] - 1
    k = y.shape[1]
    part = np.empty(SMALL * LANES)
    g = _scatter_ddc(acc, flags, fin, y, lo, hi, c8, 0, dtupptr, part, limit)
    g = _scatter_ddc(acc, flags, fin, y, lo, hi, c16, g, dtupptr, part, limit)
    g = _scatter_ddc(acc, flags, fin, y, lo, hi, c32, g, dtupptr, part, limit)
    for r in range(rptr.shape[0] - 1):  # run by run
        p = first_at_or_after(rends, rptr[r], rptr[r + 1], lo + 1)
        while p < rptr[r + 1] and _run_start(rends, rptr[r], p, lo) < hi:
            row = dtupptr[g + r] + np.int64(rcodes[p])
            _add_run(acc, flags, fin, row, y, _run_start(rends, rptr[r], p, lo) - lo,
                     min(rends[p], hi) - lo)  # fmt: skip
            p += 1
    for s in range(nsdc):
        _scatter_sdc(acc, flags, fin, y, lo, hi, soff, sptr[s], sptr[s + 1], scodes,
                     nd + stupptr[s], nd + stupptr[s + 1], nd + ns + s, part)  # fmt: skip
    if ccols.shape[0]:  # constant columns: every row
        _add_run(acc, flags, fin, nd + ns + nsdc, y, 0, hi - lo)
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
                j, v = cols[lo + q], vals[at + q]
                for r in range(k):
                    if np.isfinite(v):  # _times' first case, without its call
                        out[j, r] += v * acc[row, r]
                    else:
                        out[j, r] += _times(v, acc[row, r], flags[row, r])


@numba.njit(**_STRICT)
def finish(acc_chunks, flag_chunks, uc_chunks, accbig, flagsbig, big, m, base, c8, c16, c32,
           dcols, dcolptr, dvals, dvalptr, soff, scodes, sptr, scols, scolptr, svals, svalptr,
           ucols, uc, dtupptr, dcounts, stupptr, scounts, ccols, rends, rcodes, rptr):  # fmt: skip
    """X.T @ Y from the chunks' accumulators (combined in chunk order) and, for the DDC groups
    in ``big``, from ``accbig``. The flags may have no rows when every tuple is finite
    (``flag_rows``)."""
    nchunk, nrows, k = acc_chunks.shape
    acc = np.zeros((nrows, k))
    flags = np.zeros((nrows, k), dtype=np.uint8)
    # the accumulator rows kept per chunk: runs between the big groups' rows
    starts, stops = [0], []
    for b in range(big.shape[0]):
        lo, hi = dtupptr[big[b]], dtupptr[big[b] + 1]
        stops.append(lo)
        starts.append(hi)
        acc[lo:hi] = accbig[lo:hi]
        if flagsbig.shape[0]:
            flags[lo:hi] = flagsbig[lo:hi]
    stops.append(nrows)
    ucacc = np.zeros((ucols.shape[0], k))
    for c in range(nchunk):
        for run in range(len(starts)):
            for row in range(starts[run], stops[run]):
                for r in range(k):
                    acc[row, r] += acc_chunks[c, row, r]
                if flag_chunks.shape[1]:
                    for r in range(k):
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


# -- the native entry points -------------------------------------------------------------------
# ``words(x)`` is the matrix as int64 words, each array's address and shape in ``arrays``' order,
# with these dtypes (offsets and SDC codes widened: one compiled wrapper serves every matrix)
LAYOUT = (
    ("float64", 1), ("uint8", 2), ("uint16", 2), ("uint32", 2), ("int64", 1), ("int64", 1),
    ("float64", 1), ("int64", 1), ("int64", 1), ("uint32", 1), ("int64", 1), ("int64", 1),
    ("int64", 1), ("float64", 1), ("int64", 1), ("int64", 1), ("float64", 2), ("int64", 1),
    ("int64", 1), ("int64", 1), ("int64", 1), ("int64", 1), ("int64", 1), ("uint32", 1),
    ("int64", 1),
)  # fmt: skip
WORDS = sum(1 + ndim for _, ndim in LAYOUT)
_words: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def words(x) -> np.ndarray:
    """The compressed matrix ``x`` as int64 words (see ``LAYOUT``), made once per matrix and kept
    with the arrays they point into."""
    found = _words.get(x)
    if found is None:
        parts = [
            np.ascontiguousarray(a, dtype=dtype)
            for a, (dtype, _) in zip(arrays(x), LAYOUT, strict=True)
        ]
        packed = []
        for a in parts:
            packed += [a.ctypes.data, *a.shape]
        found = _words[x] = (np.array(packed, dtype=np.int64), parts)
    return found[0]


@numba.njit(**_STRICT)
def _vector(w, at, dtype):
    return numba.carray(_native.pointer(w[at]), w[at + 1], dtype)


@numba.njit(**_STRICT)
def _matrix(w, at, dtype):
    return numba.carray(_native.pointer(w[at]), (w[at + 1], w[at + 2]), dtype)


@numba.njit(**_STRICT)
def _unpack(address):
    """The arrays of a matrix's ``words`` (LAYOUT order)."""
    w = numba.carray(_native.pointer(address), WORDS, np.int64)
    return (
        _vector(w, 0, np.float64), _matrix(w, 2, np.uint8), _matrix(w, 5, np.uint16),
        _matrix(w, 8, np.uint32), _vector(w, 11, np.int64), _vector(w, 13, np.int64),
        _vector(w, 15, np.float64), _vector(w, 17, np.int64), _vector(w, 19, np.int64),
        _vector(w, 21, np.uint32), _vector(w, 23, np.int64), _vector(w, 25, np.int64),
        _vector(w, 27, np.int64), _vector(w, 29, np.float64), _vector(w, 31, np.int64),
        _vector(w, 33, np.int64), _matrix(w, 35, np.float64), _vector(w, 38, np.int64),
        _vector(w, 40, np.int64), _vector(w, 42, np.int64), _vector(w, 44, np.int64),
        _vector(w, 46, np.int64), _vector(w, 48, np.int64), _vector(w, 50, np.uint32),
        _vector(w, 52, np.int64),
    )  # fmt: skip


@numba.njit(**_STRICT)
def _f64(address, rows, cols):
    return numba.carray(_native.pointer(address), (rows, cols), np.float64)


@numba.njit(**_STRICT)
def native_decode_block(tile, rows, cols, lo, hi, x):
    """``decode_block`` into the float64 tile at address ``tile``."""
    decode_block(_f64(tile, rows, cols), lo, hi, *_unpack(x))
    return 1


@numba.njit(**_STRICT)
def native_lookup_block(out, rows, k, lo, hi, pre, b, b_rows, x):
    """``lookup_block``; ``pre``: the words of ``premultiply``'s four arrays."""
    p = numba.carray(_native.pointer(pre), 11, np.int64)
    pd, ps, pdef = _matrix(p, 0, np.float64), _matrix(p, 3, np.float64), _matrix(p, 6, np.float64)
    pc = _vector(p, 9, np.float64)
    lookup_block(_f64(out, rows, k), lo, hi, pd, ps, pdef, pc, _f64(b, b_rows, k), *_unpack(x))
    return 1


@numba.njit(**_STRICT)
def native_clear_rows(acc, rows, cols, limit, x):
    clear_rows(_f64(acc, rows, cols), limit, *_unpack(x))
    return 1


@numba.njit(**_STRICT)
def native_scatter_block(y, rows, k, lo, hi, acc, acc_rows, flags, flag_rows, fin, fin_rows,
                         ucacc, uc_rows, limit, x):  # fmt: skip
    """``scatter_block`` (every array k columns wide but ``fin``)."""
    flags_array = numba.carray(_native.pointer(flags), (flag_rows, k), np.uint8)
    fin_array = numba.carray(_native.pointer(fin), fin_rows, np.bool_)
    scatter_block(_f64(y, rows, k), lo, hi, _f64(acc, acc_rows, k), flags_array, fin_array,
                  _f64(ucacc, uc_rows, k), limit, *_unpack(x))  # fmt: skip
    return 1


_NATIVE = {
    "decode_block": (native_decode_block, 6),
    "lookup_block": (native_lookup_block, 9),
    "clear_rows": (native_clear_rows, 5),
    "scatter_block": (native_scatter_block, 15),
}


def native(name: str) -> int:
    """The address of the native entry point of ``name`` (``int64 f(int64, ...)``)."""
    fn, nargs = _NATIVE[name]
    return _native.address(fn, nargs)


def premultiplied_words(pre: tuple) -> tuple[np.ndarray, tuple]:
    """``premultiply``'s result as int64 words for ``native_lookup_block`` (and the arrays)."""
    parts = tuple(np.ascontiguousarray(a, dtype=np.float64) for a in pre)
    packed = []
    for a in parts:
        packed += [a.ctypes.data, *a.shape]
    return np.array(packed, dtype=np.int64), parts
