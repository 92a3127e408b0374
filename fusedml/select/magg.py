"""Multi-aggregates: aggregates over shared inputs computed in one pass.

Greedy, as SystemDS builds them across partitions: operators of one kind join a group when they are
independent of its members, share at least one input with it, scan the same rows, the group stays
within ``MAX_AGGREGATES``, and the model says the merged operator is cheaper than the separate ones.
Two kinds: Cell operators whose single root is a full aggregate (a MAgg operator), and Row
operators over the same rows (one Row operator with several outputs: KMeans' ``P.T @ X`` and
``colSums(P)`` from the same per-row P; MLogReg's probabilities, written per row, and its loss
terms, aggregated, from the same ``X @ B``).
"""

from __future__ import annotations

from fusedml.fusion.templates import CELL_AGGREGATES, TemplateType, column_aggregation
from fusedml.ir.node import Node
from fusedml.select.candidates import Candidate, Selection
from fusedml.select.cost import CostModel

Step = Candidate | Node  # a fused operator, or a node computed on its own

MAX_AGGREGATES = 3
MAX_ROW_OUTPUTS = 4


def _group_kind(op: Candidate) -> TemplateType | None:
    """The merged operator's template if ``op`` can join a multi-aggregate, else None."""
    if len(op.roots) != 1:
        return None
    (root,) = op.roots
    if op.type is TemplateType.CELL and root.op in CELL_AGGREGATES and root.attr("axis") is None:
        return TemplateType.MAGG
    if op.type is TemplateType.ROW:
        return TemplateType.ROW
    return None


def _scan(op: Candidate) -> tuple[int, ...]:
    """The cells a Cell aggregate scans; the rows a Row operator iterates."""
    (root,) = op.roots
    if op.type is TemplateType.CELL:
        return root.inputs[0].shape
    if column_aggregation(root):
        return (root.inputs[1].meta.rows,)
    if root.op in CELL_AGGREGATES and root.attr("axis") in (None, 0):
        return (root.inputs[0].meta.rows,)
    return (root.meta.rows,)


def _merge(ops: list[Candidate], kind: TemplateType) -> Candidate:
    nodes = frozenset().union(*(op.nodes for op in ops))
    inputs = tuple(dict.fromkeys(i for op in ops for i in op.inputs if i not in nodes))
    roots = tuple(r for op in ops for r in op.roots)
    return Candidate(kind, roots, nodes, inputs, any(op.aggregated for op in ops))


def _computed_from(b: Candidate, a: Candidate, producer: dict[Node, Step]) -> bool:
    """Whether an input of ``b`` is computed, through the plan's steps, from a root of ``a``
    (directly, or through unfused nodes and other operators: merging the two would make an
    operator that waits for itself)."""
    roots = set(a.roots)
    stack, seen = list(b.inputs), set()
    while stack:
        node = stack.pop()
        if node in roots:
            return True
        if node in seen:
            continue
        seen.add(node)
        step = producer.get(node)
        if step is not None:
            stack.extend(step.inputs)
    return False


def _independent(a: Candidate, b: Candidate, producer: dict[Node, Step]) -> bool:
    return not (_computed_from(a, b, producer) or _computed_from(b, a, producer))


def build_multi_aggregates(sel: Selection, model: CostModel) -> Selection:
    # operators come in DAG order from the planner
    groups: list[tuple[TemplateType, list[Candidate]]] = []
    producer: dict[Node, Step] = {n: n for n in sel.unfused}
    producer.update((r, op) for op in sel.operators for r in op.roots)
    for op in sel.operators:
        kind = _group_kind(op)
        if kind is None:
            continue
        for group_kind, group in groups:
            if (
                group_kind is kind
                and len(group) < (MAX_ROW_OUTPUTS if kind is TemplateType.ROW else MAX_AGGREGATES)
                and _scan(group[0]) == _scan(op)
                and all(_independent(op, g, producer) for g in group)
                and any(set(op.inputs) & set(g.inputs) for g in group)
            ):
                merged = _merge([*group, op], kind)
                separate = sum(model.operator(g) for g in group) + model.operator(op)
                if model.operator(merged) < separate:
                    group.append(op)
                    break
        else:
            groups.append((kind, [op]))
    merged_ops = {id(g[0]): _merge(g, kind) for kind, g in groups if len(g) > 1}
    grouped = {id(op) for _, g in groups if len(g) > 1 for op in g}
    operators = [
        merged_ops.get(id(op), op)
        for op in sel.operators
        if id(op) not in grouped or id(op) in merged_ops
    ]
    return Selection(operators, list(sel.unfused))
