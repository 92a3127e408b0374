"""The guarded rewrite fixpoint.

One pass rebuilds the DAG bottom-up and applies the first matching rule at each node. Guards: a
replacement (or a node rebuilt over rewritten inputs) must keep the node's shape, format and dtype,
otherwise the node stays as it was. Passes repeat until nothing changes; a DAG seen before means the
rule table cycles, which raises instead of looping.
"""

from __future__ import annotations

from collections.abc import Sequence

from fusedml import _stats
from fusedml._errors import RewriteCycleError
from fusedml.ir.build import rebuild
from fusedml.ir.dag import Dag
from fusedml.ir.node import Meta, Node
from fusedml.rewrite.rules import ALGEBRAIC, Rule

MAX_PASSES = 100


def _same_kind(a: Meta, b: Meta) -> bool:
    return a.shape == b.shape and a.format is b.format and a.dtype == b.dtype


def _apply_rules(node: Node, rules: Sequence[Rule]) -> Node:
    for rule in rules:
        bound = rule.pattern.match(node)
        if bound is None:
            continue
        out = rule.replace(node, **bound)
        if out is not node and _same_kind(out.meta, node.meta):
            _stats.bump("rewrites_applied")
            return out
    return node


def rewrite_pass(dag: Dag, rules: Sequence[Rule]) -> Dag:
    mapped: dict[Node, Node] = {}
    for node in dag.nodes:
        inputs = tuple(mapped[i] for i in node.inputs)
        new = rebuild(node, inputs)
        if not _same_kind(new.meta, node.meta):
            new = node  # a rewritten input changed this node's format: keep the original
        mapped[node] = _apply_rules(new, rules)
    return Dag(mapped[r] for r in dag.roots)


def rewrite(dag: Dag, rules: Sequence[Rule] = ALGEBRAIC) -> Dag:
    """Apply ``rules`` to a fixpoint."""
    seen = {dag.roots}
    for _ in range(MAX_PASSES):
        new = rewrite_pass(dag, rules)
        if new.roots == dag.roots:
            return dag
        if new.roots in seen:
            raise RewriteCycleError(
                "rewrite rules do not converge: a pass reproduced an earlier DAG\n" + str(new)
            )
        seen.add(new.roots)
        dag = new
    raise RewriteCycleError(f"rewrite rules did not converge within {MAX_PASSES} passes")
