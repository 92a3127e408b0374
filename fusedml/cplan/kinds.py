"""Output kinds: what a fused operator computes per output, and how per-block partials combine.

A kernel may run over row blocks of its main input (the Dask backend runs one per block; the local
backend runs one block, the whole input). Each output of a block is a *partial* in the output's IR
form, with a mean still a sum; ``combine`` joins the partials of consecutive blocks in order and
``finalize`` turns the combined value into the output's value (a mean divided by its count).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

import numpy as np

from fusedml.formats import Format
from fusedml.ir.node import Node
from fusedml.ir.ops import AGGREGATE, Op


class OutputKind(enum.Enum):
    NO_AGG = "no_agg"  # one value per cell of the rows it iterates
    ROW_AGG = "row_agg"  # one value per row
    ROW_PRODUCT = "row_product"  # each row's values times a matrix: (...) @ B
    COL_AGG = "col_agg"  # one value per column, aggregated over the rows
    FULL_AGG = "full_agg"  # one value
    COL_PRODUCT = "col_product"  # (...).T @ Y: products summed over the rows
    MULTI = "multi"  # an operator of several outputs, each of its own kind

    @property
    def per_row(self) -> bool:
        """Whether blocks of rows give blocks of rows of the output (no aggregation over rows)."""
        return self in (OutputKind.NO_AGG, OutputKind.ROW_AGG, OutputKind.ROW_PRODUCT)

    def combine(self, partials: Sequence[Any], agg: str | None) -> Any:
        """The partial of consecutive row blocks, in order."""
        if len(partials) == 1:
            return partials[0]
        if self.per_row:
            return Format.of(partials[0]).vstack(list(partials))
        if self is OutputKind.MULTI:
            raise ValueError("a multi-output operator combines each output by its own kind")
        stacked = np.asarray(partials, dtype=np.float64)
        if agg in (None, "sum", "mean") or self is OutputKind.COL_PRODUCT:
            out = stacked[0].copy() if stacked.ndim > 1 else stacked[0]
            with np.errstate(all="ignore"):  # inf - inf is NaN, silently as in every mode
                for p in stacked[1:]:
                    out = out + p
        else:  # min/max: NaN wins, as in the kernels and numpy
            out = (np.minimum if agg == "min" else np.maximum).reduce(stacked, axis=0)
        return float(out) if self is OutputKind.FULL_AGG else out

    def finalize(self, value: Any, agg: str | None, count: int) -> Any:
        """The output's value from the combined partial; ``count`` is the number of cells (full
        aggregates) or rows (column aggregates) a mean divides by (``mean_count``)."""
        if agg != Op.MEAN.value or self.per_row:
            return value
        with np.errstate(all="ignore"):
            if self is OutputKind.FULL_AGG:
                return value / count if count else np.nan
            return value / count


def output_kind(root: Node, template: Any) -> OutputKind:
    """The kind of one output root of an operator of ``template`` (a fusion TemplateType)."""
    if root.op in AGGREGATE:
        return {None: OutputKind.FULL_AGG, 0: OutputKind.COL_AGG, 1: OutputKind.ROW_AGG}[
            root.attr("axis")
        ]
    if root.op is Op.MATMUL and template.label in ("row", "outer"):
        if root.inputs[0].op is Op.TRANSPOSE:
            return OutputKind.COL_PRODUCT
        return OutputKind.ROW_PRODUCT
    return OutputKind.NO_AGG


def mean_count(root: Node, kind: OutputKind) -> int:
    """What a mean output's combined sum is divided by: the aggregated cells (full) or rows
    (column aggregates). Row means are complete in every block: kernels divide them."""
    if root.op is not Op.MEAN or kind.per_row:
        return 1
    x = root.inputs[0]
    return x.meta.cells if kind is OutputKind.FULL_AGG else x.meta.rows
