"""Kernels over compressed inputs: the compressed format's operand and skeletons.

The generic skeletons read a compressed input through its operand: rows are decoded a block at a
time into a per-chunk dense tile (``cla.decode_block``, called through its native entry point:
the base row of constant columns and SDC defaults, each DDC group's tuple by its code, the SDC
groups' other rows, the uncompressed columns), and cells are read from the tile. Where the body
allows, the format's own skeletons skip decoding: Cell/MAgg kernels evaluate the body once per
stored value (``cla_cell.py``), Row kernels multiply by the groups (``cla_row.py``).
"""

from __future__ import annotations

from typing import Any

from fusedml.codegen import operands, skeletons
from fusedml.codegen.cell import cell_kernel
from fusedml.codegen.cla_cell import per_value, per_value_kernel
from fusedml.codegen.cla_row import GroupedRowBody, GroupedSink, only_multiplied
from fusedml.codegen.operands import Operand, Param
from fusedml.codegen.row import row_kernel
from fusedml.formats import COMPRESSED, COMPRESSED_T
from fusedml.formats.compressed import CompressedMatrix
from fusedml.formats.compressed_kernels import NAMES, SOURCE_DIGEST, arrays, native, words
from fusedml.fusion.templates import TemplateType

TILE_ROWS = 256  # rows decoded at a time: a few hundred KB of tile per thread at most widths

_HELPERS = f"import fusedml.formats.compressed_kernels as cla  # {SOURCE_DIGEST}\n"


class CompressedOperand(Operand):
    """Cell reads decode the row into a per-chunk buffer (see the module docstring)."""

    signed_rows = True
    helpers = _HELPERS

    def args(self, p: Param) -> list[str]:
        """The packed arrays, the matrix's words and the decoder's address."""
        return [*(f"{p.name}_{a}" for a in NAMES), f"{p.name}_words", f"{p.name}_decode"]

    def marshal(self, p: Param, value: CompressedMatrix) -> list[Any]:
        return [*arrays(value), words(value), native("decode_block")]

    def visits_stored(self, cplan: Any, params: tuple[Param, ...]) -> bool:
        """Cell and MAgg bodies that read other inputs by column only run once per stored value
        (``cla_cell.py``)."""
        return per_value(cplan, params, COMPRESSED)

    def entry_result(self, value: CompressedMatrix, data: Any) -> CompressedMatrix:
        return value.with_values(*data)

    def buffers(self, p: Param, cols: str) -> list[str]:
        n = p.name
        return [
            f"{n}_tile = np.empty(({TILE_ROWS}, {n}_base.shape[0]))",
            f"{n}_lo = np.int64(0)",
            f"{n}_hi = np.int64(0)",  # the rows the tile holds: none yet
        ]

    def load_row(self, p: Param, i: str) -> list[str]:
        n, r = p.name, p.row(i)
        tile = f"{n}_tile.ctypes.data, {TILE_ROWS}, {n}_tile.shape[1]"
        return [
            f"if {r} < {n}_lo or {r} >= {n}_hi:",
            f"    {n}_lo = np.int64({r})",
            f"    {n}_hi = min({n}_lo + {TILE_ROWS}, {n}_uc.shape[0])",
            f"    native.call({n}_decode, ({tile}, {n}_lo, {n}_hi, {n}_words.ctypes.data))",
        ]

    def cell(self, p: Param, i: str, j: str) -> str:
        return f"{p.name}_tile[{p.row(i)} - {p.name}_lo, {p.col(j)}]"


def _cell_skeleton(spec: Any) -> Any:
    return per_value_kernel(spec) if spec.sparse else cell_kernel(spec)


def _row_skeleton(spec: Any) -> Any:
    if only_multiplied(spec.cplan):
        return row_kernel(spec, GroupedRowBody, GroupedSink)
    return row_kernel(spec)


operands.register(COMPRESSED, CompressedOperand())
skeletons.register(TemplateType.CELL, COMPRESSED, _cell_skeleton)
skeletons.register(TemplateType.MAGG, COMPRESSED, _cell_skeleton)
skeletons.register(TemplateType.ROW, COMPRESSED, _row_skeleton)


class TransposedOperand(operands.DenseOperand):
    """A lazy transpose of a compressed matrix, read by a kernel: decompressed (products with
    it run on the groups where the reference interpreter or a Row operator's ``X.T @ ...``
    reads it instead)."""


operands.register(COMPRESSED_T, TransposedOperand())
