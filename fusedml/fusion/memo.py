"""The memo table of OFMC exploration: per node, the fusion plans that can end there."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from fusedml.fusion.templates import CloseType, TemplateType
from fusedml.ir.dag import Dag
from fusedml.ir.node import Node


@dataclass(frozen=True)
class MemoEntry:
    """A plan ending at a node: its template, which inputs are fused into it, its close state."""

    type: TemplateType
    fused: tuple[bool, ...]  # per input position: computed inside this operator?
    close: CloseType

    @property
    def n_fused(self) -> int:
        return sum(self.fused)

    def fused_inputs(self, node: Node) -> Iterator[Node]:
        return (i for i, f in zip(node.inputs, self.fused, strict=True) if f)

    def references(self, node: Node, child: Node) -> bool:
        return any(i is child and f for i, f in zip(node.inputs, self.fused, strict=True))

    def streams_outer(self, node: Node) -> bool:
        """Whether this is an Outer operator root at ``node`` with a sparse result: it computes
        the cells of its outer product only at the driver's non-zeros and stores none of them.
        (Over a dense driver its result is as large as the product.)"""
        return (
            self.type is TemplateType.OUTER
            and self.close.is_valid
            and node.meta.format.zeros_annihilate
        )

    def describe(self, node: Node, index: dict[Node, int]) -> str:
        refs = ",".join(
            str(index[i]) if f else "-1" for i, f in zip(node.inputs, self.fused, strict=True)
        )
        return f"{self.type.name}({refs}|{self.close.value})"


class MemoTable:
    """Node -> entries; nodes without entries are never fused."""

    def __init__(self, dag: Dag) -> None:
        self.dag = dag
        self.entries: dict[Node, tuple[MemoEntry, ...]] = {}

    def __getitem__(self, node: Node) -> tuple[MemoEntry, ...]:
        return self.entries.get(node, ())

    def __contains__(self, node: Node) -> bool:
        return bool(self.entries.get(node))

    def __len__(self) -> int:
        return sum(len(e) for e in self.entries.values())

    def __str__(self) -> str:
        lines = []
        for node in self.dag.nodes:
            entries = self.entries.get(node)
            if entries:
                plans = " ".join(e.describe(node, self.dag.index) for e in entries)
                lines.append(f"%{self.dag.index[node]} {node.op.value}: {plans}")
        return "\n".join(lines) if lines else "(empty memo)"
