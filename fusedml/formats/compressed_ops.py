"""Operations on compressed matrices that run on their groups, never on a decompressed copy.

Each works group by group: a DDC group contributes through its dictionary and codes, an SDC
group through its default tuple and the rows that hold another one, constant columns through
their one value, uncompressed columns as dense data. Arithmetic is the dense matrix's except for
the order of additions (a tuple's contribution is computed once and weighted by its count).
Tuples no row holds (count 0) contribute nothing, so a 0 * inf of an unused tuple never shows.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from fusedml.formats.compressed import CompressedMatrix, DdcGroup, SdcGroup


def _default_rows(x: CompressedMatrix, g: SdcGroup) -> np.ndarray:
    """Rows of an SDC group that hold its default tuple."""
    mask = np.ones(x.shape[0], dtype=bool)
    mask[g.offsets] = False
    return mask


def _used(g: DdcGroup | SdcGroup) -> tuple[np.ndarray, np.ndarray]:
    """(dictionary, counts) of the tuples some row holds."""
    keep = g.counts > 0
    if keep.all():
        return g.dictionary, g.counts
    return g.dictionary[keep], g.counts[keep]


def map_values(x: CompressedMatrix, f: Callable[[np.ndarray], np.ndarray]) -> CompressedMatrix:
    """f applied to every value (f elementwise): the same codes and offsets, new dictionaries."""
    with np.errstate(all="ignore"):
        mapped = [f(v) for v in (x.base, x.ddc.values, x.sdc.values, x.uc)]
    return x.with_values(*(np.ascontiguousarray(v, dtype=np.float64) for v in mapped))


# -- aggregates --------------------------------------------------------------------------------
def col_reduce(x: CompressedMatrix, how: str) -> np.ndarray:
    """Per column sum, min or max (a 1 x m row)."""
    n, m = x.shape
    ufunc = {"sum": np.add, "min": np.minimum, "max": np.maximum}[how]
    out = np.full(m, 0.0 if how == "sum" else np.nan)
    with np.errstate(all="ignore"):
        if n:
            const = x.base[x.const_cols]
            out[x.const_cols] = const * n if how == "sum" else const
        for g in x.groups:
            if isinstance(g, DdcGroup | SdcGroup):
                out[g.cols] = _group_col_reduce(x, g, how, ufunc)
        if len(x.uc_cols):
            out[x.uc_cols] = ufunc.reduce(x.uc, axis=0)
    return out.reshape(1, m)


def _group_col_reduce(x, g, how: str, ufunc) -> np.ndarray:
    dictionary, counts = _used(g)
    parts = []
    if len(counts):
        parts.append(counts @ dictionary if how == "sum" else ufunc.reduce(dictionary, axis=0))
    if isinstance(g, SdcGroup):
        rest = x.shape[0] - int(g.counts.sum())
        if rest:
            parts.append(g.default * rest if how == "sum" else g.default)
    if not parts:
        return np.zeros(len(g.cols)) if how == "sum" else np.full(len(g.cols), np.nan)
    return ufunc.reduce(np.stack(parts), axis=0)


def row_reduce(x: CompressedMatrix, how: str) -> np.ndarray:
    """Per row sum, min or max (an n x 1 column)."""
    n = x.shape[0]
    ufunc = {"sum": np.add, "min": np.minimum, "max": np.maximum}[how]
    out = np.full(n, 0.0 if how == "sum" else np.nan)
    with np.errstate(all="ignore"):
        if len(x.const_cols):
            out[:] = ufunc.reduce(x.base[x.const_cols])
        first = not len(x.const_cols)
        for g in x.groups:
            if isinstance(g, DdcGroup):
                part = ufunc.reduce(g.dictionary, axis=1)[g.codes]
            elif isinstance(g, SdcGroup):
                part = np.full(n, ufunc.reduce(g.default))
                part[g.offsets] = ufunc.reduce(g.dictionary, axis=1)[g.codes]
            else:
                continue
            out = part if first else ufunc(out, part)
            first = False
        if len(x.uc_cols):
            part = ufunc.reduce(x.uc, axis=1)
            out = part if first else ufunc(out, part)
    return out.reshape(n, 1)


def full_reduce(x: CompressedMatrix, how: str) -> float:
    """Sum, min or max over every cell."""
    cols = col_reduce(x, how).reshape(-1)
    ufunc = {"sum": np.add, "min": np.minimum, "max": np.maximum}[how]
    with np.errstate(all="ignore"):
        return float(ufunc.reduce(cols)) if len(cols) else 0.0


# -- products ----------------------------------------------------------------------------------
def right_matmul(x: CompressedMatrix, b: np.ndarray) -> np.ndarray:
    """x @ b for a dense (m, k) b."""
    n, _ = x.shape
    k = b.shape[1]
    out = np.zeros((n, k))
    with np.errstate(all="ignore"):
        if len(x.const_cols) and n:
            out += x.base[x.const_cols] @ b[x.const_cols]
        for g in x.groups:
            if isinstance(g, DdcGroup):
                out += (g.dictionary @ b[g.cols])[g.codes]
            elif isinstance(g, SdcGroup):
                part = np.empty((n, k))
                part[:] = g.default @ b[g.cols]
                part[g.offsets] = (g.dictionary @ b[g.cols])[g.codes]
                out += part
        if len(x.uc_cols):
            out += x.uc @ b[x.uc_cols]
    return out


def _aggregate_rows(a: np.ndarray, codes: np.ndarray, d: int) -> np.ndarray:
    """(k, d): column t sums a's columns i with codes[i] == t."""
    out = np.zeros((a.shape[0], d))
    for r, row in enumerate(a):
        out[r] = np.bincount(codes, weights=row, minlength=d)
    return out


def _tuples_times(
    a: np.ndarray, codes: np.ndarray, dictionary: np.ndarray, counts: np.ndarray
) -> np.ndarray:
    """a @ dictionary[codes] for a (k, len(codes)) a. Finite tuples are weighted by their rows'
    summed a (one product per tuple); a tuple with inf or NaN is multiplied row by row, as the
    dense product does (0 * inf and inf - inf are NaN there, not in a sum of weights)."""
    finite = np.isfinite(dictionary).all(axis=1) & (counts > 0)
    out = _aggregate_rows(a, codes, len(counts))[:, finite] @ dictionary[finite]
    for t in np.flatnonzero(~finite & (counts > 0)):
        rows = np.flatnonzero(codes == t)
        out += a[:, rows] @ np.broadcast_to(dictionary[t], (len(rows), dictionary.shape[1]))
    return out


def left_matmul(a: np.ndarray, x: CompressedMatrix) -> np.ndarray:
    """a @ x for a dense (k, n) a."""
    n, m = x.shape
    out = np.zeros((a.shape[0], m))
    with np.errstate(all="ignore"):
        if len(x.const_cols) and n:
            out[:, x.const_cols] = a @ np.broadcast_to(x.base[x.const_cols], (n, len(x.const_cols)))
        for g in x.groups:
            if isinstance(g, DdcGroup):
                out[:, g.cols] = _tuples_times(a, g.codes, g.dictionary, g.counts)
            elif isinstance(g, SdcGroup):
                part = _tuples_times(a[:, g.offsets], g.codes, g.dictionary, g.counts)
                rest = _default_rows(x, g)
                if rest.any():
                    part += _tuples_times(
                        a[:, rest], np.zeros(int(rest.sum()), np.uint8), g.default[None, :],
                        np.array([int(rest.sum())]),
                    )  # fmt: skip
                out[:, g.cols] = part
        if len(x.uc_cols):
            out[:, x.uc_cols] = a @ x.uc
    return out
