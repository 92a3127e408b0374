"""OFMC exploration (open-fuse-merge-close), bottom-up over the DAG into a memo table.

Per node, after its inputs: every template that can *open* here adds a plan without fused
inputs; every open plan at an input that a compatible template can *fuse* here is extended, together
with any subset of the other inputs that can *merge* into the same operator; then each plan is
*closed* (closed-invalid plans vanish) and duplicates and closed plans without fused inputs (single
operations) are pruned.
"""

from __future__ import annotations

from itertools import combinations

from fusedml.fusion.memo import MemoEntry, MemoTable
from fusedml.fusion.templates import COMPATIBLE, TEMPLATES, CloseType, TemplateType
from fusedml.ir.dag import Dag
from fusedml.ir.node import Node
from fusedml.ir.ops import LEAF


def _open_types(memo: MemoTable, node: Node) -> dict[TemplateType, CloseType]:
    """Open entry types at ``node`` (with the 'most valid' close state per type)."""
    types: dict[TemplateType, CloseType] = {}
    for e in memo[node]:
        if e.close.is_open and types.get(e.type) is not CloseType.OPEN_VALID:
            types[e.type] = e.close
    return types


def _subsets(items: list[int]):
    for k in range(len(items) + 1):
        yield from combinations(items, k)


def explore_node(memo: MemoTable, node: Node) -> tuple[MemoEntry, ...]:
    n_in = len(node.inputs)
    candidates: list[tuple[TemplateType, tuple[bool, ...]]] = []
    for rules in TEMPLATES.values():
        if rules.open(node):
            candidates.append((rules.type, (False,) * n_in))
    open_at = [_open_types(memo, child) for child in node.inputs]
    for i, child_types in enumerate(open_at):
        for child_type, child_close in child_types.items():
            for t in COMPATIBLE[child_type]:
                rules = TEMPLATES[t]
                if not rules.fuse(node, i, child_close):
                    continue
                mergeable = [
                    j
                    for j in range(n_in)
                    if j != i
                    and (t in open_at[j] or TemplateType.CELL in open_at[j])
                    and rules.merge(node, j)
                ]
                for extra in _subsets(mergeable):
                    fused = tuple(k == i or k in extra for k in range(n_in))
                    candidates.append((t, fused))
    entries: list[MemoEntry] = []
    for t, fused in dict.fromkeys(candidates):
        close = TEMPLATES[t].close(node)
        if close is CloseType.CLOSED_INVALID or (not close.is_open and not any(fused)):
            continue
        entries.append(MemoEntry(t, fused, close))
    return tuple(entries)


def explore(dag: Dag) -> MemoTable:
    memo = MemoTable(dag)
    for node in dag.nodes:
        if node.op in LEAF:
            continue
        entries = explore_node(memo, node)
        if entries:
            memo.entries[node] = entries
    return memo
