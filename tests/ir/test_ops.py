"""The op table: traits partition the ops, and the sparse-safety set is what numpy computes."""

import numpy as np

from fusedml.ir import ops
from fusedml.ir.ops import Op


def test_every_op_has_exactly_one_kind():
    kinds = [ops.LEAF, ops.UNARY, ops.BINARY, ops.TERNARY, ops.AGGREGATE, ops.STRUCTURE,
             ops.ROWWISE, frozenset({Op.MATMUL}), frozenset({Op.HAND})]  # fmt: skip
    for op in Op:
        assert sum(op in k for k in kinds) == 1, op


def test_every_elementwise_op_has_a_definition_and_flop_weight():
    assert set(ops.ELEMENTWISE_FN) == ops.ELEMENTWISE
    assert set(ops.FLOPS_PER_CELL) >= ops.ELEMENTWISE
    assert set(ops.FLOPS_PER_AGGREGATED_CELL) == ops.AGGREGATE


def test_sparse_safe_unary_ops_are_exactly_those_with_f0_equal_0():
    with np.errstate(all="ignore"):
        computed = {op for op in ops.UNARY if ops.ELEMENTWISE_FN[op](np.float64(0.0)) == 0.0}
    assert computed == ops.SPARSE_SAFE_UNARY


def test_zero_preserving_binary_probe():
    assert ops.zero_preserving(Op.ADD)  # 0 + 0
    assert not ops.zero_preserving(Op.EQ)  # 0 == 0 is 1
    assert ops.zero_preserving(Op.POW, 2.0)  # 0 ** 2
    assert not ops.zero_preserving(Op.POW, 0.0)  # 0 ** 0 is 1
    assert not ops.zero_preserving(Op.ADD, np.nan)
    assert ops.zero_preserving(Op.GT, 0.0)
    assert not ops.zero_preserving(Op.LT, 1.0)  # 0 < 1
    assert ops.zero_preserving(Op.MAXIMUM, -1.0) and not ops.zero_preserving(Op.MAXIMUM, 1.0)
