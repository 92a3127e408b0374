"""Compression planning and encoding: a dense or sparse matrix -> ``CompressedMatrix`` (CLA).

``compress(X)`` works in two steps, as SystemDS's compression does:

1. Planning reads a row sample (``3000 + ceil(n**0.65)`` rows, every row when that is 80% of
   them or more). Per column it estimates the number of distinct values and the share of the
   most frequent one, prices each encoding with the size formulas below and keeps the cheapest;
   columns nothing beats stay uncompressed. Co-coding then greedily merges the pair of groups
   whose joint encoding saves the most bytes, as long as one saves any. When the estimated
   ratio (input bytes / compressed bytes) is below ``min_ratio`` the input is returned as is.
2. Encoding reads every row. Each column's values become dense codes through a linear-time hash
   map keyed by the values' bit patterns (so -0.0 and 0.0 are different values and NaN payloads
   survive); a co-coded group combines its columns' codes into one integer key per row and
   encodes those keys the same way. The encoding of a group is then chosen again from its exact
   counts, so a planning error costs compression, never correctness. Columns are encoded in
   batches (bounding the memory their codes take), spread over one thread per core.

Distinct values are estimated with Haas & Stokes' hybrid (JASA 1998; SystemDS's default, minus
its stabilized Duj2a variant). From a sample of s of n rows (``q = s / n``) holding d distinct
values, f1 of them once: the unsmoothed first-order jackknife ``Duj1 = d / (1 - (1 - q) f1 / s)``
gives the squared coefficient of variation of the values' row counts, gamma^2. Below 30 the
estimate is the skew-corrected ``Duj2 = (d - f1 (1 - q) ln(1 - q) gamma^2 / q) Duj1 / d``, above
it Shlosser's estimator, which holds up for heavy skew; either is clamped to ``[d, n - s + d]``.
The most frequent value's row count is its sample count scaled by ``n / s``.

Sizes (bytes) are the packed matrix's: SystemDS's formulas (DDC ``8dg + n w(d)``, SDC
``8(d-1)g + 8g + m (4 + w(d-1))``, constant ``8g``, uncompressed ``8ng``; ``w`` the code width,
``m`` the rows not holding the most frequent tuple) plus what ``CompressedMatrix`` keeps besides:
an int64 count per tuple, an int64 index and a base value per column, a few pointers per group.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import math
import os
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
import scipy.sparse as sp

from fusedml.formats import Collection, to_csr, to_dense
from fusedml.formats.compressed import (
    COMPRESSED,
    CompressedMatrix,
    ConstGroup,
    DdcGroup,
    Group,
    RleGroup,
    SdcGroup,
    UcGroup,
    code_dtype,
)

__all__ = ["CompressionSkippedWarning", "compress"]

DDC, SDC, CONST, UC = "DDC", "SDC", "const", "uncompressed"
HIGH_SKEW = 30.0  # from this gamma^2 on, distinct values are estimated with Shlosser's estimator
ALL_PAIRS = 16  # up to this many candidate groups co-coding scores every pair (as SystemDS)
MAX_GROUP_COLUMNS = 128  # a co-coded group's columns at most (as SystemDS's priority queue)
BLOCK_ROWS = 8192  # rows read at a time by the column encoders: a few of them fit in L2
BATCH_COLUMNS = 32  # columns encoded at a time (their codes, 4 bytes a cell, are held at once)
PARALLEL_CELLS = 1 << 19  # values read from which encoding is spread over threads
PACKED_FIXED = 56  # bytes of the packed matrix's pointer arrays when it holds no group


class CompressionSkippedWarning(UserWarning):
    """``compress`` returned its input: compressing it would not have saved enough memory."""


def compress(
    X: Any,
    *,
    cocode: bool = True,
    seed: int = 0,
    min_ratio: float = 1.0,
    timings: dict | None = None,
) -> Any:
    """-> CompressedMatrix, or X itself (unchanged) when compression would not pay.

    X is a dense 2-D array-like or a scipy.sparse matrix (read per column; never densified as a
    whole); a ``CompressedMatrix`` is returned as is. ``cocode`` lets planning merge columns into
    groups, ``seed`` picks the planning sample's rows, and compression pays when input bytes /
    compressed bytes >= ``min_ratio`` (estimated before encoding, and exact after); otherwise a
    ``CompressionSkippedWarning`` says why and X comes back. The result decompresses to the
    input, as float64, bit for bit; it shares no memory with X. ``timings``, when given,
    receives the seconds of each phase that ran: ``"planning"`` (reading the input, the sample,
    estimates and co-coding) and ``"encoding"`` (every row, and packing the groups).

    A Dask array comes back as a Dask array of compressed blocks, each compressed on its own
    where the block lives when it is computed; a block whose compression would not pay
    ``min_ratio`` is held as one uncompressed group (every block is of the one format, with no
    warning from the workers). ``timings`` is not available then.
    """
    if isinstance(X, CompressedMatrix):
        return X
    collection = Collection.of(X)
    if collection is not None:
        if timings is not None:
            raise TypeError("compress: timings are not measured for blocks compressed lazily")
        block = functools.partial(_compressed_block, cocode=cocode, seed=seed, min_ratio=min_ratio)
        return collection.map_blocks(X, block, COMPRESSED)
    timings = {} if timings is None else timings  # the caller's, or one nobody reads
    start = time.perf_counter()
    source = _source(X)
    n, m = source.shape
    if n == 0 or m == 0:
        groups = [ConstGroup(np.arange(m), np.zeros(m))] if m else []
        return CompressedMatrix.from_groups((n, m), groups)
    plans, known = _plan(source, cocode, seed)
    planned = time.perf_counter()
    timings["planning"] = planned - start
    estimate = int(PACKED_FIXED + sum(p.cost for p in plans))
    if source.nbytes < min_ratio * estimate:
        uc = sum(len(p.cols) for p in plans if p.kind == UC)
        why = f"{uc} of {m} columns have too many distinct values to encode" if uc else ""
        return _skipped(X, "estimated", source.nbytes, estimate, min_ratio, why)
    result = CompressedMatrix.from_groups((n, m), _encode(source, plans, known))
    timings["encoding"] = time.perf_counter() - planned
    if source.nbytes < min_ratio * result.nbytes:
        why = f"the sample promised {source.nbytes / estimate:.4g}"
        return _skipped(X, "actual", source.nbytes, result.nbytes, min_ratio, why)
    return result


def _compressed_block(block: Any, cocode: bool, seed: int, min_ratio: float) -> CompressedMatrix:
    """One row block of a collection, compressed; held uncompressed where that would not pay."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CompressionSkippedWarning)
        out = compress(block, cocode=cocode, seed=seed, min_ratio=min_ratio)
    return out if isinstance(out, CompressedMatrix) else COMPRESSED.from_value(to_dense(out))


def _skipped(X: Any, which: str, nbytes: int, compressed: int, min_ratio: float, why: str) -> Any:
    warnings.warn(
        f"compression skipped: the {which} compression ratio {nbytes / compressed:.5g} "
        f"({nbytes:,} input bytes / {compressed:,} compressed bytes) is below "
        f"min_ratio={min_ratio:g}{'; ' + why if why else ''}; returning the input unchanged",
        CompressionSkippedWarning,
        stacklevel=3,
    )
    return X


# -- the hash-map encoder ----------------------------------------------------------------------
# Fibonacci hashing: the slot is the top bits of key * 2**64/phi (int64 arithmetic wraps)
_GOLDEN = np.int64(-0x61C8864680B583EB)


@numba.njit(cache=True, nogil=True)
def _hash_run(flat, start, step, i, n, table, d, room, codes):
    """Codes for the keys ``flat[start + k * step]``, k = i, i+1, ... n-1, from a hash table
    ``(slots, keys, counts, first, shift)`` (2**(64 - shift) slots) that holds d keys: a new key
    gets the next code, unless d has reached ``room``; then the run stops there. Returns (where
    it stopped, d)."""
    slots, keys, counts, first, shift = table
    mask = len(slots) - 1
    while i < n:
        key = flat[start + i * step]
        h = ((key * _GOLDEN) >> shift) & mask
        c = np.int64(slots[h])
        while c >= 0 and keys[c] != key:
            h = (h + 1) & mask
            c = np.int64(slots[h])
        if c < 0:
            if d == room:
                return i, d
            c = d
            slots[h], keys[c], first[c] = c, key, i
            d += 1
        codes[i] = c
        counts[c] += 1
        i += 1
    return i, d


def _table(size: int) -> tuple:
    """An empty hash table for ``size`` keys (a power of two) with twice as many slots: its load
    stays at most one half."""
    slots = np.full(2 * size, -1, np.int32)
    keys, first = np.empty(size, np.int64), np.empty(size, np.int64)
    return slots, keys, np.zeros(size, np.int64), first, 64 - (2 * size).bit_length() + 1


class _Hasher:
    """Codes of the n keys ``flat[start + i * step]`` (int64), numbered by first occurrence,
    computed a stretch of rows at a time; it gives up at a key past the first ``limit``
    distinct ones. ``expect``: distinct keys to make room for at first."""

    def __init__(
        self, flat: np.ndarray, start: int, step: int, n: int, limit: int, expect: int = 256
    ):
        self.flat, self.start, self.step, self.limit = flat, start, step, limit
        self.codes = np.empty(n, np.int32)
        self.table = _table(1 << max(6, (min(expect, n, limit) - 1).bit_length()))
        self.i = self.d = 0
        self.over = False

    def run(self, until: int) -> None:
        """Codes the rows up to ``until``."""
        while not self.over and self.i < until:
            size = len(self.table[1])
            room = min(size, self.limit)
            args = (self.flat, self.start, self.step, self.i, until, self.table, self.d, room)
            self.i, self.d = _hash_run(*args, self.codes)
            if self.i < until:
                self.over = self.d == self.limit
                if not self.over:
                    self._grow()

    def _grow(self) -> None:
        """The same keys, in code order, in a table twice the size."""
        d, table = self.d, self.table
        bigger = _table(2 * len(table[1]))
        _hash_run(table[1], 0, 1, 0, d, bigger, 0, d, np.empty(d, np.int32))
        bigger[2][:d], bigger[3][:d] = table[2][:d], table[3][:d]
        self.table = bigger

    def result(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """(codes int32[n], counts int64[d], first row of each code), None if it gave up."""
        return None if self.over else (self.codes, self.table[2][: self.d], self.table[3][: self.d])


def _hash_codes(flat: np.ndarray, n: int, limit: int, expect: int = 256) -> tuple | None:
    """``_Hasher``'s result for the first n keys of ``flat``."""
    hasher = _Hasher(flat, 0, 1, n, limit, expect)
    hasher.run(n)
    return hasher.result()


@dataclass(eq=False)
class _Codes:
    """Which of d tuples each of some rows holds: ``codes`` at ``rows`` (at every row when rows
    is None), tuple ``fill`` at the others; ``counts`` rows per tuple; ``values`` the tuples."""

    codes: np.ndarray  # int32
    counts: np.ndarray  # int64[d]
    values: np.ndarray  # float64[d, g]
    rows: np.ndarray | None = None
    fill: int = -1

    @property
    def d(self) -> int:
        return len(self.counts)

    def full(self, length: int) -> np.ndarray:
        """The code of every row."""
        if self.rows is None:
            return self.codes
        out = np.full(length, self.fill, np.int32)
        out[self.rows] = self.codes
        return out


def _join(a: _Codes, b: _Codes, length: int) -> _Codes:
    """The tuples of two groups' columns side by side (rows compared by both codes)."""
    ca, cb = a.full(length), b.full(length)
    keys = ca.astype(np.int64) * b.d + cb
    pairs = a.d * b.d
    if pairs > length:
        codes, counts, first = _hash_codes(keys, length, length, pairs)
        return _Codes(codes, counts, np.hstack([a.values[ca[first]], b.values[cb[first]]]))
    # few enough pairs to count them all in a table: cheaper than hashing
    counts = np.bincount(keys, minlength=pairs)
    present = np.flatnonzero(counts)
    number = np.zeros(pairs, np.int32)
    number[present] = np.arange(len(present), dtype=np.int32)
    ka, kb = np.divmod(present, b.d)
    return _Codes(number[keys], counts[present], np.hstack([a.values[ka], b.values[kb]]))


# -- inputs ------------------------------------------------------------------------------------
class _Dense:
    """A dense float64 input, read per column through its bit patterns."""

    def __init__(self, A: np.ndarray):
        if not (A.flags.c_contiguous or A.flags.f_contiguous):
            A = np.ascontiguousarray(A)
        self.A, self.shape, self.nbytes = A, A.shape, 8 * A.size
        # the bit patterns as one flat array, and where column j starts and steps in it
        rowwise = A.flags.c_contiguous
        self.bits = (A if rowwise else A.T).reshape(-1).view(np.int64)
        self.start, self.step = (1, A.shape[1]) if rowwise else (A.shape[0], 1)

    def rows(self, rows: np.ndarray) -> _Dense:
        return _Dense(self.A[rows])

    def columns(self, cols: list[int], limit: int) -> dict[int, _Codes | None]:
        """The columns' codes (None for one of more than ``limit`` distinct values). Read in
        blocks of rows: nearby columns share cache lines, which then come from memory once."""
        n = self.shape[0]
        hashers = {j: _Hasher(self.bits, j * self.start, self.step, n, limit) for j in cols}
        for lo in range(0, n, BLOCK_ROWS):
            for hasher in hashers.values():
                hasher.run(min(lo + BLOCK_ROWS, n))
        return {j: self._codes(h) for j, h in hashers.items()}

    def _codes(self, hasher: _Hasher) -> _Codes | None:
        found = hasher.result()
        if found is None:
            return None
        codes, counts, first = found
        values = self.bits[hasher.start + first * self.step].view(np.float64)
        return _Codes(codes, counts, values.reshape(-1, 1))

    def cells(self, cols: list[int]) -> int:
        """Values encoding these columns reads."""
        return self.shape[0] * len(cols)

    def uncompressed(self, cols: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(self.A[:, cols])  # indexing by a list copies: never a view


class _Sparse:
    """A scipy.sparse input, read per column (CSC) from its stored entries."""

    def __init__(self, csr: sp.csr_array):
        self.shape = csr.shape
        self.nbytes = csr.data.nbytes + csr.indices.nbytes + csr.indptr.nbytes
        self.csr, self.csc = csr, csr.tocsc()  # the CSC arrays are new: sorting them is ours
        self.csc.sort_indices()

    def rows(self, rows: np.ndarray) -> _Sparse:
        return _Sparse(self.csr[rows])

    def columns(self, cols: list[int], limit: int) -> dict[int, _Codes | None]:
        """The columns' codes (explicit at their stored rows; None for one of more than
        ``limit`` distinct values)."""
        ptr, n = self.csc.indptr, self.shape[0]
        parts = {j: slice(ptr[j], ptr[j + 1]) for j in cols}
        return {
            j: _sparse_column(self.csc.data[part], self.csc.indices[part], n, limit)
            for j, part in parts.items()
        }

    def cells(self, cols: list[int]) -> int:
        """Values encoding these columns reads (the stored ones)."""
        ptr = self.csc.indptr
        return int(np.sum(ptr[np.add(cols, 1)] - ptr[cols])) if cols else 0

    def uncompressed(self, cols: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(self.csc[:, cols].toarray(), dtype=np.float64)


def _sparse_column(data: np.ndarray, rows: np.ndarray, n: int, limit: int) -> _Codes | None:
    """The codes of a column of n rows that stores ``data`` at ``rows`` and +0.0 elsewhere
    (None past ``limit`` distinct stored values)."""
    zeros = n - len(data)
    if len(data) == 0:
        return _Codes(np.zeros(0, np.int32), np.array([n], np.int64), np.zeros((1, 1)), rows, 0)
    bits = data.view(np.int64)
    found = _hash_codes(bits, len(bits), limit)
    if found is None:
        return None
    codes, counts, first = found
    values, fill = bits[first].view(np.float64), -1
    if zeros:
        # the implicit zeros are +0.0: the stored +0.0 (bit pattern 0) if there is one, or new
        stored_zero = np.flatnonzero(bits[first] == 0)
        fill = int(stored_zero[0]) if len(stored_zero) else len(counts)
        if fill == len(counts):
            counts, values = np.append(counts, 0), np.append(values, 0.0)
        counts[fill] += zeros
    return _Codes(codes, counts, values.reshape(-1, 1), rows if zeros else None, fill)


def _source(X: Any) -> _Dense | _Sparse:
    if sp.issparse(X):
        return _Sparse(to_csr(X, "fm.compress"))
    A = to_dense(X, "fm.compress")
    if A.ndim != 2:
        raise ValueError(f"fm.compress: expected a 2-D matrix, got shape {A.shape}")
    return _Dense(A)


def _workers() -> int:
    """The cores this process may use (at most NUMBA_NUM_THREADS, a user's cap)."""
    affinity = getattr(os, "sched_getaffinity", None)
    cores = len(affinity(0)) if affinity else os.cpu_count() or 1
    return max(1, min(cores, numba.config.NUMBA_NUM_THREADS))


def _parallel(fn: Any, items: list, cells: int) -> list:
    """``fn`` over the items, on up to one thread per core (the hash encoder releases the GIL)
    when they cover enough ``cells`` to be worth the threads."""
    workers = min(len(items), _workers()) if cells >= PARALLEL_CELLS else 1
    if workers <= 1:
        return [fn(item) for item in items]
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(fn, items))


def _columns(source: _Dense | _Sparse, cols: list[int], limit: int) -> dict[int, _Codes | None]:
    """``source.columns`` in parallel, over runs of nearby columns: a share per core, at most a
    cache line's worth (8 columns) each."""
    size = max(1, min(8, math.ceil(len(cols) / _workers())))
    runs = [cols[i : i + size] for i in range(0, len(cols), size)]
    found: dict[int, _Codes | None] = {}
    for part in _parallel(lambda run: source.columns(run, limit), runs, source.cells(cols)):
        found.update(part)
    return found


# -- sizes -------------------------------------------------------------------------------------
def _width(d: int) -> int:
    """Bytes per code for d tuples."""
    return np.dtype(code_dtype(max(1, min(d, 2**32)))).itemsize


def _costs(n: int, g: int, d: int, top: float) -> dict[str, float]:
    """Bytes of a group of g columns holding d distinct tuples, the most frequent in ``top``
    rows, in the packed matrix, per encoding."""
    cols = 16 * g  # a column index and a base value (the constant, SDC's default) per column
    costs = {UC: 8.0 * n * g + cols}
    if d <= 1:
        costs[CONST] = cols
        return costs
    offset = 4 if n < 2**31 else 8
    costs[DDC] = cols + 24 + 8 * d * (g + 1) + n * _width(d)
    costs[SDC] = cols + 32 + 8 * (d - 1) * (g + 1) + (n - top) * (offset + _width(d - 1))
    return costs


def _cheapest(costs: dict[str, float]) -> tuple[str, float]:
    kind = min(costs, key=costs.__getitem__)
    return kind, costs[kind]


# -- planning ----------------------------------------------------------------------------------
@dataclass(eq=False)
class _Plan:
    """A planned group: its columns, sample codes, estimated distinct tuples, kind and bytes;
    a co-coded group also the two groups it joins."""

    cols: list[int]
    sample: _Codes | None
    d: int
    kind: str
    cost: float
    parts: tuple[_Plan, _Plan] | None = None


def _sample_size(n: int) -> int:
    """SystemDS's sample size; every row when it would be 80% of them or more."""
    s = min(n, 3000 + math.ceil(n**0.65))
    return n if s >= 0.8 * n else s


def _estimate(counts: np.ndarray, n: int, s: int) -> tuple[int, float]:
    """(distinct values, rows holding the most frequent) of n rows, from the counts of the
    values of s sampled rows."""
    top = float(counts.max())
    return (len(counts), top) if s >= n else (_distinct(counts, n, s), top * n / s)


def _distinct(counts: np.ndarray, n: int, s: int) -> int:
    """Haas & Stokes' hybrid estimate of the distinct values of n rows from the counts of the
    values of s sampled rows: their skew-corrected jackknife Duj2 unless the estimated skew is
    high, then Shlosser's estimator (see the module docstring)."""
    d, q = len(counts), s / n
    c = counts.astype(np.float64)
    f1 = float(np.count_nonzero(counts == 1))
    scale = 1.0 / (1.0 - (1.0 - q) * f1 / s)
    duj1 = d * scale
    # squared coefficient of variation of the values' row counts (Haas & Stokes' gamma^2)
    skew = max(0.0, duj1 / s**2 * float(c @ (c - 1.0)) + duj1 / n - 1.0)
    if skew < HIGH_SKEW:
        estimate = scale * (d - f1 * (1.0 - q) * math.log1p(-q) * skew / q)
    else:
        missed = (1.0 - q) ** c  # the odds that a value seen c times is not in a sample
        estimate = d + f1 * float(missed.sum()) / float(c @ missed * q / (1.0 - q))
    return round(min(max(estimate, d), n - s + d))


def _planned(cols: list[int], sample: _Codes, n: int, s: int) -> _Plan:
    d, top = _estimate(sample.counts, n, s)
    kind, cost = _cheapest(_costs(n, len(cols), d, top))
    return _Plan(cols, sample, d, kind, cost)


def _plan(source: _Dense | _Sparse, cocode: bool, seed: int) -> tuple[list[_Plan], dict]:
    """The planned groups (one for all uncompressed columns), and the exact column codes found
    on the way when the sample was every row."""
    n, m = source.shape
    s = _sample_size(n)
    exact = s == n
    rows = np.sort(np.random.default_rng(seed).choice(n, s, replace=False)) if not exact else None
    sample = source if exact else source.rows(rows)
    codes = _columns(sample, list(range(m)), s)
    singles = [_planned([j], codes[j], n, s) for j in range(m)]
    known = {p.cols[0]: p.sample for p in singles} if exact else {}
    uc = [p.cols[0] for p in singles if p.kind == UC]
    const = [p for p in singles if p.kind == CONST]
    coded = [p for p in singles if p.kind in (DDC, SDC)]
    if cocode:
        coded = _cocode(coded, n, s)
    plans = const + coded
    if uc:
        plans.append(_Plan(uc, None, n, UC, _costs(n, len(uc), n, 1)[UC]))
    return plans, known


def _joint(a: _Plan, b: _Plan, n: int, s: int) -> _Plan | None:
    """Two planned groups as one, when the joint tuples may be few enough to pay."""
    if a.d * b.d > n:  # SystemDS's bound: such joints rarely pay, and estimates get poor
        return None
    if len(a.cols) + len(b.cols) > MAX_GROUP_COLUMNS:
        return None
    joint = _planned(a.cols + b.cols, _join(a.sample, b.sample, s), n, s)
    joint.parts = (a, b)
    return joint


def _cocode(plans: list[_Plan], n: int, s: int) -> list[_Plan]:
    """Greedy co-coding: merge the pair of groups whose joint encoding saves the most, until no
    pair saves. With few groups every pair is a candidate; with many (hundreds of pixels, say)
    only neighbours in column order are, so planning stays linear in the number of columns."""
    if len(plans) < 2:
        return plans
    every_pair = len(plans) <= ALL_PAIRS
    alive = set(plans)
    right = dict(itertools.pairwise(plans))
    left = {b: a for a, b in right.items()}
    heap: list = []
    tie = itertools.count()  # heap entries never compare plans

    def consider(a: _Plan | None, b: _Plan | None) -> None:
        if a is None or b is None:
            return
        joint = _joint(a, b, n, s)
        if joint is not None and joint.cost < a.cost + b.cost:
            heapq.heappush(heap, (joint.cost - a.cost - b.cost, next(tie), a, b, joint))

    for a, b in itertools.combinations(plans, 2) if every_pair else right.items():
        consider(a, b)
    while heap:
        _, _, a, b, joint = heapq.heappop(heap)
        if a not in alive or b not in alive:
            continue  # one side was merged since this pair was scored
        alive -= {a, b}
        _unlink(left, right, a, b, joint)
        if every_pair:
            for other in sorted(alive, key=_first_col):  # in column order: ties break alike
                consider(joint, other)
        else:
            consider(left.get(joint), joint)
            consider(joint, right.get(joint))
        alive.add(joint)
    return sorted(alive, key=_first_col)


def _first_col(plan: _Plan) -> int:
    return min(plan.cols)


def _unlink(left: dict, right: dict, a: _Plan, b: _Plan, joint: _Plan) -> None:
    """Put ``joint`` where neighbours a (left) and b (right) were in the chain of groups."""
    outer_left, outer_right = left.pop(a, None), right.pop(b, None)
    right.pop(a, None)
    left.pop(b, None)
    if outer_left is not None:
        left[joint], right[outer_left] = outer_left, joint
    if outer_right is not None:
        right[joint], left[outer_right] = outer_right, joint


# -- encoding ----------------------------------------------------------------------------------
def _encode(source: _Dense | _Sparse, plans: list[_Plan], known: dict) -> list[Group]:
    """The groups of the plan, each encoded exactly and its kind chosen from exact counts."""
    n = source.shape[0]
    groups: list[Group] = []
    uc = [j for p in plans if p.kind == UC for j in p.cols]
    for batch in _batches([p for p in plans if p.kind != UC]):
        needed = sorted(j for p in batch for j in p.cols if j not in known)
        columns = known | _columns(source, needed, n // 2)
        encode = functools.partial(_groups, columns=columns, n=n)
        for built, left in _parallel(encode, batch, source.cells(needed)):
            groups += built
            uc += left
    if uc:
        cols = np.array(sorted(uc), np.int64)
        groups.append(UcGroup(cols, source.uncompressed(cols)))
    return groups


def _batches(plans: list[_Plan]) -> list[list[_Plan]]:
    """The plans in batches of about BATCH_COLUMNS columns, nearby columns together: only one
    batch's column codes (4 bytes a cell) are held at a time."""
    batches: list[list[_Plan]] = [[]]
    size = 0
    for plan in sorted(plans, key=_first_col):
        if size >= BATCH_COLUMNS:
            batches.append([])
            size = 0
        batches[-1].append(plan)
        size += len(plan.cols)
    return batches


def _groups(plan: _Plan, columns: dict, n: int) -> tuple[list[Group], list[int]]:
    """A planned group's groups, and the columns of it that are best left uncompressed."""
    groups, uc = [], []
    for cols, codes in _exact(plan, columns, n):
        if codes is None:
            kind = UC
        else:
            kind = _cheapest(_costs(n, len(cols), codes.d, codes.counts.max()))[0]
        if kind == UC:
            uc += cols
        else:
            groups.append(_group(kind, np.array(cols, np.int64), codes, n))
    return groups, uc


def _exact(plan: _Plan, columns: dict, n: int) -> list[tuple[list[int], _Codes | None]]:
    """The exact codes of a planned group (from the codes of its ``columns``); a joint the
    sample misjudged (larger than its two parts apart) stays apart."""
    if plan.parts is None:
        return [(plan.cols, columns[plan.cols[0]])]
    a, b = (_exact(p, columns, n) for p in plan.parts)
    if len(a) > 1 or len(b) > 1 or a[0][1] is None or b[0][1] is None:
        return a + b  # a part already fell apart
    (cols_a, ca), (cols_b, cb) = a[0], b[0]
    joint = _join(ca, cb, n)
    apart = _exact_cost(len(cols_a), ca, n) + _exact_cost(len(cols_b), cb, n)
    return [(cols_a + cols_b, joint)] if _exact_cost(len(plan.cols), joint, n) <= apart else a + b


def _exact_cost(g: int, c: _Codes, n: int) -> float:
    return _cheapest(_costs(n, g, c.d, c.counts.max()))[1]


RUNS_PAY = 4  # runs replace codes when they take at most this fraction of the codes' bytes


def _runs_if_shorter(g: DdcGroup) -> Group:
    """``g`` as runs (an RLE group) when they are much smaller than its codes: sorted or
    clustered columns, where a run's work in a product is one fill or one sum."""
    ends = np.append(np.flatnonzero(np.diff(g.codes)) + 1, len(g.codes))
    ends = ends.astype(np.int32 if len(g.codes) < 2**31 else np.int64)
    if RUNS_PAY * len(ends) * (ends.itemsize + 4) > g.codes.nbytes:
        return g
    return RleGroup(g.cols, g.dictionary, ends, g.codes[ends - 1].astype(np.uint32), g.counts)


def _group(kind: str, cols: np.ndarray, c: _Codes, n: int) -> Group:
    """A constant, DDC or SDC group of these codes, tuples by descending count."""
    order = np.argsort(-c.counts, kind="stable")  # ties: first occurrence first
    counts, values = c.counts[order], np.ascontiguousarray(c.values[order])
    if kind == CONST:
        return ConstGroup(cols, values[0])
    rank = np.empty(c.d, np.int64)
    rank[order] = np.arange(c.d)
    if kind == DDC:
        return _runs_if_shorter(
            DdcGroup(cols, values, rank.astype(code_dtype(c.d))[c.full(n)], counts)
        )
    default = order[0]
    if c.rows is not None and c.fill == default:  # sparse column, zero default: no full codes
        keep = c.codes != default
        offsets, raw = c.rows[keep], c.codes[keep]
    else:
        full = c.full(n)
        offsets = np.flatnonzero(full != default)
        raw = full[offsets]
    codes = np.maximum(rank - 1, 0).astype(code_dtype(c.d - 1))[raw]
    offsets = offsets.astype(np.int32 if n < 2**31 else np.int64)
    return SdcGroup(cols, values[0], values[1:], offsets, codes, counts[1:])
