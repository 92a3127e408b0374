"""Algebraic simplification rules: (name, pattern, replacement), one line of intent each.

Every rule must keep the value of the node it replaces exactly (no rule that would change NaN or
inf propagation, e.g. ``X*0 -> 0``); the driver additionally refuses any replacement whose shape,
format or dtype differs from the node it replaces.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from fusedml.ir.build import const, make
from fusedml.ir.node import Node
from fusedml.ir.ops import ELEMENTWISE, Op, apply_elementwise
from fusedml.rewrite.pattern import P, any_node, const_value


@dataclass(frozen=True)
class Rule:
    name: str
    pattern: P
    replace: Callable[..., Node]  # called with the matched node and the named sub-matches


X, Y = any_node("x"), any_node("y")
FULL_AGGREGATES = frozenset({Op.SUM, Op.MIN, Op.MAX, Op.MEAN})


def _full_range(node: Node) -> bool:
    return node.attr("start") == 0 and node.attr("stop") == node.inputs[0].meta.cols


def _all_const(node: Node) -> bool:
    return all(i.op is Op.CONST for i in node.inputs)


def _zero(negative: bool) -> P:
    """The literal 0.0 of one sign: ``x + 0.0`` turns -0.0 into 0.0, ``x + -0.0`` keeps every x."""

    def signed_zero(node: Node) -> bool:
        value = node.attr("value")
        return value == 0.0 and (math.copysign(1.0, value) < 0) == negative

    return P(Op.CONST, guard=signed_zero)


def _fold(node: Node) -> Node:
    return const(float(apply_elementwise(node.op, *(i.attr("value") for i in node.inputs))))


ALGEBRAIC: tuple[Rule, ...] = (
    Rule("t(t(X)) -> X", P(Op.TRANSPOSE, P(Op.TRANSPOSE, X)), lambda n, x: x),
    Rule("X * 1 -> X", P(Op.MUL, X, const_value(1.0)), lambda n, x: x),
    Rule("X / 1 -> X", P(Op.DIV, X, const_value(1.0)), lambda n, x: x),
    Rule("X + -0.0 -> X", P(Op.ADD, X, _zero(negative=True)), lambda n, x: x),
    Rule("X - 0.0 -> X", P(Op.SUB, X, _zero(negative=False)), lambda n, x: x),
    Rule("X ** 1 -> X", P(Op.POW, X, const_value(1.0)), lambda n, x: x),
    # pow(x, 0) is 1 for every x, NaN and inf included (IEEE 754, numpy): GLM's mu ** (1 - vpow)
    Rule("Y * X ** 0 -> Y", P(Op.MUL, Y, P(Op.POW, X, const_value(0.0))), lambda n, y, x: y),
    Rule("-(-X) -> X", P(Op.NEG, P(Op.NEG, X)), lambda n, x: x),
    Rule(
        "agg(t(X)) -> agg(X) for full aggregates",
        P(FULL_AGGREGATES, P(Op.TRANSPOSE, X), axis=None),
        lambda n, x: make(n.op, (x,), axis=None),
    ),
    Rule("X[:, 0:ncol] -> X", P(Op.COLS, X, guard=_full_range), lambda n, x: x),
    Rule("hstack([X]) -> X", P(Op.HSTACK, X), lambda n, x: x),
    Rule(
        "t(t(v) @ X) -> t(X) @ v",  # numpy's 1-D v @ X as a product with the column v
        P(Op.TRANSPOSE, P(Op.MATMUL, P(Op.TRANSPOSE, X), Y)),
        lambda n, x, y: make(Op.MATMUL, (make(Op.TRANSPOSE, (y,)), x)),
    ),
    Rule("f(c1, c2) -> c (constant folding)", P(ELEMENTWISE, guard=_all_const), _fold),
)
