"""Materialization and interesting points of a memo table, and its partitions.

A *point* is a decision the cost-based selector makes: cut (materialize) or keep fusable a set of
(consumer, producer) edges. Node points are multi-consumer intermediates (all their consumer edges
at once); edge points are template switches, where a consumer's plan fuses a producer that could
instead close as an operator of another template.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from fusedml.fusion.memo import MemoTable
from fusedml.fusion.templates import TemplateType
from fusedml.ir.node import Node
from fusedml.select.candidates import Edge


@dataclass(frozen=True)
class Point:
    kind: str  # "multi_consumer" | "template_change"
    producer: Node
    edges: frozenset[Edge]

    def __repr__(self) -> str:
        consumers = ",".join(str(c.id) for c, _ in sorted(self.edges, key=lambda e: e[0].id))
        return f"{self.kind}(%{self.producer.id} <- {consumers})"


def fusable_edges(memo: MemoTable) -> set[Edge]:
    return {
        (node, child)
        for node, entries in memo.entries.items()
        for e in entries
        for child in e.fused_inputs(node)
    }


def consumer_counts(memo: MemoTable) -> dict[Node, int]:
    dag = memo.dag
    counts = {n: len(c) for n, c in dag.consumers.items()}
    for root in dag.roots:
        counts[root] += 1  # an output is read by the user
    return counts


def interesting_points(memo: MemoTable) -> list[Point]:
    edges = fusable_edges(memo)
    by_producer: dict[Node, set[Edge]] = defaultdict(set)
    for e in edges:
        by_producer[e[1]].add(e)
    counts = consumer_counts(memo)
    points = [
        Point("multi_consumer", p, frozenset(es)) for p, es in by_producer.items() if counts[p] >= 2
    ]
    multi = {pt.producer for pt in points}
    index = memo.dag.index
    for consumer, producer in sorted(edges, key=lambda e: (index[e[1]], index[e[0]])):
        if producer in multi:
            continue
        used = {e.type for e in memo[consumer] if e.references(consumer, producer)}
        closable = {e.type for e in memo[producer] if e.close.is_valid}
        if closable - used:
            points.append(Point("template_change", producer, frozenset({(consumer, producer)})))
    return sorted(points, key=lambda p: (index[p.producer], p.kind))


def streamed_by_outer(memo: MemoTable) -> set[Node]:
    """Intermediates (``U @ V.T``, ``f(U @ V.T)``) that every consumer fuses into Outer operators
    with CSR results. Each of those computes the intermediate's cells only at its driver's
    non-zeros, so recomputing them per consumer is far cheaper than materializing all of them
    once: the product of two skinny factors is what the Outer template exists not to store."""
    dag, roots = memo.dag, set(memo.dag.roots)
    streamed: set[Node] = set()
    for node in reversed(dag.nodes):  # consumers first
        consumers = dag.consumers[node]
        if node in roots or not consumers:
            continue
        if all(
            any(e.type is TemplateType.OUTER and e.references(c, node) for e in memo[c])
            and (c in streamed or any(e.streams_outer(c) for e in memo[c]))
            for c in consumers
        ):
            streamed.add(node)
    return streamed


def multi_consumer_cut(memo: MemoTable) -> frozenset[Edge]:
    """The edges fuse_no_redundancy cuts: every edge into a multi-consumer node, except into one
    that Outer operators stream (``streamed_by_outer``)."""
    streamed = streamed_by_outer(memo)
    return frozenset(
        e
        for pt in interesting_points(memo)
        if pt.kind == "multi_consumer" and pt.producer not in streamed
        for e in pt.edges
    )


def components(nodes: Iterable[Node], edges: Iterable[Edge]) -> list[frozenset[Node]]:
    """Connected components of ``nodes`` under undirected ``edges`` (others' edges ignored)."""
    parent = {n: n for n in nodes}

    def find(x: Node) -> Node:
        while parent[x] is not x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in edges:
        if a in parent and b in parent:
            ra, rb = find(a), find(b)
            if ra is not rb:
                parent[ra] = rb
    groups: dict[Node, set[Node]] = defaultdict(set)
    for n in parent:
        groups[find(n)].add(n)
    return sorted((frozenset(g) for g in groups.values()), key=lambda g: min(n.id for n in g))
