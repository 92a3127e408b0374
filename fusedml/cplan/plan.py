"""The selected plan of one DAG: which fused operators run, over the (rewritten) DAG.

Until the optimizer lands every mode executes operator at a time, so ``operators`` is empty and the
plan is the rewritten DAG itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fusedml.ir.dag import Dag
from fusedml.ir.node import Node


@dataclass(frozen=True)
class FusedOp:
    """One fused operator: a template instance covering ``nodes``, reading ``inputs``."""

    template: str  # "cell" | "row" | "magg" | "outer"
    root: Node
    inputs: tuple[Node, ...]
    nodes: tuple[Node, ...]
    aggregation: str = "none"
    estimated_cost_s: float = 0.0


@dataclass(frozen=True)
class Plan:
    dag: Dag
    fusion: str  # the mode asked for
    effective_fusion: str  # the mode that runs (differs while a mode is not implemented)
    operators: tuple[FusedOp, ...] = field(default=())

    def __str__(self) -> str:
        head = f"Plan(fusion={self.fusion!r}"
        if self.effective_fusion != self.fusion:
            head += f", runs as {self.effective_fusion!r}"
        head += f", {len(self.operators)} fused operator(s), {len(self.dag)} node(s))"
        ops = [
            f"  {op.template.upper()} %{op.root.id} agg={op.aggregation} "
            f"inputs=[{', '.join(f'%{i.id}' for i in op.inputs)}] "
            f"cost~{op.estimated_cost_s:.3g}s"
            for op in self.operators
        ]
        return "\n".join([head, *ops, str(self.dag)])
