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

from fusedml.formats import compressed_kernels as kernels
from fusedml.formats.compressed import CompressedMatrix, DdcGroup, RleGroup, SdcGroup

_UFUNCS = {"sum": np.add, "min": np.minimum, "max": np.maximum}


def _used(g: DdcGroup | RleGroup | SdcGroup) -> tuple[np.ndarray, np.ndarray]:
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
    ufunc = _UFUNCS[how]
    out = np.full(m, 0.0 if how == "sum" else np.nan)
    with np.errstate(all="ignore"):
        if n:
            const = x.base[x.const_cols]
            out[x.const_cols] = const * n if how == "sum" else const
        for g in x.groups:
            if isinstance(g, DdcGroup | RleGroup | SdcGroup):
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
    ufunc = _UFUNCS[how]
    out = np.full(n, 0.0 if how == "sum" else np.nan)
    with np.errstate(all="ignore"):
        if len(x.const_cols):
            out[:] = ufunc.reduce(x.base[x.const_cols])
        first = not len(x.const_cols)
        for g in x.groups:
            if isinstance(g, DdcGroup):
                part = ufunc.reduce(g.dictionary, axis=1)[g.codes]
            elif isinstance(g, RleGroup):
                part = ufunc.reduce(g.dictionary, axis=1)[g.row_codes()]
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
    ufunc = _UFUNCS[how]
    with np.errstate(all="ignore"):
        return float(ufunc.reduce(cols)) if len(cols) else 0.0


# -- products ----------------------------------------------------------------------------------
def right_matmul(x: CompressedMatrix, b: np.ndarray) -> np.ndarray:
    """x @ b for a dense (m, k) b: each tuple's product with b once, then per row the sum of its
    tuples' products (``compressed_kernels.lookup_block``)."""
    n = x.shape[0]
    b = np.ascontiguousarray(b, dtype=np.float64)
    parts = kernels.arrays(x)
    pre = kernels.premultiply(b, *parts)
    out = np.empty((n, b.shape[1]))
    kernels.lookup_block(out, 0, n, *pre, b, *parts)
    return out


def left_matmul(a: np.ndarray, x: CompressedMatrix) -> np.ndarray:
    """a @ x for a dense (k, n) a, as (x.T @ a.T).T: a's columns summed per tuple, then each
    tuple's values times its sums (``compressed_kernels.scatter_block``, ``finish``; a tuple with
    inf or NaN gives what the dense product gives)."""
    y = np.ascontiguousarray(np.asarray(a, dtype=np.float64).T)
    n, k = y.shape
    parts = kernels.arrays(x)
    fin = kernels.accumulator_rows(*parts)
    acc = np.zeros((1, len(fin), k))
    flags = np.zeros((1, len(fin), k), dtype=np.uint8)
    ucacc = np.zeros((1, len(x.uc_cols), k))
    kernels.scatter_block(y, 0, n, acc[0], flags[0], fin, ucacc[0], kernels.ALL, *parts)
    none = np.zeros((0, k))
    out = kernels.finish(acc, flags, ucacc, none, none.astype(np.uint8), np.zeros(0, np.int64),
                         n, *parts)  # fmt: skip
    return np.ascontiguousarray(out.T)
