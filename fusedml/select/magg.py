"""Multi-aggregates: full aggregates over shared inputs computed in one pass.

Greedy, as SystemDS builds them across partitions: Cell operators whose single root is a full
aggregate join a group when they are independent of its members, share at least one input with it,
scan inputs of the same shape, the group stays within ``MAX_AGGREGATES``, and the model says the
merged operator is cheaper than the separate ones.
"""

from __future__ import annotations

from fusedml.fusion.templates import CELL_AGGREGATES, TemplateType
from fusedml.ir.ops import AGGREGATE
from fusedml.select.candidates import Candidate, Selection
from fusedml.select.cost import CostModel

MAX_AGGREGATES = 3


def _is_full_aggregate(op: Candidate) -> bool:
    (root,) = op.roots
    return op.type is TemplateType.CELL and root.op in CELL_AGGREGATES and root.attr("axis") is None


def _scan_shape(op: Candidate) -> tuple[int, ...]:
    return next(r.inputs[0].shape for r in op.roots if r.op in AGGREGATE)


def _merge(ops: list[Candidate]) -> Candidate:
    nodes = frozenset().union(*(op.nodes for op in ops))
    inputs = tuple(dict.fromkeys(i for op in ops for i in op.inputs if i not in nodes))
    roots = tuple(r for op in ops for r in op.roots)
    return Candidate(TemplateType.MAGG, roots, nodes, inputs, True)


def _independent(a: Candidate, b: Candidate) -> bool:
    return not (set(a.roots) & set(b.inputs) or set(b.roots) & set(a.inputs))


def build_multi_aggregates(sel: Selection, model: CostModel) -> Selection:
    # operators come in DAG order from the planner
    singles = [op for op in sel.operators if _is_full_aggregate(op)]
    groups: list[list[Candidate]] = []
    for op in singles:
        for group in groups:
            if (
                len(group) < MAX_AGGREGATES
                and _scan_shape(group[0]) == _scan_shape(op)
                and all(_independent(op, g) for g in group)
                and any(set(op.inputs) & set(g.inputs) for g in group)
            ):
                merged = _merge([*group, op])
                separate = sum(model.operator(g) for g in group) + model.operator(op)
                if model.operator(merged) < separate:
                    group.append(op)
                    break
        else:
            groups.append([op])
    merged_ops = {id(g[0]): _merge(g) for g in groups if len(g) > 1}
    grouped = {id(op) for g in groups if len(g) > 1 for op in g}
    operators = [
        merged_ops.get(id(op), op)
        for op in sel.operators
        if id(op) not in grouped or id(op) in merged_ops
    ]
    return Selection(operators, list(sel.unfused))
