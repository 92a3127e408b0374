"""A third data format that lives only in the test suite: ELLPACK (ELL), to keep the format axis
honest. It is registered through ``Format`` traits and the codegen operand protocol alone; no
skeleton, Row code or cost rule knows it.

An ``Ell`` matrix stores each row's entries left-packed in the same number of slots ``width``
(the longest row's entry count): ``cols`` (int64, -1 in unused slots) and ``vals``, both flattened
row by row. Its semantics are sparse (a zero annihilates, as CSR's do), its layout iterates stored
entries, and the reference interpreter computes on it as CSR.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
import scipy.sparse as sp

from fusedml.codegen import operands
from fusedml.codegen.operands import Param, ScatteredRowOperand
from fusedml.formats import Format


class Ell:
    def __init__(self, cols: np.ndarray, vals: np.ndarray, shape: tuple[int, int], width: int):
        self.cols, self.vals, self.shape, self.width = cols, vals, shape, width
        self.ndim = 2

    @classmethod
    def from_csr(cls, csr: sp.csr_array) -> Ell:
        m = csr.shape[0]
        counts = np.diff(csr.indptr)
        width = int(counts.max()) if m else 0
        cols = np.full((m, width), -1, dtype=np.int64)
        vals = np.zeros((m, width))
        slot = np.arange(csr.nnz) - np.repeat(csr.indptr[:-1], counts)
        rows = np.repeat(np.arange(m), counts)
        cols[rows, slot] = csr.indices
        vals[rows, slot] = csr.data
        return cls(cols.reshape(-1), vals.reshape(-1), csr.shape, width)

    @property
    def nnz(self) -> int:
        return int(np.count_nonzero(self.cols >= 0))

    def to_csr(self) -> sp.csr_array:
        m, n = self.shape
        used = self.cols >= 0
        counts = used.reshape(m, self.width).sum(axis=1) if self.width else np.zeros(m, int)
        indptr = np.concatenate(([0], np.cumsum(counts)))
        return sp.csr_array((self.vals[used], self.cols[used], indptr), shape=(m, n))

    def __getitem__(self, rows: slice) -> Ell:
        """A block of rows (row blocks are what a backend splits inputs into)."""
        start, stop, _ = rows.indices(self.shape[0])
        w = self.width
        part = slice(start * w, max(start, stop) * w)
        return Ell(self.cols[part], self.vals[part], (max(stop - start, 0), self.shape[1]), w)

    def copy(self) -> Ell:
        return Ell(self.cols.copy(), self.vals.copy(), self.shape, self.width)


class EllFormat(Format):
    name = "ell"
    zeros_annihilate = True
    iterates_nonzeros = True
    views = False
    threaded_products = False

    def nbytes(self, meta) -> float:
        return 16.0 * meta.nnz + 8.0 * meta.rows  # a column and a value per slot

    def claims(self, value) -> bool:
        return isinstance(value, Ell)

    def from_value(self, value, what: str = "fm.matrix") -> Ell:
        return value if isinstance(value, Ell) else Ell.from_csr(Format.CSR.from_value(value, what))

    def nnz(self, value) -> int:
        return value.nnz

    def to_canonical(self, value):
        return value.to_csr()

    def to_dense(self, value) -> np.ndarray:
        return value.to_csr().toarray()

    def arrays(self, value) -> list[np.ndarray]:
        return [value.vals]


class EllOperand(ScatteredRowOperand):
    """Cell reads scatter the row into a buffer; non-zero iteration walks the row's slots until
    the first unused one. A flat entry position p = row * width + slot."""

    signed_rows = True  # row * width with an int64 width

    def args(self, p: Param) -> list[str]:
        return [f"{p.name}_cols", f"{p.name}_vals", f"{p.name}_width"]

    def marshal(self, p: Param, value: Ell) -> list:
        return [value.cols, value.vals, value.width]

    def nonzeros(self, p: Param, row: str, col: str, value: str, pos: str) -> list[str]:
        n = p.name
        return [
            f"for {pos} in range({row} * {n}_width, ({row} + 1) * {n}_width):",
            f"    if {n}_cols[{pos}] < 0:",
            "        break",
            f"    {col} = np.uint64({n}_cols[{pos}])",
            f"    {value} = {n}_vals[{pos}]",
        ]

    def stored(self, p: Param) -> str:
        return f"{p.name}_vals.shape[0]"

    def entry_result(self, value: Ell, data: np.ndarray):
        return Ell(value.cols, data, value.shape, value.width).to_csr()


ELL = EllFormat()


@contextlib.contextmanager
def registered() -> Iterator[EllFormat]:
    """ELL as a member of the format axis for the duration of the block."""
    Format.register(ELL)
    operands.register(ELL, EllOperand())
    try:
        yield ELL
    finally:
        operands.unregister(ELL)
        Format.unregister(ELL)
