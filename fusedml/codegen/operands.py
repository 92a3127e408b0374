"""The operand protocol: how a generated kernel reads one input, per format.

A skeleton never asks which format an input has; it asks the input's operand (SystemDS's
``SideInput`` idea) for source text and argument values:

- ``args``/``marshal``: the kernel arguments an input becomes, and their values;
- ``buffers``: per-chunk scratch its cell reads need; ``load_row``: per-row statements before them;
- ``cell``: element (i, j), broadcasting a dimension of size one;
- ``visits_stored``: whether a Cell/MAgg kernel it drives visits only its stored entries;
- ``nonzeros``: a loop over the stored entries of a row (formats whose layout has them), binding
  the column, the value and the entry's position, ``stored``: how many entries there are, and
  ``entry_result``: a result with one value per stored entry, in the driver's structure.

``ScatteredRowOperand`` gives a format with a ``nonzeros`` loop its buffered cell reads. Each
format registers one operand (``register``); an input read whole (the ``B`` of ``X @ B``, the
factors of ``U @ V.T``) is passed as a dense array whatever its format.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from fusedml.formats import Format
from fusedml.ir.node import Node


@dataclass(frozen=True)
class Param:
    """One kernel input: a placeholder of the CPlan body, its argument name and its operand."""

    node: Node
    name: str
    operand: Operand

    @property
    def scalar(self) -> bool:
        return self.node.meta.is_scalar

    @property
    def annihilates(self) -> bool:
        """Whether a zero of this input annihilates: the placeholder's format decides, even when
        the input is passed densified."""
        return self.node.meta.format.zeros_annihilate

    @property
    def nonzero_layout(self) -> bool:
        return self.operand.iterates_nonzeros

    def args(self) -> list[str]:
        return self.operand.args(self)

    def row(self, i: str) -> str:
        return "0" if self.node.meta.rows == 1 else i

    def col(self, j: str) -> str:
        return "0" if self.node.meta.cols == 1 else j

    def at(self, i: str, j: str) -> str:
        return self.operand.cell(self, i, j)


class Operand:
    """Source and values for one format's inputs (see the module docstring)."""

    iterates_nonzeros = False
    merges = False  # reads a row's columns in increasing order with a cursor (``merge_read``)
    signed_rows = False  # its reads need a signed row index (uint64 + int64 is a float in numba)
    helpers = ""  # module-level source its code calls (defined once per kernel module)

    def args(self, p: Param) -> list[str]:
        return [p.name]

    def marshal(self, p: Param, value: Any) -> list[Any]:
        raise NotImplementedError

    def buffers(self, p: Param, cols: str) -> list[str]:
        return []

    def load_row(self, p: Param, i: str) -> list[str]:
        return []

    def cell(self, p: Param, i: str, j: str) -> str:
        raise NotImplementedError

    def nonzeros(self, p: Param, row: str, col: str, value: str, pos: str) -> list[str]:
        raise TypeError(f"{type(self).__name__} has no non-zero iteration")

    def visits_stored(self, cplan: Any, params: tuple[Param, ...]) -> bool:
        """Whether a Cell/MAgg kernel driven by this input visits only its stored entries (a
        sparse-safe body over a layout with non-zero iteration)."""
        return cplan.sparse_safe and self.iterates_nonzeros

    def stored(self, p: Param) -> str:
        raise TypeError(f"{type(self).__name__} has no stored entries")

    def entry_result(self, value: Any, data: np.ndarray) -> Any:
        raise TypeError(f"{type(self).__name__} has no stored entries")


class ScalarOperand(Operand):
    def marshal(self, p: Param, value: Any) -> list[Any]:
        return [float(value)]

    def cell(self, p: Param, i: str, j: str) -> str:
        return p.name


class DenseOperand(Operand):
    """A float64 C-ordered array; a vector (one row or one column) is passed 1-D, so its reads
    are contiguous and vectorize."""

    @staticmethod
    def flat(p: Param) -> bool:
        meta = p.node.meta
        return meta.rows == 1 or meta.cols == 1

    def marshal(self, p: Param, value: Any) -> list[Any]:
        dense = np.ascontiguousarray(p.node.meta.format.to_dense(value), dtype=np.float64)
        return [dense.reshape(-1) if self.flat(p) else dense]

    def cell(self, p: Param, i: str, j: str) -> str:
        meta = p.node.meta
        if not self.flat(p):
            return f"{p.name}[{p.row(i)}, {p.col(j)}]"
        if meta.rows == 1 and meta.cols == 1:
            return f"{p.name}[0]"
        return f"{p.name}[{i if meta.cols == 1 else j}]"

    def ncols(self, p: Param) -> str:
        """The number of columns, as source."""
        if self.flat(p):
            return "1" if p.node.meta.cols == 1 else f"{p.name}.shape[0]"
        return f"{p.name}.shape[1]"


class ScatteredRowOperand(Operand):
    """A format that stores rows' entries: cell reads scatter the row's entries (its ``nonzeros``
    loop) into a zeroed per-chunk buffer, then index it."""

    iterates_nonzeros = True

    def buffers(self, p: Param, cols: str) -> list[str]:
        return [f"{p.name}_buf = np.zeros({'1' if p.node.meta.cols == 1 else cols})"]

    def load_row(self, p: Param, i: str) -> list[str]:
        n = p.name
        return [
            f"{n}_buf[:] = 0.0",
            *self.nonzeros(p, p.row(i), f"{n}_j", f"{n}_v", f"{n}_p"),
            f"    {n}_buf[{n}_j] = {n}_v",
        ]

    def cell(self, p: Param, i: str, j: str) -> str:
        return f"{p.name}_buf[{p.col(j)}]"


class CsrOperand(ScatteredRowOperand):
    """Canonical CSR: ``data``, ``indices``, ``indptr``. Cell reads scatter the row into a zeroed
    buffer; non-zero iteration walks the row's entries. Unsigned positions and column indices
    (``np.uint64(indices[p])``) let LLVM drop numba's negative-index wrap-around: a sparse dot
    product ran 2.7x faster."""

    # rows read through unsigned positions too (``indptr[np.uint64(i) + np.uint64(1)]``: uint64 +
    # int64 is a float in numba), so kernels driven by CSR rows iterate unsigned rows: the
    # wrap-around test of a signed row index cost 20 % of a three-way merge's time
    helpers = """\
@numba.njit(inline="always")
def _fill_row(buf, data, indices, indptr, row):
    buf[:] = 0.0
    start, end = np.uint64(indptr[np.uint64(row)]), np.uint64(indptr[np.uint64(row) + np.uint64(1)])
    for p in range(start, end):
        buf[np.uint64(indices[p])] = data[p]
"""

    def args(self, p: Param) -> list[str]:
        return [f"{p.name}_data", f"{p.name}_indices", f"{p.name}_indptr"]

    def marshal(self, p: Param, value: Any) -> list[Any]:
        return [value.data, value.indices, value.indptr]

    def load_row(self, p: Param, i: str) -> list[str]:
        n = p.name  # one helper call instead of the generic loop: shorter kernel source
        return [f"_fill_row({n}_buf, {n}_data, {n}_indices, {n}_indptr, {p.row(i)})"]

    def nonzeros(self, p: Param, row: str, col: str, value: str, pos: str) -> list[str]:
        n = p.name
        start, end = _row_range(n, row)
        return [
            f"for {pos} in range({start}, {end}):",
            f"    {col} = np.uint64({n}_indices[{pos}])",
            f"    {value} = {n}_data[{pos}]",
        ]

    def stored(self, p: Param) -> str:
        return f"{p.name}_data.shape[0]"

    def entry_result(self, value: Any, data: np.ndarray) -> Any:
        return sp.csr_array((data, value.indices, value.indptr), shape=value.shape)

    merges = True

    def merge_start(self, p: Param, row: str) -> list[str]:
        """Per row: a cursor over the row's stored entries (see ``merge_read``)."""
        start, end = _row_range(p.name, row)
        return [f"{p.name}_at = {start}", f"{p.name}_end = {end}"]

    def merge_read(self, p: Param, col: str, skip: bool = False) -> list[str]:
        """``{name}_v``: the value at column ``col`` of the row, the columns visited in increasing
        order (another sparse input's stored entries): the cursor moves past smaller columns,
        where scattering the row into a zeroed scratch row wrote every column of it. ``skip``:
        a cell where this input is zero contributes nothing, so the visit moves on at once
        (``continue``), and ends once the row has no more entries (``break``)."""
        n = p.name
        advance = [
            f"while {n}_at < {n}_end and np.uint64({n}_indices[{n}_at]) < {col}:",
            f"    {n}_at += np.uint64(1)",
        ]
        if skip:
            return [
                *advance,
                f"if {n}_at == {n}_end:",
                "    break",
                f"if np.uint64({n}_indices[{n}_at]) != {col}:",
                "    continue",
                f"{n}_v = {n}_data[{n}_at]",
            ]
        hit = f"{n}_at < {n}_end and np.uint64({n}_indices[{n}_at]) == {col}"
        return [*advance, f"{n}_v = {n}_data[{n}_at] if {hit} else 0.0"]

    def cursor_parts(self, p: Param) -> tuple[str, str, str, str]:
        """Source of the row cursor's (entries left, column, value, position) (``merge_start``),
        for a visit of the columns several rows all store."""
        n = p.name
        col = f"np.uint64({n}_indices[{n}_at])"
        return f"{n}_at < {n}_end", col, f"{n}_data[{n}_at]", f"{n}_at"

    def union_next(self, p: Param, col: str) -> list[str]:
        """``col`` lowered to the column of the row's next stored entry (a union of rows visits
        the least of its inputs' next columns)."""
        n = p.name
        return [f"if {n}_at < {n}_end:", f"    {col} = min({col}, np.uint64({n}_indices[{n}_at]))"]

    def union_read(self, p: Param, col: str) -> list[str]:
        """``{name}_v`` at column ``col`` of a union visit: the entry there (the cursor moves past
        it) or zero."""
        n = p.name
        return [
            f"{n}_v = 0.0",
            f"if {n}_at < {n}_end and np.uint64({n}_indices[{n}_at]) == {col}:",
            f"    {n}_v = {n}_data[{n}_at]",
            f"    {n}_at += np.uint64(1)",
        ]


def _row_range(name: str, row: str) -> tuple[str, str]:
    """Source of a CSR row's first and end positions, unsigned."""
    at = f"np.uint64({row})"
    return (
        f"np.uint64({name}_indptr[{at}])",
        f"np.uint64({name}_indptr[{at} + np.uint64(1)])",
    )


SCALAR = ScalarOperand()
DENSE = DenseOperand()
_OPERANDS: dict[Format, Operand] = {Format.DENSE: DENSE, Format.CSR: CsrOperand()}


def register(fmt: Format, operand: Operand) -> None:
    """The operand of a format's inputs (a new format brings its own)."""
    _OPERANDS[fmt] = operand


def unregister(fmt: Format) -> None:
    _OPERANDS.pop(fmt, None)


def operand(node: Node, whole: bool = False) -> Operand:
    """The operand reading ``node``: scalars are scalars, inputs read whole are dense."""
    if node.meta.is_scalar:
        return SCALAR
    if whole:
        return DENSE
    try:
        return _OPERANDS[node.meta.format]
    except KeyError:
        raise TypeError(f"no kernel operand is registered for format {node.meta.format}") from None
