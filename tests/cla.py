"""A plain encoder for tests: builds compressed matrices with every kind of column group from a
dense array, independently of ``fm.compress``'s planner (so kernels are tested on groups the
planner might not choose). Values compare by bit pattern, as the format requires."""

from __future__ import annotations

import numpy as np

from fusedml.formats.compressed import (
    CompressedMatrix,
    ConstGroup,
    DdcGroup,
    RleGroup,
    SdcGroup,
    UcGroup,
    code_dtype,
)

KINDS = ("ddc", "sdc", "cocoded", "uc", "rle")


def _tuples(block: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dictionary, codes, counts) of a block's distinct rows, most frequent first."""
    bits = np.ascontiguousarray(block).view(np.int64)
    _, first, codes, counts = np.unique(
        bits, axis=0, return_index=True, return_inverse=True, return_counts=True
    )
    order = np.lexsort((first, -counts))  # by count, ties by first row: deterministic
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    dictionary = np.ascontiguousarray(block[first[order]])
    return dictionary, rank[codes.reshape(-1)], counts[order].astype(np.int64)


def group(block: np.ndarray, cols: np.ndarray, kind: str):
    """One group of ``kind`` ('ddc', 'rle', 'sdc' or 'uc'; one distinct tuple makes a
    constant)."""
    n = block.shape[0]
    if kind == "uc" or n == 0:
        return UcGroup(cols, np.array(block, dtype=np.float64, order="C"))
    dictionary, codes, counts = _tuples(block)
    if len(counts) == 1:
        return ConstGroup(cols, dictionary[0].copy())
    if kind == "ddc":
        return DdcGroup(cols, dictionary, codes.astype(code_dtype(len(counts))), counts)
    if kind == "rle":
        ends = np.append(np.flatnonzero(np.diff(codes)) + 1, n)
        return RleGroup(cols, dictionary, ends.astype(np.int32), codes[ends - 1].astype(np.uint32),
                        counts)  # fmt: skip
    offsets = np.flatnonzero(codes != 0).astype(np.int32)
    rest = (codes[offsets] - 1).astype(code_dtype(len(counts) - 1))
    return SdcGroup(cols, dictionary[0].copy(), dictionary[1:], offsets, rest, counts[1:])


def compressed(a: np.ndarray, seed: int = 0) -> CompressedMatrix:
    """``a`` with its columns in groups of every kind, chosen by a seeded draw (pairs of
    adjacent columns are co-coded)."""
    a = np.asarray(a, dtype=np.float64)
    n, m = a.shape
    rng = np.random.default_rng(seed)
    groups, j = [], 0
    while j < m:
        kind = KINDS[rng.integers(len(KINDS))]
        width = 2 if kind == "cocoded" and j + 1 < m else 1
        cols = np.arange(j, j + width)
        groups.append(group(a[:, cols], cols, "ddc" if kind == "cocoded" else kind))
        j += width
    return CompressedMatrix.from_groups((n, m), groups)
