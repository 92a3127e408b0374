"""The reference interpreter's operations on compressed inputs: elementwise ops with scalars
(the result stays compressed), sums, minima and maxima, and products with dense matrices run on
the column groups (``fusedml.formats.compressed_ops``); every other op computes on the
decompressed matrix."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from fusedml.formats import COMPRESSED, COMPRESSED_T
from fusedml.formats import compressed_ops as ops
from fusedml.formats.compressed import CompressedMatrix, TransposedCompressed
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


def _aggregate(op: Op, axis: int | None, x: CompressedMatrix) -> Value:
    how = _REDUCE[op]
    if axis is None:
        value = ops.full_reduce(x, how)
        count = x.size
    elif axis == 0:
        value, count = ops.col_reduce(x, how), x.shape[0]
    else:
        value, count = ops.row_reduce(x, how), x.shape[1]
    if op is Op.MEAN:
        with np.errstate(all="ignore"):
            value = np.divide(value, count)
        return float(value) if axis is None else value
    return value


def _matmul(a: Value, b: Value) -> Value:
    """a @ b with one compressed operand (or its lazy transpose), or NotImplemented."""
    packed = (CompressedMatrix, TransposedCompressed)
    if isinstance(a, packed) and isinstance(b, packed):
        return NotImplemented
    if sp.issparse(a) or sp.issparse(b):  # only its stored entries multiply (scipy's rule)
        return NotImplemented
    if isinstance(a, CompressedMatrix):
        return ops.right_matmul(a, _dense(b))
    if isinstance(b, CompressedMatrix):
        return ops.left_matmul(_dense(a), b)
    if isinstance(a, TransposedCompressed):  # X.T @ b = (b.T @ X).T
        return np.ascontiguousarray(ops.left_matmul(_dense(b).T, a.T).T)
    if isinstance(b, TransposedCompressed):  # a @ X.T = (X @ a.T).T
        return np.ascontiguousarray(ops.right_matmul(b.T, _dense(a).T).T)
    return NotImplemented


def evaluate(node: Node, args: Sequence[Value]) -> Value:
    """A node with a compressed input (or a lazy transpose of one), run on the groups;
    NotImplemented where no group operation exists."""
    if node.op in ELEMENTWISE and node.meta.format is COMPRESSED:
        return _elementwise(node, args)
    if node.op is Op.TRANSPOSE:
        (x,) = args
        return x.T  # lazily, either way
    if node.op in _REDUCE and isinstance(args[0], CompressedMatrix):
        return _aggregate(node.op, node.attr("axis"), args[0])
    if node.op in _REDUCE and isinstance(args[0], TransposedCompressed):
        axis = node.attr("axis")  # X.T's rows are X's columns
        value = _aggregate(node.op, None if axis is None else 1 - axis, args[0].T)
        return value if axis is None else np.ascontiguousarray(value.T)
    if node.op is Op.MATMUL:
        return _matmul(*args)
    return NotImplemented


register_native(COMPRESSED, evaluate)
register_native(COMPRESSED_T, evaluate)
