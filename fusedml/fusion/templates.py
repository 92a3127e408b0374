"""The four fusion templates and their open / fuse / merge / close rules, written once as data.

A rule sees one node (and, for fuse/merge, the input position and the memo entry being extended)
and answers from shapes and op kinds alone, as SystemDS's templates do
(reference/systemds-codegen.md section 3), adapted to this IR:

- CELL: elementwise chains with no, row, column or full aggregation (sum, min, max, mean).
- ROW: row-wise chains incl. ``X @ v``, ``X @ B`` with skinny ``B``, row and column aggregates,
  column ranges, hstack, one-hot rows of argmax, and the closing column aggregation
  ``X.T @ (...)`` (mmchain).
- OUTER: ``W * f(U @ V.T)`` on a sparse driver, closed by a full aggregate, a left/right product
  or left open as a cellwise result; opened only where ``U @ V.T`` would be large.
- MAGG: never opened by exploration; the cost-based selector groups full aggregates into it.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from fusedml.ir.node import Node
from fusedml.ir.ops import ELEMENTWISE, UNARY, Op

# The widest per-row vector of a Row operator's products (``X @ B``, and the skinny side of
# ``X.T @ Y``). SystemDS's isSkinnyRightHandSide stops below 64; here wide products over dense
# rows are one BLAS call per tile with the rest of the body fused after it (codegen/row_tiles.py),
# so that KMeans' distances to a few hundred centroids are not materialized.
SKINNY_MAX_COLS = 512
COLUMN_AGGREGATION_CELLS = 1 << 18  # X.T @ Y: per-chunk partials of at most 2 MB
OUTER_MIN_DIM = 256  # both dims of U @ V.T above this before the Outer template opens
CELL_AGGREGATES = frozenset({Op.SUM, Op.MIN, Op.MAX, Op.MEAN})
OUTER_AGGREGATES = frozenset({Op.SUM})


class TemplateType(enum.IntEnum):
    """Template kinds; the value is the preference rank (lower is preferred), as in SystemDS."""

    MAGG = 0
    OUTER = 1
    ROW = 2
    CELL = 3

    @property
    def label(self) -> str:
        return self.name.lower()


class CloseType(enum.Enum):
    OPEN_VALID = "OV"  # can grow, and is a valid operator root as it is
    OPEN_INVALID = "OI"  # can grow, but is not a valid root yet
    CLOSED_VALID = "CV"  # a finished operator (an aggregate or a closing product)
    CLOSED_INVALID = "CI"  # cannot be an operator: dropped

    @property
    def is_open(self) -> bool:
        return self in (CloseType.OPEN_VALID, CloseType.OPEN_INVALID)

    @property
    def is_valid(self) -> bool:
        return self in (CloseType.OPEN_VALID, CloseType.CLOSED_VALID)


# -- shape predicates shared by the rules ------------------------------------------------------
def is_matrix(n: Node) -> bool:
    return not n.meta.is_scalar


def cell_op(n: Node) -> bool:
    """Elementwise with a matrix output that one input already has (no outer-style broadcast)."""
    return n.op in ELEMENTWISE and is_matrix(n) and any(i.shape == n.shape for i in n.inputs)


def row_op(n: Node) -> bool:
    return cell_op(n) and n.meta.rows > 1


def skinny_product(n: Node) -> bool:
    """``X @ B`` with a left operand of many rows and a right one of at most ``SKINNY_MAX_COLS``
    columns (incl. vectors). Unlike SystemDS, B may have fewer rows than columns: materializing
    ``X @ B`` (KMeans with more clusters than features, MLogReg with more classes than features)
    was measured 1.1-1.9x slower at 16-64 columns."""
    if n.op is not Op.MATMUL or n.inputs[0].op is Op.TRANSPOSE:
        return False
    m, c = n.inputs[0].shape[0], n.inputs[1].shape[1]
    return m > c and c <= SKINNY_MAX_COLS and not outer_product(n)


def column_aggregation(n: Node) -> bool:
    """``X.T @ Y`` with skinny ``Y`` (mmchain) or skinny ``X`` (KMeans' ``P.T @ X``): a column
    aggregation of per-row results, with a small output each row chunk accumulates."""
    if n.op is not Op.MATMUL or n.inputs[0].op is not Op.TRANSPOSE:
        return False
    x, y = n.inputs[0].inputs[0], n.inputs[1]
    skinny = min(x.meta.cols, y.meta.cols) <= SKINNY_MAX_COLS
    return x.meta.rows > 1 and skinny and x.meta.cols * y.meta.cols <= COLUMN_AGGREGATION_CELLS


def row_aggregate(n: Node) -> bool:
    return n.op in CELL_AGGREGATES and n.attr("axis") in (0, 1)


def outer_product(n: Node) -> bool:
    """``U @ V.T``-like: a low-rank product of two tall factors with a large output."""
    if n.op is not Op.MATMUL:
        return False
    m, r = n.inputs[0].shape
    c = n.shape[1]
    return m > OUTER_MIN_DIM and c > OUTER_MIN_DIM and r < min(m, c)


@dataclass(frozen=True)
class Rules:
    """One template's rules. ``fuse(node, i, child_close)`` extends the open entry at input ``i``;
    ``merge(node, j)`` lets another input ``j`` join the same operator."""

    type: TemplateType
    open: Callable[[Node], bool]
    fuse: Callable[[Node, int, CloseType], bool]
    merge: Callable[[Node, int], bool]
    close: Callable[[Node], CloseType]


def _cell_close(n: Node) -> CloseType:
    if n.op in CELL_AGGREGATES:
        return CloseType.CLOSED_VALID
    if n.op in (Op.ARGMAX, Op.MATMUL):
        return CloseType.CLOSED_INVALID
    return CloseType.OPEN_VALID


CELL = Rules(
    TemplateType.CELL,
    open=lambda n: cell_op(n) and n.shape != (1, 1),
    fuse=lambda n, i, c: cell_op(n) or n.op in CELL_AGGREGATES,
    merge=lambda n, j: cell_op(n),
    close=_cell_close,
)


def _row_close(n: Node) -> CloseType:
    if column_aggregation(n) or (n.op in CELL_AGGREGATES and n.attr("axis") in (None, 0)):
        return CloseType.CLOSED_VALID
    if n.op is Op.TRANSPOSE:
        return CloseType.OPEN_INVALID
    return CloseType.OPEN_VALID


def _row_open(n: Node) -> bool:
    if n.op in (Op.COLS, Op.HSTACK, Op.ONEHOT):
        return n.meta.rows > 1
    if row_aggregate(n):
        return is_matrix(n.inputs[0]) and n.inputs[0].meta.rows > 1
    return row_op(n) or skinny_product(n)


def tall_transposed(n: Node) -> bool:
    """``P.T`` of a tall, skinny per-row result ``P``: the left operand of ``P.T @ Y``."""
    p = n.inputs[0]
    return n.op is Op.TRANSPOSE and p.meta.rows > 1 and p.meta.cols <= SKINNY_MAX_COLS


def _row_fuse(n: Node, i: int, child: CloseType) -> bool:
    if n.inputs[i].op is Op.TRANSPOSE:
        # a transposed per-row result is only ever consumed as the left operand of P.T @ Y,
        # whose skeleton reads row i of P and of Y together (KMeans' P.T @ X)
        return column_aggregation(n) and i == 0
    if n.op is Op.TRANSPOSE:
        return tall_transposed(n)
    if n.op in CELL_AGGREGATES or n.op is Op.ARGMAX:  # argmax: a row-wise index, per row
        return n.inputs[0].meta.rows > 1
    if column_aggregation(n):
        return i == 1
    return _row_open(n) and (not skinny_product(n) or i == 0)


def _row_merge(n: Node, j: int) -> bool:
    if n.inputs[j].op is Op.TRANSPOSE:
        return column_aggregation(n) and j == 0
    if n.op is Op.HSTACK or column_aggregation(n):  # P.T @ Y: both sides computed per row
        return True
    return row_op(n) and n.inputs[j].meta.rows > 1


ROW = Rules(TemplateType.ROW, _row_open, _row_fuse, _row_merge, _row_close)


def _outer_fuse(n: Node, i: int, child: CloseType) -> bool:
    if n.op in UNARY:
        return True
    if n.op in ELEMENTWISE and len(n.inputs) == 2:
        other = n.inputs[1 - i]
        return other.meta.is_scalar or other.meta.rows == 1 or other.shape == n.shape
    if n.op in OUTER_AGGREGATES and n.attr("axis") is None:
        return child is CloseType.OPEN_VALID  # only once a sparse driver multiplies in
    if n.op is Op.MATMUL and not outer_product(n):
        # right: (W * f(U V')) @ V;  left: (W * f(U V')).T @ U, seen as t(x) @ U with i == 0
        # (an Outer transpose only ever transposes the driver)
        return i == 0 and (child is CloseType.OPEN_VALID or n.inputs[0].op is Op.TRANSPOSE)
    if n.op is Op.TRANSPOSE:
        return child is CloseType.OPEN_VALID
    return False


def _outer_merge(n: Node, j: int) -> bool:
    if n.op not in ELEMENTWISE or len(n.inputs) != 2:
        return False
    x = n.inputs[j]
    if x.meta.is_scalar or x.meta.rows == 1:
        return True
    return n.op in (Op.MUL, Op.DIV) and x.shape == n.shape and not outer_product(x)


def _outer_close(n: Node) -> CloseType:
    if (n.op in (Op.MATMUL, *CELL_AGGREGATES)) and any(outer_product(i) for i in n.inputs):
        return CloseType.CLOSED_INVALID  # sum(U @ V.T) or (U @ V.T) @ V: nothing to drive
    if n.op in OUTER_AGGREGATES and n.attr("axis") is None:
        return CloseType.CLOSED_VALID
    if n.op is Op.MATMUL and not outer_product(n):
        return CloseType.CLOSED_VALID
    if n.op in (Op.MUL, Op.DIV) and all(i.shape == n.shape for i in n.inputs):
        return CloseType.OPEN_VALID  # the driver: W * f(U @ V.T)
    if n.op in CELL_AGGREGATES or n.op is Op.ARGMAX:
        return CloseType.CLOSED_INVALID
    return CloseType.OPEN_INVALID


OUTER = Rules(TemplateType.OUTER, outer_product, _outer_fuse, _outer_merge, _outer_close)

TEMPLATES: dict[TemplateType, Rules] = {t.type: t for t in (ROW, CELL, OUTER)}

# A child's open entry of this type can be extended by these templates (CELL plans are absorbable
# by Row operators too).
COMPATIBLE: dict[TemplateType, tuple[TemplateType, ...]] = {
    TemplateType.CELL: (TemplateType.CELL, TemplateType.ROW),
    TemplateType.ROW: (TemplateType.ROW,),
    TemplateType.OUTER: (TemplateType.OUTER,),
    TemplateType.MAGG: (),
}


def inner_types(parent: TemplateType) -> tuple[TemplateType, ...]:
    """Entry types a fused input may use inside an operator of type ``parent``."""
    return (parent,) if parent is TemplateType.CELL else (parent, TemplateType.CELL)
