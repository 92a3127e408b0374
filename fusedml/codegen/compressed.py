"""Kernels over compressed inputs: the compressed format's operand, read row by row.

A kernel reads a compressed input one decoded row at a time: the row starts as the base row
(constant columns and SDC defaults), each DDC group writes the tuple its code names, each SDC
group whose next non-default row is this one writes that tuple (a cursor per group, advanced
row by row and found by binary search when a chunk starts), uncompressed columns are copied. The
generic skeletons then read the decoded row as a dense one.
"""

from __future__ import annotations

from typing import Any

from fusedml.codegen import operands, skeletons
from fusedml.codegen.cell import cell_kernel
from fusedml.codegen.cla_cell import per_value, per_value_kernel
from fusedml.codegen.cla_rows import SOURCE_DIGEST
from fusedml.codegen.operands import Param, ScatteredRowOperand
from fusedml.formats import COMPRESSED, COMPRESSED_T
from fusedml.formats.compressed import CompressedMatrix
from fusedml.fusion.templates import TemplateType

_ARGS = (
    "base", "c8", "c16", "c32", "dcols", "dcolptr", "dvals", "dvalptr",
    "soff", "scodes", "sptr", "scols", "scolptr", "svals", "svalptr", "ucols", "uc",
    "dtupptr", "dcounts", "stupptr", "scounts", "ccols",
)  # fmt: skip

_HELPERS = f"import fusedml.codegen.cla_rows as cla  # cla_rows {SOURCE_DIGEST}\n"


class CompressedOperand(ScatteredRowOperand):
    """Cell reads decode the row into a per-chunk buffer (see the module docstring)."""

    iterates_nonzeros = False
    signed_rows = True
    helpers = _HELPERS

    def args(self, p: Param) -> list[str]:
        return [f"{p.name}_{a}" for a in _ARGS]

    def marshal(self, p: Param, value: CompressedMatrix) -> list[Any]:
        ddc, sdc = value.ddc, value.sdc
        return [
            value.base, *value.codes, ddc.cols, ddc.colptr, ddc.values, ddc.valptr,
            value.sdc_offsets, value.sdc_codes, value.sdc_ptr, sdc.cols, sdc.colptr,
            sdc.values, sdc.valptr, value.uc_cols, value.uc, ddc.tupptr, ddc.counts, sdc.tupptr,
            sdc.counts, value.const_cols,
        ]  # fmt: skip

    def visits_stored(self, cplan: Any, params: tuple[Param, ...]) -> bool:
        """Cell and MAgg bodies that read other inputs by column only run once per stored value
        (``cla_cell.py``)."""
        return per_value(cplan, params, COMPRESSED)

    def entry_result(self, value: CompressedMatrix, data: Any) -> CompressedMatrix:
        return value.with_values(*data)

    def buffers(self, p: Param, cols: str) -> list[str]:
        n = p.name
        width = "1" if p.node.meta.cols == 1 else cols
        return [
            f"{n}_buf = np.empty({width})",
            f"{n}_cur = np.full({n}_sptr.shape[0], np.int64(-2))",
        ]

    def load_row(self, p: Param, i: str) -> list[str]:
        n = p.name
        args = ", ".join(self.args(p)[:17])  # the decoding's arrays
        return [f"cla.row({n}_buf, {n}_cur, {p.row(i)}, {args})"]


def _cell_skeleton(spec: Any) -> Any:
    return per_value_kernel(spec) if spec.sparse else cell_kernel(spec)


operands.register(COMPRESSED, CompressedOperand())
skeletons.register(TemplateType.CELL, COMPRESSED, _cell_skeleton)
skeletons.register(TemplateType.MAGG, COMPRESSED, _cell_skeleton)


class TransposedOperand(operands.DenseOperand):
    """A lazy transpose of a compressed matrix, read by a kernel: decompressed (products with
    it run on the groups where the reference interpreter or a Row operator's ``X.T @ ...``
    reads it instead)."""


operands.register(COMPRESSED_T, TransposedOperand())
