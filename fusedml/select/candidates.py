"""From a memo table and a set of cut edges to concrete fused operators (fuse-all style).

All three policies construct plans here; they differ only in which (consumer, producer) edges they
cut, i.e. where an intermediate must be materialized instead of fused:
fuse_all cuts nothing (redundant computation allowed), fuse_no_redundancy cuts every edge into a
multi-consumer node, cost_based searches over the interesting edges.

Construction is top-down from the nodes that must be materialized: at such a node the best valid
entry (template preference, then most fused inputs) becomes an operator root; its fused inputs are
covered inside the operator with entries of the same template (or Cell), recursively; its other
inputs must be materialized in turn. The preference for Outer holds inside operators too: a node
an Outer operator can stream (``W * f(U @ V.T)`` over a CSR driver) is never covered by a Cell or
Row operator, which would read ``U @ V.T`` materialized dense; it becomes an Outer operator's root
instead. A choice at a node depends only on the cut edges below it, so ``PlanSpace`` caches choices
by (node, cut edges below it) across all cut sets of a search.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from fusedml.fusion.memo import MemoEntry, MemoTable
from fusedml.fusion.templates import (
    CloseType,
    TemplateType,
    column_aggregation,
    inner_types,
    outer_product,
)
from fusedml.ir.node import Node
from fusedml.ir.ops import LEAF, Op

Edge = tuple[Node, Node]  # (consumer, producer)
_INNER = {t: frozenset(inner_types(t)) for t in TemplateType}


@dataclass(frozen=True, eq=False)
class Candidate:
    """A selected fused operator: roots computed from inputs, covering nodes."""

    type: TemplateType
    roots: tuple[Node, ...]
    nodes: frozenset[Node]
    inputs: tuple[Node, ...]
    aggregated: bool  # the operator ends in an aggregate or a closing product


@dataclass
class Selection:
    operators: list[Candidate]
    unfused: list[Node]  # computed one op at a time


@dataclass(frozen=True, eq=False, slots=True)
class _Option:
    entry: MemoEntry
    children: tuple[Node, ...]  # fused inputs
    edges: int  # bit mask of the (node, child) edges it fuses
    # the entry's traits, read once (the search asks them for thousands of cut sets)
    type: TemplateType
    open: bool
    valid: bool
    streams: bool  # an Outer root streaming its product (``MemoEntry.streams_outer``)
    rank: tuple[int, int]  # root preference: template, then most fused inputs


class PlanSpace:
    """The memo table indexed for fast plan construction, with choice caches shared by all cut
    sets of one selection."""

    def __init__(self, memo: MemoTable, lone: Callable[[Candidate], bool] | None = None) -> None:
        """``lone``: whether a fused operator of one operation without aggregation pays (SystemDS
        never builds one; here numpy runs such an operation on one core, a kernel on all)."""
        self.memo = memo
        self.lone = lone
        # cut sets are bit masks over the fusable edges: cheap to intersect and to hash
        self.bit: dict[Edge, int] = {}
        self.options: dict[Node, tuple[_Option, ...]] = {}
        self.below: dict[Node, int] = {}  # the edges in a node's subgraph
        self.reach: dict[Node, int] = {}  # the edges an operator rooted here could fuse
        self.streams: set[Node] = set()  # nodes an Outer operator may stream
        for node in memo.dag.nodes:
            opts = []
            for e in memo[node]:
                children = tuple(e.fused_inputs(node))
                mask = 0
                for c in children:
                    mask |= self.bit.setdefault((node, c), 1 << len(self.bit))
                streams = e.streams_outer(node)
                close = e.close
                rank = (int(e.type), -e.n_fused)
                opts.append(
                    _Option(e, children, mask, e.type, close.is_open, close.is_valid, streams, rank)
                )
                if streams:
                    self.streams.add(node)
            self.options[node] = tuple(opts)
            reach = 0
            for o in opts:
                reach |= o.edges
                for c in o.children:
                    reach |= self.reach[c]
            self.reach[node] = reach
            below = 0
            for o in opts:
                below |= o.edges
            for child in node.inputs:
                below |= self.below.get(child, 0)
            self.below[node] = below
        self._clear()

    def _clear(self) -> None:
        self._inner: dict[tuple, _Option | None] = {}
        self._operator: dict[tuple, Candidate | None] = {}
        self._steps: dict[tuple, frozenset] = {}
        self._cover: dict[tuple, frozenset[Node]] = {}
        self._candidates: dict[tuple, Candidate] = {}

    def with_lone(self, lone: Callable[[Candidate], bool] | None) -> PlanSpace:
        """This space under another ``lone`` policy: the index shared, the choice caches new."""
        space = copy.copy(self)
        space.lone = lone
        space._clear()
        return space

    def mask(self, edges: Iterable[Edge]) -> int:
        mask = 0
        for e in edges:
            mask |= self.bit.get(e, 0)
        return mask


class Planner:
    """Plan construction for one cut set."""

    def __init__(self, space: PlanSpace | MemoTable, cut: Iterable[Edge] | int = 0) -> None:
        self.space = space if isinstance(space, PlanSpace) else PlanSpace(space)
        self.cut = cut if isinstance(cut, int) else self.space.mask(cut)

    def _local_cut(self, node: Node) -> int:
        """The cut edges an operator rooted at ``node`` could meet: its choices depend on no
        others, so they are cached by this mask."""
        return self.cut & self.space.reach[node]

    def inner_option(self, node: Node, parent: TemplateType) -> _Option | None:
        """How ``node`` is computed inside an operator of type ``parent`` (None: impossible)."""
        local = self._local_cut(node)
        key = (node, parent, local)
        cache = self.space._inner
        if key in cache:
            return cache[key]
        if parent is not TemplateType.OUTER and self.streams_outer(node):
            cache[key] = None
            return None
        allowed = _INNER[parent]
        best = None
        for o in self.space.options[node]:
            if o.type not in allowed or not o.open or o.edges & local:
                continue
            if all(self.inner_option(c, parent) is not None for c in o.children):
                score = (o.type is not parent, o.rank[1])
                if best is None or score < best[0]:
                    best = (score, o)
        cache[key] = best[1] if best else None
        return cache[key]

    def streams_outer(self, node: Node) -> bool:
        """Whether an Outer operator rooted at ``node`` can compute it under this cut without
        materializing its outer product (``MemoEntry.streams_outer``)."""
        if node not in self.space.streams:
            return False
        local = self._local_cut(node)
        return any(o.streams and self._valid_root(o, local) for o in self.space.options[node])

    def cover(self, node: Node, root: _Option) -> frozenset[Node]:
        key = (node, root, self._local_cut(node))
        nodes = self.space._cover.get(key)
        if nodes is None:
            nodes = self.space._cover[key] = self._cover(node, root)
        return nodes

    def _cover(self, node: Node, root: _Option) -> frozenset[Node]:
        t = root.entry.type
        nodes = {node}
        stack = [root]
        while stack:
            o = stack.pop()
            for child in o.children:
                if child not in nodes:
                    nodes.add(child)
                    stack.append(self.inner_option(child, t))
        # The transposed operand of X.T @ (...) (Row) and of U @ V.T (Outer) is read in place by
        # the operator (row i of X, row j of V): it belongs to the operator, not to its inputs.
        for n in list(nodes):
            if n.op is Op.MATMUL:
                k = 0 if t is TemplateType.ROW else 1
                if n.inputs[k].op is Op.TRANSPOSE and (
                    (k == 0 and column_aggregation(n)) or (k == 1 and outer_product(n))
                ):
                    nodes.add(n.inputs[k])
        return frozenset(nodes)

    def _valid_root(self, o: _Option, local: int) -> bool:
        return (
            o.valid
            and not o.edges & local
            and all(self.inner_option(c, o.type) is not None for c in o.children)
        )

    def _root_option(self, node: Node, local: int) -> _Option | None:
        valid = [o for o in self.space.options[node] if self._valid_root(o, local)]
        if not valid:
            return None
        chosen = min(valid, key=lambda o: o.rank)
        if chosen.type is TemplateType.ROW:  # a Row plan that Cell covers alike is Cell
            for o in valid:
                if (
                    o.type is TemplateType.CELL
                    and o.entry.fused == chosen.entry.fused
                    and self.cover(node, o) == self.cover(node, chosen)
                ):
                    return o
        return chosen

    def _inputs(self, nodes: frozenset[Node]) -> tuple[Node, ...]:
        """What an operator covering ``nodes`` reads: literals stay in its body; the rest in DAG
        order, so that kernels' parameter order is the same in every process."""
        index = self.space.memo.dag.index
        return tuple(
            dict.fromkeys(
                i
                for n in sorted(nodes, key=index.__getitem__)
                for i in n.inputs
                if i not in nodes and i.op is not Op.CONST
            )
        )

    def operator_at(self, node: Node) -> Candidate | None:
        local = self._local_cut(node)
        key = (node, local)
        cache = self.space._operator
        if key in cache:
            return cache[key]
        op = None
        root = self._root_option(node, local)
        if root is not None:
            nodes = self.cover(node, root)
            aggregated = root.entry.close is CloseType.CLOSED_VALID
            single = len(nodes) == 1 and not aggregated  # numpy's, unless the policy finds it pays
            lone = self.space.lone
            if not single or lone is not None:
                op = Candidate(root.entry.type, (node,), nodes, self._inputs(nodes), aggregated)
                if single and not lone(op):
                    op = None
                else:  # equal operators reached under different cut sets are one object
                    op = self.space._candidates.setdefault((op.type, node, nodes, aggregated), op)
        cache[key] = op
        return op

    def steps_for(self, node: Node, scope: frozenset[Node] | None) -> frozenset:
        """Every step (operator or unfused node) computing ``node`` and what it needs; cached by
        (node, cut edges below it, scope), so cut sets that agree below a node share the work."""
        if node.op in LEAF or (scope is not None and node not in scope):
            return frozenset()
        key = (node, self.cut & self.space.below[node], scope)
        cache = self.space._steps
        steps = cache.get(key)
        if steps is None:
            op = self.operator_at(node)
            step, inputs = (node, node.inputs) if op is None else (op, op.inputs)
            steps = frozenset({step}).union(*(self.steps_for(i, scope) for i in inputs))
            cache[key] = steps
        return steps

    def steps(self, required: Iterable[Node], scope: frozenset[Node] | None = None) -> frozenset:
        return frozenset().union(*(self.steps_for(r, scope) for r in required))

    def build(self, required: Iterable[Node], scope: frozenset[Node] | None = None) -> Selection:
        """Operators and unfused nodes computing ``required``; with ``scope``, stop at nodes outside
        it (they are computed by another, independent part of the plan)."""
        steps = self.steps(required, scope)
        index = self.space.memo.dag.index
        ordered = sorted(steps, key=lambda s: index[s.roots[0] if isinstance(s, Candidate) else s])
        return Selection(
            [s for s in ordered if isinstance(s, Candidate)],
            [s for s in ordered if not isinstance(s, Candidate)],
        )
