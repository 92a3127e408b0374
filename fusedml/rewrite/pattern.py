"""A small pattern language over IR nodes (tinygrad's UPat in spirit).

``P(Op.MUL, X, ONE)`` matches a MUL whose inputs match ``X`` and ``ONE``; named sub-patterns bind
the matched nodes; commutative ops also match with swapped inputs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fusedml.ir.node import Node
from fusedml.ir.ops import COMMUTATIVE, Op


@dataclass(frozen=True)
class P:
    ops: Op | frozenset[Op] | None = None  # None: any op
    inputs: tuple[P, ...] | None = None  # None: any inputs
    name: str | None = None
    guard: Callable[[Node], bool] | None = None
    attrs: tuple[tuple[str, Any], ...] = ()

    def __init__(self, ops=None, *inputs: P, name=None, guard=None, **attrs: Any) -> None:
        object.__setattr__(self, "ops", ops)
        object.__setattr__(self, "inputs", inputs if inputs else None)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "guard", guard)
        object.__setattr__(self, "attrs", tuple(sorted(attrs.items())))

    def match(self, node: Node) -> dict[str, Node] | None:
        bound: dict[str, Node] = {}
        return bound if self._match(node, bound) else None

    def _match(self, node: Node, bound: dict[str, Node]) -> bool:
        if self.ops is not None:
            ops = self.ops if isinstance(self.ops, frozenset) else {self.ops}
            if node.op not in ops:
                return False
        if any(node.attr(k, _MISSING) != v for k, v in self.attrs):
            return False
        if self.guard is not None and not self.guard(node):
            return False
        if self.name is not None:
            if self.name in bound and bound[self.name] is not node:
                return False
            bound[self.name] = node
        if self.inputs is None:
            return True
        if len(self.inputs) != len(node.inputs):
            return False
        orders = [node.inputs]
        if node.op in COMMUTATIVE and len(node.inputs) == 2:
            orders.append(node.inputs[::-1])
        for inputs in orders:
            trial = dict(bound)
            if all(p._match(i, trial) for p, i in zip(self.inputs, inputs, strict=True)):
                bound.update(trial)
                return True
        return False


_MISSING = object()


def any_node(name: str) -> P:
    return P(name=name)


def const_value(value: float, name: str | None = None) -> P:
    return P(Op.CONST, name=name, value=float(value))
