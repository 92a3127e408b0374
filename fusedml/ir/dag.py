"""A DAG of output nodes, with its topological order and consumer lists computed once."""

from __future__ import annotations

from collections.abc import Iterable

from fusedml.ir.node import Node
from fusedml.ir.ops import Op
from fusedml.ir.printer import format_dag


def topological(roots: Iterable[Node]) -> list[Node]:
    """Inputs before consumers; iterative, so deep chains do not hit the recursion limit."""
    order: list[Node] = []
    seen: set[int] = set()
    for root in roots:
        if root.id in seen:
            continue
        stack: list[tuple[Node, int]] = [(root, 0)]
        seen.add(root.id)
        while stack:
            node, i = stack.pop()
            if i < len(node.inputs):
                stack.append((node, i + 1))
                child = node.inputs[i]
                if child.id not in seen:
                    seen.add(child.id)
                    stack.append((child, 0))
            else:
                order.append(node)
    return order


def row_product_operands(nodes: Iterable[Node]) -> set[Node]:
    """The right operands of products ``(...) @ B`` among ``nodes`` (left operand not a
    transpose): evaluated a row at a time, such a product reads B whole for every row."""
    return {n.inputs[1] for n in nodes if n.op is Op.MATMUL and n.inputs[0].op is not Op.TRANSPOSE}


def last_uses(steps: Iterable, keep: Iterable[Node]) -> tuple[tuple[Node, ...], ...]:
    """Per step (anything with ``inputs``), in order: the inputs no later step reads, except those
    in ``keep``; what can be freed once the step has run."""
    last: dict[Node, int] = {}
    for k, step in enumerate(steps):
        for node in step.inputs:
            last[node] = k
    keep = set(keep)
    freed: list[list[Node]] = [[] for _ in range(len(steps))]
    for node, k in last.items():
        if node not in keep:
            freed[k].append(node)
    return tuple(map(tuple, freed))


class Dag:
    """The expression DAG of one evaluation: ``roots`` in output order (duplicates allowed)."""

    __slots__ = ("consumers", "index", "leaves", "memo", "nodes", "roots")

    def __init__(self, roots: Iterable[Node]) -> None:
        self.roots: tuple[Node, ...] = tuple(roots)
        self.nodes: tuple[Node, ...] = tuple(topological(self.roots))
        # DAG-local numbering (topological): what listings print, stable across processes
        self.index: dict[Node, int] = {n: k for k, n in enumerate(self.nodes)}
        consumers: dict[Node, list[Node]] = {n: [] for n in self.nodes}
        for node in self.nodes:
            for child in node.inputs:
                consumers[child].append(node)
        self.consumers = consumers
        self.leaves: tuple[Node, ...] = tuple(n for n in self.nodes if n.op is Op.DATA)
        self.memo: dict[str, object] = {}  # what a consumer derives from the DAG once

    def __len__(self) -> int:
        return len(self.nodes)

    def __str__(self) -> str:
        return format_dag(self)
