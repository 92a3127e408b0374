"""The reference interpreter's operations on compressed inputs: elementwise ops with scalars
(the result stays compressed), sums, minima and maxima, and products with dense matrices run on
the column groups (``fusedml.formats.compressed_ops``); every other op computes on the
decompressed matrix."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from fusedml.formats import COMPRESSED
from fusedml.formats import compressed_ops as ops
from fusedml.formats.compressed import CompressedMatrix
from fusedml.ir.node import Node
from fusedml.ir.ops import ELEMENTWISE, Op, apply_elementwise
from fusedml.runtime.reference import Value, register_native

_REDUCE = {Op.SUM: "sum", Op.MEAN: "sum", Op.MIN: "min", Op.MAX: "max"}


def _dense(v: Value) -> np.ndarray:
    return v.toarray() if sp.issparse(v) else np.asarray(v)


def _elementwise(node: Node, args: Sequence[Value]) -> Value:
    (x,) = {id(a): a for a in args if isinstance(a, CompressedMatrix)}.values()
    return ops.map_values(
        x, lambda v: apply_elementwise(node.op, *(v if a is x else a for a in args))
    )


def _aggregate(node: Node, x: CompressedMatrix) -> Value:
    axis, how = node.attr("axis"), _REDUCE[node.op]
    if axis is None:
        value = ops.full_reduce(x, how)
        count = x.size
    elif axis == 0:
        value, count = ops.col_reduce(x, how), x.shape[0]
    else:
        value, count = ops.row_reduce(x, how), x.shape[1]
    if node.op is Op.MEAN:
        with np.errstate(all="ignore"):
            value = np.divide(value, count)
        return float(value) if axis is None else value
    return value


def evaluate(node: Node, args: Sequence[Value]) -> Value:
    """A node with a compressed input, run on the groups; NotImplemented where no group
    operation exists."""
    if node.op in ELEMENTWISE and node.meta.format is COMPRESSED:
        return _elementwise(node, args)
    if node.op in _REDUCE and isinstance(args[0], CompressedMatrix):
        return _aggregate(node, args[0])
    if node.op is Op.MATMUL:
        a, b = args
        if isinstance(a, CompressedMatrix) and not isinstance(b, CompressedMatrix):
            return ops.right_matmul(a, _dense(b))
        if isinstance(b, CompressedMatrix) and not isinstance(a, CompressedMatrix):
            return ops.left_matmul(_dense(a), b)
    return NotImplemented


register_native(COMPRESSED, evaluate)
