"""The selected plan of one DAG: fused operators (with their CPlans) plus unfused nodes, in the
order they run."""

from __future__ import annotations

import functools
import heapq
from dataclasses import dataclass, field
from typing import Any

from fusedml.cplan.cplan import CPlan
from fusedml.ir.dag import Dag, last_uses
from fusedml.ir.node import Node
from fusedml.ir.ops import Op


@dataclass(frozen=True, eq=False)
class FusedOp:
    """One fused operator: a template instance computing ``roots`` from ``inputs``."""

    template: str  # "cell" | "row" | "magg" | "outer"
    roots: tuple[Node, ...]
    nodes: frozenset[Node]  # the DAG nodes it covers
    cplan: CPlan
    estimated_cost_s: float
    parallel: bool = True  # False: too little work for a parallel launch, runs on one thread

    @property
    def inputs(self) -> tuple[Node, ...]:
        return self.cplan.inputs

    @property
    def main_input(self) -> Node:
        return self.cplan.main_input

    @property
    def aggregation(self) -> str:
        """The operator's output kind, as text (``OutputKind`` value)."""
        return self.cplan.kind.value

    def describe(self, index: dict[Node, int]) -> str:
        roots = ",".join(f"%{index[r]}" for r in self.roots)
        ins = ", ".join(f"%{index[i]}" for i in self.inputs)
        aggs = [a for a in self.cplan.aggregations if a]
        agg = f" {'/'.join(aggs)}" if aggs else ""
        safe = " sparse-safe" if self.cplan.sparse_safe else ""
        return (
            f"{self.template.upper()}[{self.cplan.kind.value}{agg}{safe}] -> {roots} "
            f"<- main %{index[self.main_input]}; inputs [{ins}]; covers {len(self.nodes)} node(s); "
            f"cost~{self.estimated_cost_s * 1e3:.3g} ms{'' if self.parallel else ', one thread'}"
        )


Step = FusedOp | Node  # a fused operator, or one node computed on its own


@dataclass(frozen=True)
class Plan:
    dag: Dag
    fusion: str
    operators: tuple[FusedOp, ...] = ()
    unfused: tuple[Node, ...] = ()
    estimated_cost_s: float = 0.0
    search: dict[str, Any] = field(default_factory=dict)  # cost-based search statistics
    # where each step runs ("dask" or "local") when inputs are distributed; empty: all local
    placement: dict[Step, str] = field(default_factory=dict)
    # what the runtime derives from the plan once and reuses on every run
    memo: dict[str, Any] = field(default_factory=dict, init=False, compare=False, repr=False)

    @property
    def hand_operators(self) -> tuple[str, ...]:
        """``name[variant]`` of each hand-written operator (``fusion="hand"``), in DAG order."""
        return tuple(
            f"{n.attr('name')}[{n.attr('variant')}]" for n in self.dag.nodes if n.op is Op.HAND
        )

    @functools.cached_property
    def schedule(self) -> tuple[Step, ...]:
        """Steps in dependency order. Among ready steps the one whose last root comes first in
        the DAG runs first (short intermediate lifetimes); a multi-root operator (MAgg) runs
        before every consumer of any of its roots, even one that precedes its last root."""
        position = {n: k for k, n in enumerate(self.dag.nodes)}
        steps: list[Step] = [*self.operators, *self.unfused]
        outputs = [op.roots if isinstance(op, FusedOp) else (op,) for op in steps]
        producer = {node: k for k, outs in enumerate(outputs) for node in outs}
        waiting = [0] * len(steps)
        consumers: list[list[int]] = [[] for _ in steps]
        for k, step in enumerate(steps):
            for dep in {producer[i] for i in step.inputs if i in producer}:
                waiting[k] += 1
                consumers[dep].append(k)
        key = [(max(position[r] for r in outs), k) for k, outs in enumerate(outputs)]
        ready = [key[k] for k in range(len(steps)) if waiting[k] == 0]
        heapq.heapify(ready)
        order: list[Step] = []
        while ready:
            _, k = heapq.heappop(ready)
            order.append(steps[k])
            for c in consumers[k]:
                waiting[c] -= 1
                if waiting[c] == 0:
                    heapq.heappush(ready, key[c])
        if len(order) != len(steps):
            raise AssertionError("plan steps form a cycle")
        return tuple(order)

    @functools.cached_property
    def releases(self) -> tuple[tuple[Node, ...], ...]:
        """Per step of ``schedule``: the values no later step reads and no root is, freed once
        the step has run (computed once per plan, not per run)."""
        return last_uses(self.schedule, self.dag.roots)

    @functools.cached_property
    def unfused_steps(self) -> int:
        """Steps that are single nodes run on their own (neither fused nor hand operators)."""
        return sum(1 for n in self.unfused if n.op is not Op.HAND)

    @functools.cached_property
    def constants(self) -> tuple[Node, ...]:
        return tuple(n for n in self.dag.nodes if n.op is Op.CONST)

    def __str__(self) -> str:
        head = f"Plan(fusion={self.fusion!r}"
        hand = f", {len(self.hand_operators)} hand operator(s)" if self.hand_operators else ""
        head += (
            f", {len(self.operators)} fused operator(s){hand}, {len(self.dag)} node(s), "
            f"estimated {self.estimated_cost_s * 1e3:.3g} ms)"
        )
        lines = [head]
        where = self.placement
        lines += [
            f"  {op.describe(self.dag.index)}" + (f" @{where[op]}" if op in where else "")
            for op in self.operators
        ]
        unfused = [s for s in self.unfused if s in where]
        if unfused:
            marks = ", ".join(f"%{self.dag.index[s]}@{where[s]}" for s in unfused)
            lines.append(f"  unfused: {marks}")
        if self.search:
            lines.append("  search: " + ", ".join(f"{k}={v}" for k, v in self.search.items()))
        lines.append(str(self.dag))
        return "\n".join(lines)

    def to_dot(self) -> str:
        """Graphviz source: the DAG, each fused operator drawn as a cluster around its nodes."""
        lines = ["digraph plan {", "  rankdir=BT;", '  node [shape=box, fontname="monospace"];']
        index = self.dag.index
        drawn: set[Node] = set()  # a node recomputed by several operators is drawn in the first
        for k, op in enumerate(self.operators):
            lines.append(f"  subgraph cluster_{k} {{")
            lines.append(f'    label="{op.template.upper()} {op.cplan.kind.value}"; style=rounded;')
            for n in sorted(op.nodes - drawn, key=index.__getitem__):
                drawn.add(n)
                lines.append(f"    n{index[n]};")
            lines.append("  }")
        for n in self.dag.nodes:
            label = n.attr("name") if n.attr("name") is not None else n.op.value
            lines.append(f'  n{index[n]} [label="%{index[n]} {label}\\n{n.meta.describe()}"];')
            lines += [f"  n{index[i]} -> n{index[n]};" for i in n.inputs]
        lines.append("}")
        return "\n".join(lines)
