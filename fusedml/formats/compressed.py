"""Compressed matrices: column groups with value-based encodings (compressed linear algebra, CLA).

A ``CompressedMatrix`` partitions its columns into groups; each group stores its distinct value
tuples once (a dictionary, one row per tuple) and, per row, which tuple it holds:

- DDC (dense dictionary coding): one code per row (uint8/uint16/uint32 by the number of tuples);
- RLE (run-length encoding): runs of rows holding one tuple (sorted or clustered columns);
- SDC (sparse dictionary coding): a default tuple, and the row offsets and codes of the rows that
  hold another one (the sparse case when the default is zero);
- constant (empty when the constant is zero): one tuple for every row;
- uncompressed: the columns' dense values.

Groups are built one by one (``DdcGroup`` ...) and packed by kind for kernels: every DDC group's
codes sit in one code matrix per code width, a row per group (kernels run group by group over a
block of rows, so each group's codes are read as one contiguous stream); every SDC
group's offsets and codes are concatenated; the constant and SDC default values form one
``base`` row that a row's decoding starts from. Dictionaries of all groups of a kind share flat
arrays (``Dictionaries``). Tuples compare by bit pattern: -0.0 and 0.0 are different tuples and
NaN payloads survive, so ``decompress`` gives back the input bit for bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from fusedml.formats import Format

CODE_TYPES = (np.uint8, np.uint16, np.uint32)  # the DDC code widths, narrowest first


def code_dtype(distinct: int) -> type:
    """The narrowest unsigned code type for this many tuples."""
    for dtype in CODE_TYPES:
        if distinct <= np.iinfo(dtype).max + 1:
            return dtype
    raise ValueError(f"{distinct} tuples do not fit 32-bit codes")


def _int64(a: Any) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.int64)


def _cols(cols: Any) -> np.ndarray:
    return _int64(cols).reshape(-1)


# -- groups, as built ------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class DdcGroup:
    """Every row's tuple by code: ``dictionary[codes[i]]`` is row i's values at ``cols``."""

    cols: np.ndarray  # int64[g]
    dictionary: np.ndarray  # float64[d, g], most frequent tuple first
    codes: np.ndarray  # unsigned [n]
    counts: np.ndarray  # int64[d]: rows holding each tuple

    kind = "DDC"

    @property
    def distinct(self) -> int:
        return self.dictionary.shape[0]


@dataclass(frozen=True, eq=False)
class RleGroup:
    """Runs of rows holding one tuple: run r is the rows ``ends[r-1]`` (0 for the first) to
    ``ends[r] - 1``, holding ``dictionary[codes[r]]`` (sorted or clustered columns)."""

    cols: np.ndarray  # int64[g]
    dictionary: np.ndarray  # float64[d, g], most frequent tuple first
    ends: np.ndarray  # integer [r], ascending, the last one n
    codes: np.ndarray  # uint32 [r]
    counts: np.ndarray  # int64[d]

    kind = "RLE"

    @property
    def distinct(self) -> int:
        return self.dictionary.shape[0]

    def row_codes(self) -> np.ndarray:
        """Every row's code."""
        return np.repeat(self.codes, np.diff(self.ends, prepend=0))


@dataclass(frozen=True, eq=False)
class SdcGroup:
    """``default`` everywhere except at rows ``offsets`` (ascending), which hold
    ``dictionary[codes]``."""

    cols: np.ndarray  # int64[g]
    default: np.ndarray  # float64[g]
    dictionary: np.ndarray  # float64[d, g]: the other tuples, most frequent first
    offsets: np.ndarray  # integer [m], ascending rows
    codes: np.ndarray  # unsigned [m]
    counts: np.ndarray  # int64[d]

    kind = "SDC"

    @property
    def distinct(self) -> int:
        return self.dictionary.shape[0] + 1


@dataclass(frozen=True, eq=False)
class ConstGroup:
    """The same tuple in every row (all zeros: an empty group)."""

    cols: np.ndarray  # int64[g]
    values: np.ndarray  # float64[g]

    @property
    def kind(self) -> str:
        return "empty" if not np.any(self.values.view(np.int64)) else "const"

    @property
    def distinct(self) -> int:
        return 1


@dataclass(frozen=True, eq=False)
class UcGroup:
    """Uncompressed columns."""

    cols: np.ndarray  # int64[g]
    values: np.ndarray  # float64[n, g]

    kind = "uncompressed"

    @property
    def distinct(self) -> int:
        return self.values.shape[0]


Group = DdcGroup | RleGroup | SdcGroup | ConstGroup | UcGroup


# -- packed, for kernels -----------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Dictionaries:
    """The dictionaries of several groups in flat arrays: group k covers columns
    ``cols[colptr[k]:colptr[k+1]]`` (g_k of them); its tuple t is the g_k values from
    ``values[valptr[k] + t * g_k]`` and is held by ``counts[tupptr[k] + t]`` rows."""

    cols: np.ndarray
    colptr: np.ndarray
    values: np.ndarray
    valptr: np.ndarray
    tupptr: np.ndarray
    counts: np.ndarray

    @classmethod
    def of(cls, groups: list) -> Dictionaries:
        def ptr(sizes: list[int]) -> np.ndarray:
            return _int64(np.concatenate(([0], np.cumsum(sizes, dtype=np.int64))))

        def cat(arrays: list[np.ndarray], dtype: type) -> np.ndarray:
            flat = [np.asarray(a, dtype=dtype).reshape(-1) for a in arrays]
            return np.ascontiguousarray(np.concatenate(flat) if flat else np.zeros(0, dtype))

        return cls(
            cat([g.cols for g in groups], np.int64),
            ptr([len(g.cols) for g in groups]),
            cat([g.dictionary for g in groups], np.float64),
            ptr([g.dictionary.size for g in groups]),
            ptr([len(g.counts) for g in groups]),
            cat([g.counts for g in groups], np.int64),
        )

    def __len__(self) -> int:
        return len(self.colptr) - 1

    def group(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(cols, dictionary [d, g], counts) of group k."""
        cols = self.cols[self.colptr[k] : self.colptr[k + 1]]
        d = int(self.tupptr[k + 1] - self.tupptr[k])
        dictionary = self.values[self.valptr[k] : self.valptr[k + 1]].reshape(d, len(cols))
        return cols, dictionary, self.counts[self.tupptr[k] : self.tupptr[k + 1]]

    def arrays(self) -> list[np.ndarray]:
        return [self.cols, self.colptr, self.values, self.valptr, self.tupptr, self.counts]


class CompressedMatrix:
    """A float64 matrix as compressed column groups (see the module docstring).

    Build one with ``fm.compress(X)``. It is immutable; operations on it run on its groups
    (products with vectors, sums, elementwise ops with scalars) or, where none exists, on a
    decompressed copy of the part they need.
    """

    ndim = 2
    dtype = np.dtype(np.float64)

    def __init__(
        self,
        shape: tuple[int, int],
        base: np.ndarray,
        ddc: Dictionaries,
        codes: tuple[np.ndarray, np.ndarray, np.ndarray],
        sdc: Dictionaries,
        sdc_offsets: np.ndarray,
        sdc_codes: np.ndarray,
        sdc_ptr: np.ndarray,
        uc_cols: np.ndarray,
        uc: np.ndarray,
        const_cols: np.ndarray,
        rle_ends: np.ndarray,
        rle_codes: np.ndarray,
        rle_ptr: np.ndarray,
    ):
        self.shape = (int(shape[0]), int(shape[1]))
        # RLE groups' dictionaries follow the code matrices' groups in ``ddc``; group k's runs
        # are rle_ends/rle_codes[rle_ptr[k]:rle_ptr[k+1]]
        self.rle_ends, self.rle_codes, self.rle_ptr = rle_ends, rle_codes, rle_ptr
        self.base, self.ddc, self.codes = base, ddc, codes
        self.sdc, self.sdc_offsets, self.sdc_codes = sdc, sdc_offsets, sdc_codes
        self.sdc_ptr = sdc_ptr
        self.uc_cols, self.uc, self.const_cols = uc_cols, uc, const_cols

    # -- construction ---------------------------------------------------------------------------
    @classmethod
    def from_groups(cls, shape: tuple[int, int], groups: list[Group]) -> CompressedMatrix:
        """Pack groups that partition the columns ``0..shape[1]-1``."""
        n, m = int(shape[0]), int(shape[1])
        _check_partition(m, groups)
        base = np.zeros(m)
        for g in groups:
            if isinstance(g, ConstGroup):
                base[g.cols] = g.values
            elif isinstance(g, SdcGroup):
                base[g.cols] = g.default
        ddc = [g for g in groups if isinstance(g, DdcGroup)]
        by_width = [[g for g in ddc if code_dtype(g.distinct) is t] for t in CODE_TYPES]
        codes = tuple(
            np.ascontiguousarray(
                np.stack([g.codes for g in part]).astype(t, copy=False)
                if part
                else np.zeros((0, n), t)
            )
            for t, part in zip(CODE_TYPES, by_width, strict=True)
        )
        sdc = [g for g in groups if isinstance(g, SdcGroup)]
        sdc_width = code_dtype(max((len(g.counts) for g in sdc), default=1))
        off_type = np.int32 if n < 2**31 else np.int64
        uc = [g for g in groups if isinstance(g, UcGroup)]
        uc_cols = _cols(np.concatenate([g.cols for g in uc]) if uc else [])
        uc_values = np.ascontiguousarray(
            np.concatenate([g.values for g in uc], axis=1) if uc else np.zeros((n, 0))
        )
        const = [g.cols for g in groups if isinstance(g, ConstGroup)]
        rle = [g for g in groups if isinstance(g, RleGroup)]
        return cls(
            (n, m),
            base,
            Dictionaries.of([g for part in by_width for g in part] + rle),
            codes,
            Dictionaries.of(sdc),
            np.concatenate([g.offsets for g in sdc] or [np.zeros(0)]).astype(off_type),
            np.concatenate([g.codes for g in sdc] or [np.zeros(0)]).astype(sdc_width),
            _int64(np.concatenate(([0], np.cumsum([len(g.offsets) for g in sdc], dtype=np.int64)))),
            uc_cols,
            uc_values,
            _cols(np.concatenate(const) if const else []),
            np.concatenate([g.ends for g in rle] or [np.zeros(0)]).astype(off_type),
            np.concatenate([g.codes for g in rle] or [np.zeros(0)]).astype(np.uint32),
            _int64(np.concatenate(([0], np.cumsum([len(g.ends) for g in rle], dtype=np.int64)))),
        )

    def __getitem__(self, key: Any) -> CompressedMatrix:
        """The rows ``key`` (a slice, integer indices in any order, or a boolean mask) as a
        compressed matrix of the same groups; ``X[rows, cols]`` where ``cols`` is a slice of all
        columns or of none (as Dask takes a zero-size ``meta`` and splits row blocks)."""
        if isinstance(key, tuple):
            rows, every_column = _split_key(key, self.shape[1])
            out = self[rows]
            return out if every_column else CompressedMatrix.from_groups((out.shape[0], 0), [])
        rows, n = key, self.shape[0]
        idx = np.arange(n)[rows] if not isinstance(rows, np.ndarray | list) else rows
        idx = np.asarray(idx)
        if idx.dtype == bool:
            idx = np.flatnonzero(idx)
        idx = np.asarray(idx, dtype=np.int64).reshape(-1)
        if len(idx) and (idx.min() < -n or idx.max() >= n):
            raise IndexError(f"row index out of range for {n} rows")
        idx = np.where(idx < 0, idx + n, idx)
        return CompressedMatrix.from_groups(
            (len(idx), self.shape[1]), [_take(g, idx) for g in self.groups]
        )

    def with_values(
        self, base: np.ndarray, ddc_values: np.ndarray, sdc_values: np.ndarray, uc: np.ndarray
    ) -> CompressedMatrix:
        """The same codes and offsets with new stored values (an elementwise function of them)."""
        return CompressedMatrix(
            self.shape, base, replace(self.ddc, values=ddc_values), self.codes,
            replace(self.sdc, values=sdc_values), self.sdc_offsets, self.sdc_codes, self.sdc_ptr,
            self.uc_cols, uc, self.const_cols, self.rle_ends, self.rle_codes, self.rle_ptr,
        )  # fmt: skip

    # -- groups, as built -----------------------------------------------------------------------
    @property
    def groups(self) -> list[Group]:
        """The column groups (views of the packed arrays)."""
        out: list[Group] = []
        k = 0
        for codes in self.codes:
            for j in range(codes.shape[0]):
                cols, dictionary, counts = self.ddc.group(k)
                out.append(DdcGroup(cols, dictionary, codes[j], counts))
                k += 1
        for r in range(len(self.rle_ptr) - 1):
            cols, dictionary, counts = self.ddc.group(k + r)
            part = slice(self.rle_ptr[r], self.rle_ptr[r + 1])
            out.append(
                RleGroup(cols, dictionary, self.rle_ends[part], self.rle_codes[part], counts)
            )
        for k in range(len(self.sdc)):
            cols, dictionary, counts = self.sdc.group(k)
            part = slice(self.sdc_ptr[k], self.sdc_ptr[k + 1])
            out.append(
                SdcGroup(cols, self.base[cols], dictionary, self.sdc_offsets[part],
                         self.sdc_codes[part], counts)
            )  # fmt: skip
        for c in self.const_cols:
            out.append(ConstGroup(np.array([c]), self.base[[c]]))
        if len(self.uc_cols):
            out.append(UcGroup(self.uc_cols, self.uc))
        return out

    # -- the matrix -----------------------------------------------------------------------------
    @property
    def nbytes(self) -> int:
        """Bytes of every array it holds."""
        return int(sum(a.nbytes for a in self.arrays()))

    @property
    def size(self) -> int:
        return self.shape[0] * self.shape[1]

    def arrays(self) -> list[np.ndarray]:
        return [
            self.base, *self.ddc.arrays(), *self.codes, *self.sdc.arrays(), self.sdc_offsets,
            self.sdc_codes, self.sdc_ptr, self.uc_cols, self.uc, self.const_cols, self.rle_ends,
            self.rle_codes, self.rle_ptr,
        ]  # fmt: skip

    @property
    def nnz(self) -> int:
        """Non-zero cells (counted on the dictionaries: a tuple's non-zeros times its count)."""
        n = self.shape[0]
        total = int(np.count_nonzero(self.uc))
        total += n * int(np.count_nonzero(self.base[self.const_cols]))
        for g in self.groups:
            if isinstance(g, DdcGroup | RleGroup):
                total += int(np.count_nonzero(g.dictionary, axis=1) @ g.counts)
            elif isinstance(g, SdcGroup):
                default_rows = n - int(g.counts.sum())
                total += int(np.count_nonzero(g.dictionary, axis=1) @ g.counts)
                total += default_rows * int(np.count_nonzero(g.default))
        return total

    def all_finite(self) -> bool:
        """Whether no cell is NaN or infinite (checked on the stored values)."""
        base = self.base[np.concatenate([self.const_cols, self.sdc.cols])]  # the rest: unused
        stored = (base, self.ddc.values, self.sdc.values, self.uc)
        return all(bool(np.isfinite(a).all()) for a in stored)

    def decompress(self) -> np.ndarray:
        """The matrix as a dense float64 array."""
        n, m = self.shape
        out = np.empty((n, m))
        out[:] = self.base
        for g in self.groups:
            if isinstance(g, DdcGroup):
                out[:, g.cols] = g.dictionary[g.codes]
            elif isinstance(g, RleGroup):
                out[:, g.cols] = g.dictionary[g.row_codes()]
            elif isinstance(g, SdcGroup):
                out[np.ix_(g.offsets, g.cols)] = g.dictionary[g.codes]
        out[:, self.uc_cols] = self.uc
        return out

    toarray = decompress

    @property
    def T(self) -> TransposedCompressed:
        """The transpose, kept lazily."""
        return TransposedCompressed(self)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = self.decompress()
        return out if dtype is None else out.astype(dtype)

    def summary(self) -> str:
        """One line per group: kind, columns, distinct tuples, bytes; and the totals."""
        dense = 8 * self.size
        lines = [
            f"CompressedMatrix {self.shape[0]}x{self.shape[1]}: {self.nbytes:,} bytes "
            f"({dense / max(self.nbytes, 1):.1f}x smaller than dense)"
        ]
        for g in self.groups:
            cols = ",".join(map(str, g.cols[:8])) + (",..." if len(g.cols) > 8 else "")
            lines.append(
                f"  {g.kind:<12} cols [{cols}] ({len(g.cols)})  distinct {g.distinct:,}  "
                f"{_group_bytes(g):,} bytes"
            )
        return "\n".join(lines)

    def __repr__(self) -> str:
        kinds: dict[str, int] = {}
        for g in self.groups:
            kinds[g.kind] = kinds.get(g.kind, 0) + 1
        parts = ", ".join(f"{v} {k}" for k, v in kinds.items())
        return (
            f"<CompressedMatrix {self.shape[0]}x{self.shape[1]}, {self.nbytes:,} bytes, "
            f"groups: {parts or 'none'}>"
        )


def _split_key(key: tuple, m: int) -> tuple[Any, bool]:
    """(rows, whether every column is kept) of ``X[rows, cols]``; only all columns or none."""
    cols = key[1] if len(key) == 2 else None
    selected = range(m)[cols] if isinstance(cols, slice) else None
    if selected is None or len(selected) not in (0, m) or (len(selected) and selected.step != 1):
        raise TypeError(
            "a compressed matrix is indexed by rows (X[rows]), or by rows and a slice of all "
            f"its columns or of none, got {key!r}"
        )
    return key[0], len(selected) == m


def _take(g: Group, idx: np.ndarray) -> Group:
    """Group ``g`` at rows ``idx`` (tuples that no selected row holds keep count 0)."""
    if isinstance(g, ConstGroup):
        return g
    if isinstance(g, UcGroup):
        return UcGroup(g.cols, np.ascontiguousarray(g.values[idx]))
    if isinstance(g, RleGroup):  # selected rows keep no runs: a DDC group of their codes
        g = DdcGroup(g.cols, g.dictionary, g.row_codes().astype(code_dtype(g.distinct)), g.counts)
    if isinstance(g, DdcGroup):
        codes = g.codes[idx]
        counts = np.bincount(codes, minlength=g.distinct).astype(np.int64)
        return DdcGroup(g.cols, g.dictionary, codes, counts)
    pos = np.minimum(np.searchsorted(g.offsets, idx), max(len(g.offsets) - 1, 0))
    hit = (g.offsets[pos] == idx) if len(g.offsets) else np.zeros(len(idx), bool)
    codes = g.codes[pos[hit]]
    counts = np.bincount(codes, minlength=len(g.counts)).astype(np.int64)
    offsets = np.flatnonzero(hit).astype(g.offsets.dtype)
    return SdcGroup(g.cols, g.default, g.dictionary, offsets, codes, counts)


def _group_bytes(g: Group) -> int:
    if isinstance(g, ConstGroup):
        return g.values.nbytes
    if isinstance(g, UcGroup):
        return g.values.nbytes
    extra = g.offsets.nbytes + g.default.nbytes if isinstance(g, SdcGroup) else 0
    extra += g.ends.nbytes if isinstance(g, RleGroup) else 0
    return g.dictionary.nbytes + g.codes.nbytes + g.counts.nbytes + extra


def _check_partition(m: int, groups: list[Group]) -> None:
    cols = np.concatenate([np.asarray(g.cols, dtype=np.int64) for g in groups] or [np.zeros(0)])
    if len(cols) != m or not np.array_equal(np.sort(cols), np.arange(m)):
        raise ValueError(f"column groups must cover each of the {m} columns exactly once")


# -- the format ------------------------------------------------------------------------------
class _Compressed(Format):
    """Compressed column groups: dense semantics (IEEE, zeros do not annihilate), read through
    their dictionaries; elementwise ops with scalars keep values compressed."""

    name = "compressed"
    views = False  # a transpose or column range is a new (dense) matrix
    elementwise_closed = True
    computes_natively = True
    # a value's size where only its shape is known (a compressed intermediate)
    BYTES_PER_CELL = 2.0

    def nbytes(self, meta: Any) -> float:
        if meta.layout:
            row_bytes, dict_bytes, _, _ = meta.layout
            return float(row_bytes + dict_bytes)
        return self.BYTES_PER_CELL * meta.cells

    # a group visit (a code read, then a gather from a dictionary or an add into an accumulator)
    # costs about as much as this many dense cells (0.45 vs 0.3 ns single-threaded, measured on
    # a 1M x 28 Airline-like table, asv_benches/compressed_table.py)
    VISIT_CELLS = 1.5

    def work_cells(self, meta: Any) -> float:
        """A row visits one code per group (and each uncompressed cell), not every column."""
        if meta.layout:
            return self.VISIT_CELLS * meta.layout[2] * self._rows(meta)
        return float(meta.cells)

    @staticmethod
    def _rows(meta: Any) -> int:
        return meta.rows

    def stored(self, meta: Any) -> tuple[float, float] | None:
        if meta.layout:
            _, dict_bytes, _, values = meta.layout
            return float(dict_bytes), float(values)
        return None

    def layout(self, value: Any) -> tuple:
        """(bytes read per row: codes, offsets, uncompressed values; bytes of the dictionaries,
        counts and base row; groups a row visits; distinct stored values)."""
        x = value.T if isinstance(value, TransposedCompressed) else value
        rows = [*x.codes, x.sdc_offsets, x.sdc_codes, x.uc, x.rle_ends, x.rle_codes]
        row_bytes = sum(a.nbytes for a in rows)
        groups = sum(c.shape[0] for c in x.codes) + len(x.sdc_ptr) - 1 + len(x.uc_cols)
        groups += len(x.rle_ptr) - 1
        groups += 1 if len(x.const_cols) else 0
        values = x.ddc.values.size + x.sdc.values.size + x.uc.size + x.base.size
        return (int(row_bytes), int(x.nbytes - row_bytes), int(groups), int(values))

    def stacked_layout(self, layouts: list[tuple]) -> tuple:
        """Bytes and stored values add up; a row visits the most groups any block has."""
        if not layouts:
            return ()
        row_bytes, dict_bytes, groups, values = zip(*layouts, strict=True)
        return (sum(row_bytes), sum(dict_bytes), max(groups), sum(values))

    def size_class(self, shape: tuple[int, int], layout: tuple) -> Any:
        """Half-octaves of the bytes per cell and of the stored values per cell."""
        if not layout:
            return None
        row_bytes, dict_bytes, _, values = layout
        cells = max(shape[0] * shape[1], 1)
        per_cell = (row_bytes + dict_bytes) / cells
        return tuple(round(2 * math.log2(v)) if v > 0 else None for v in (per_cell, values / cells))

    @property
    def transposed(self) -> Format:
        return COMPRESSED_T

    def claims(self, value: Any) -> bool:
        return isinstance(value, CompressedMatrix)

    def from_value(self, value: Any, what: str = "fm.matrix") -> CompressedMatrix:
        """The value itself; a dense 2-D result (a kernel that wrote its rows densely) is held
        as one uncompressed group (``fm.compress`` is what finds encodings)."""
        if isinstance(value, CompressedMatrix):
            return value
        dense = np.array(Format.DENSE.from_value(value, what), dtype=np.float64, order="C")
        if dense.ndim != 2:
            raise ValueError(f"{what}: a compressed matrix is 2-D, got shape {dense.shape}")
        return CompressedMatrix.from_groups(
            dense.shape, [UcGroup(np.arange(dense.shape[1]), dense)]
        )

    def nnz(self, value: Any) -> int:
        return value.nnz

    def to_canonical(self, value: Any) -> np.ndarray:
        return value.decompress()

    def to_dense(self, value: Any) -> np.ndarray:
        return value.decompress()

    def arrays(self, value: Any) -> list[np.ndarray]:
        return value.arrays()


class TransposedCompressed:
    """The transpose of a compressed matrix, kept lazily: products with it run on the groups of
    the matrix it transposes (``.T``)."""

    ndim = 2
    dtype = np.dtype(np.float64)

    def __init__(self, of: CompressedMatrix):
        self.T = of
        self.shape = (of.shape[1], of.shape[0])

    @property
    def nnz(self) -> int:
        return self.T.nnz

    def __getitem__(self, key: Any) -> TransposedCompressed:
        """``X.T[rows, cols]`` as ``X[cols, rows].T``: ``rows`` a slice of all rows or none."""
        if not isinstance(key, tuple) or len(key) != 2:
            raise TypeError(
                f"a transposed compressed matrix is indexed as [rows, cols], got {key!r}"
            )
        return TransposedCompressed(self.T[key[1], key[0]])

    def decompress(self) -> np.ndarray:
        return self.T.decompress().T

    toarray = decompress

    def __repr__(self) -> str:
        return f"<transpose of {self.T!r}>"


class _CompressedT(_Compressed):
    """Lazy transposes of compressed matrices (dense semantics; sizes and conversions as the
    matrix they transpose); kernels read them decompressed."""

    name = "compressed_t"
    elementwise_closed = False  # an elementwise op on a transpose is computed densely

    @property
    def transposed(self) -> Format:
        return COMPRESSED

    @staticmethod
    def _rows(meta: Any) -> int:
        return meta.cols  # the rows of the matrix it transposes

    def claims(self, value: Any) -> bool:
        return isinstance(value, TransposedCompressed)

    def from_value(self, value: Any, what: str = "fm.matrix") -> TransposedCompressed:
        if isinstance(value, TransposedCompressed):
            return value
        return TransposedCompressed(COMPRESSED.from_value(np.asarray(value).T, what))

    def arrays(self, value: Any) -> list[np.ndarray]:
        return value.T.arrays()


COMPRESSED = Format.register(_Compressed())
COMPRESSED_T = Format.register(_CompressedT())
