"""Plan selection policies over one memo table and one cost model.

- ``fuse_all``: fuse maximally, recomputing shared intermediates inside every consumer (FA).
- ``fuse_no_redundancy``: materialize every multi-consumer intermediate (FNR), except an outer
  product (or a cellwise function of one) that Outer operators over CSR drivers stream: each of
  them computes its cells only at the driver's non-zeros, materializing it computes them all.
- ``cost_based``: per partition of the memo, search the assignments of its interesting points
  (materialize or fuse), seeded with the FA and FNR plans. Two prunings keep the search small:
  *structural*, a cut set of one or two points whose materialization splits the partition into
  independent parts is branched on first, and in the branch where it holds each part is solved on
  its own (the cost model is additive over independent parts); *cost-based*, within an exhaustive
  enumeration a lower bound (static costs plus the materialized points' writes and reads) skips
  every assignment that only adds materialized points to one already no better than the best plan
  found. A part with at least ``LOCAL_SEARCH_FROM`` points is not enumerated (GLM-probit's
  Hessian body: 13 points, 5,428 plans costed in 2-3 s): the search descends from the better of
  no point and every point materialized, taking each flip of one point (or of two that share a
  node) that lowers the cost, until a whole round of flips lowers it no more (20-30 plans). On
  every estimator's bodies, dense and CSR at 20k to 1M rows, it ends at the exhaustive search's
  cost (``tests/select/test_policies.py``). Multi-aggregates are built last, where they are
  cheaper.

A search also ends at its scope's *floor*: no plan costs less than the lower bound plus one
compile if it has an operator, or its nodes run one at a time if not. The heuristics' plans are
costed first, and one at the DAG's floor is the answer: GLM-probit's bodies, fused whole, dense
or CSR, are planned with 2 plans costed instead of 20-57 (3-20 ms per body instead of 15-70).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import combinations

from fusedml.fusion.memo import MemoTable
from fusedml.ir.node import Node
from fusedml.ir.ops import LEAF
from fusedml.select.candidates import Edge, Planner, PlanSpace, Selection
from fusedml.select.cost import CostModel, ScopeBound, node_bytes
from fusedml.select.magg import build_multi_aggregates
from fusedml.select.points import (
    Point,
    components,
    interesting_points,
    multi_consumer_cut,
)

EXHAUSTIVE_MAX_POINTS = 4  # below this, enumerate instead of looking for splitting points
LOCAL_SEARCH_FROM = 7  # from this many points of one part on, descend instead of enumerating


@dataclass
class SearchStats:
    interesting_points: int = 0
    partitions: int = 0
    plans_total: int = 0  # assignments an exhaustive search would cost
    plans_costed: int = 0
    plans_pruned: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


@dataclass
class SelectionResult:
    selection: Selection
    cost_s: float
    stats: SearchStats = field(default_factory=SearchStats)
    cut: frozenset[Edge] = frozenset()


def fuse_all(memo: MemoTable, model: CostModel, space: PlanSpace | None = None) -> SelectionResult:
    """``space``: the memo's plan space, if one was built already (its ``lone`` is None)."""
    sel = Planner(space or memo).build(memo.dag.roots)
    return SelectionResult(sel, model.selection(sel))


def fuse_no_redundancy(
    memo: MemoTable, model: CostModel, space: PlanSpace | None = None
) -> SelectionResult:
    cut = multi_consumer_cut(memo)
    sel = Planner(space or memo, cut).build(memo.dag.roots)
    return SelectionResult(sel, model.selection(sel), cut=cut)


class _Search:
    """The cost-based search. Cut sets are bit masks over the fusable edges (``PlanSpace.bit``)."""

    def __init__(self, memo: MemoTable, model: CostModel, space: PlanSpace | None = None) -> None:
        self.memo = memo
        self.space = space or PlanSpace(memo, model.lone_pays)
        self.model = model
        self.stats = SearchStats()
        self.edges: list[Edge] = sorted(self.space.bit, key=self.space.bit.__getitem__)
        dag = memo.dag
        fused_by = set(self.edges)
        roots = set(dag.roots)
        # materialized whatever the plan: outputs, and inputs of consumers that never fuse them
        self.always_required = {
            n
            for n in memo.entries
            if n in roots or any((c, n) not in fused_by for c in dag.consumers[n])
        }
        self._cost_cache: dict[tuple[frozenset[Node], int], float] = {}
        self._touching: dict[frozenset[Node], int] = {}
        self._solved: dict[tuple, tuple[float, int]] = {}
        self._always: dict[frozenset[Node], list[Node]] = {}

    def mask(self, point: Point) -> int:
        return self.space.mask(point.edges)

    def edges_of(self, mask: int) -> frozenset[Edge]:
        return frozenset(e for b, e in enumerate(self.edges) if mask >> b & 1)

    def touching(self, nodes: frozenset[Node]) -> int:
        """The edges with an end in ``nodes``: only their cut state matters for the scope."""
        mask = self._touching.get(nodes)
        if mask is None:
            mask = self.space.mask(e for e in self.edges if e[0] in nodes or e[1] in nodes)
            self._touching[nodes] = mask
        return mask

    def required(self, nodes: frozenset[Node], cut: int) -> list[Node]:
        """Nodes of the scope every plan with this cut materializes: the always-required ones
        and the producers of cut edges."""
        base = self._always.get(nodes)
        if base is None:
            base = self._always[nodes] = [n for n in nodes if n in self.always_required]
        extra = set()
        while cut:
            low = cut & -cut
            producer = self.edges[low.bit_length() - 1][1]
            if producer in nodes:
                extra.add(producer)
            cut ^= low
        return base + [n for n in extra if n not in self.always_required]

    def scope_cost(self, nodes: frozenset[Node], cut: int) -> float:
        local = cut & self.touching(nodes)
        key = (nodes, local)
        cost = self._cost_cache.get(key)
        if cost is None:
            steps = Planner(self.space, local).steps(self.required(nodes, local), scope=nodes)
            cost = self.model.steps(steps)
            self._cost_cache[key] = cost
            self.stats.plans_costed += 1
        return cost

    def solve(self, nodes: frozenset[Node], points: list[Point], cut: int) -> tuple[float, int]:
        points = [pt for pt in points if pt.producer in nodes and self.mask(pt) & ~cut]
        # the same part with the same cut edges around it recurs in different branches
        key = (nodes, frozenset(points), cut & self.touching(nodes))
        solved = self._solved.get(key)
        if solved is None:
            cost, chosen = self._solve(nodes, points, cut)
            solved = self._solved[key] = (cost, chosen & ~cut)
        return solved[0], solved[1] | cut

    def _solve(self, nodes: frozenset[Node], points: list[Point], cut: int) -> tuple[float, int]:
        if len(points) >= LOCAL_SEARCH_FROM:
            return self._descend(nodes, points, cut)
        if len(points) > EXHAUSTIVE_MAX_POINTS:
            split = self._cut_set(nodes, points, cut)
            if split is not None:
                members, parts = split
                rest = [pt for pt in points if pt not in members]
                best: tuple[float, int] | None = None
                for bits in range(1 << len(members)):
                    trues = [m for k, m in enumerate(members) if bits >> k & 1]
                    cut_b = cut
                    for m in trues:
                        cut_b |= self.mask(m)
                    if len(trues) == len(members):  # the cut set holds: independent parts
                        cost, chosen = 0.0, cut_b
                        for part in parts:
                            c, ch = self.solve(part, rest, cut_b)
                            cost += c
                            chosen |= ch
                    else:
                        cost, chosen = self.solve(nodes, rest, cut_b)
                    if best is None or cost < best[0]:
                        best = (cost, chosen)
                return best
        return self._enumerate(nodes, points, cut)

    def _cut_set(self, nodes, points, cut):
        """One or two points whose materialization splits the scope into parts that each keep
        some of the other points (then those parts are solved independently)."""
        for size in (1, 2):
            best = None
            for members in combinations(points, size):
                removed = cut
                for m in members:
                    removed |= self.mask(m)
                kept = (e for b, e in enumerate(self.edges) if not removed >> b & 1)
                parts = components(nodes, kept)
                if len(parts) < 2:
                    continue
                others = [pt for pt in points if pt not in members]
                sizes = sorted(sum(pt.producer in part for pt in others) for part in parts)
                if len(sizes) < 2 or sizes[-2] == 0:
                    continue  # one part keeps every other point: branching would only add work
                score = (sizes[-1], -len(parts))  # the most balanced split first
                if best is None or score < best[0]:
                    best = (score, members, parts)
            if best is not None:
                return best[1], best[2]
        return None

    def floor(self, nodes: frozenset[Node], cut: int) -> float:
        """No plan of the scope with at least the ``cut`` points materialized costs less
        (``plan_floor``): a search that reaches it stops."""
        return plan_floor(self.model, nodes, self.required(nodes, cut))

    def _descend(self, nodes: frozenset[Node], points: list[Point], cut: int) -> tuple[float, int]:
        """Local search over the points' assignments: from the better of none and all of them
        materialized, try the moves in turn (flip one point, or two adjacent points: sharing a
        node, two intermediates may only pay materialized together) and take every one that
        lowers the cost, until a whole round of moves lowers it no more."""
        k = len(points)
        self.stats.plans_total += 1 << k
        masks = [self.mask(pt) for pt in points]
        touched = [{pt.producer, *(c for c, _ in pt.edges)} for pt in points]
        pairs = [(1 << a) | (1 << b) for a in range(k) for b in range(a + 1, k)
                 if touched[a] & touched[b]]  # fmt: skip
        costs: dict[int, tuple[float, int]] = {}

        def cost(bits: int) -> tuple[float, int]:
            found = costs.get(bits)
            if found is None:
                c = cut
                for b in range(k):
                    if bits >> b & 1:
                        c |= masks[b]
                found = costs[bits] = (self.scope_cost(nodes, c), c)
            return found

        bits = min((0, (1 << k) - 1), key=lambda b: cost(b)[0])
        moves = [1 << b for b in range(k)] + pairs
        unchanged = 0  # moves tried in a row without a lower cost (first improvement, cyclic)
        at = 0
        floor = self.floor(nodes, cut)
        while unchanged < len(moves) and not _at_floor(cost(bits)[0], floor):
            moved = bits ^ moves[at % len(moves)]
            at += 1
            if cost(moved)[0] < cost(bits)[0]:
                bits, unchanged = moved, 0
            else:
                unchanged += 1
        return cost(bits)

    def _enumerate(
        self, nodes: frozenset[Node], points: list[Point], cut: int
    ) -> tuple[float, int]:
        """MPSkipEnum: all assignments in binary order, bit 0 (most significant) the point with
        the largest intermediate, since the lower bound prunes most there."""
        points = sorted(points, key=lambda pt: -node_bytes(pt.producer))
        k = len(points)
        total = 1 << k
        self.stats.plans_total += total
        masks = [self.mask(pt) for pt in points]
        required = set(self.required(nodes, cut))
        external = {i for n in nodes for i in n.inputs if i not in nodes}
        bound = ScopeBound.of(nodes, external, required)
        extra = [0.0 if pt.producer in required else node_bytes(pt.producer) for pt in points]

        def cut_of(i: int) -> int:
            out = cut
            for b in range(k):
                if i >> (k - 1 - b) & 1:
                    out |= masks[b]
            return out

        # fuse-all and no-redundancy within the scope first: the initial upper bound
        best_cost, best_cut = min(
            ((self.scope_cost(nodes, cut_of(i)), cut_of(i)) for i in (0, total - 1)),
            key=lambda c: c[0],
        )
        floor = self.floor(nodes, cut)
        i = 1
        while i < total - 1 and not _at_floor(best_cost, floor):
            bits = [b for b in range(k) if i >> (k - 1 - b) & 1]
            materialized = {points[b].producer: extra[b] for b in bits}
            if self.model.lower_bound(bound, sum(materialized.values())) >= best_cost:
                # every assignment that only adds points after the last true one is no better
                skip = 1 << (k - 1 - bits[-1])
                self.stats.plans_pruned += min(skip, total - 1 - i)
                i += skip
                continue
            cost = self.scope_cost(nodes, cut_of(i))
            if cost < best_cost:
                best_cost, best_cut = cost, cut_of(i)
            i += 1
        return best_cost, best_cut


def plan_floor(model: CostModel, nodes: Iterable[Node], required: Iterable[Node]) -> float:
    """No plan computing ``required`` from the scope ``nodes`` (and what they read) costs less
    (``CostModel.plan_floor``). Without an operator, every node reachable from the required ones
    inside the scope runs on its own."""
    nodes = frozenset(nodes)
    required = [n for n in required if n.op not in LEAF]
    external = {i for n in nodes for i in n.inputs if i not in nodes}
    reachable, stack = set(), list(required)
    while stack:
        n = stack.pop()
        if n not in reachable:
            reachable.add(n)
            stack.extend(i for i in n.inputs if i in nodes and i.op not in LEAF)
    return model.plan_floor(ScopeBound.of(nodes, external, required), reachable)


def _at_floor(cost: float, floor: float) -> bool:
    """Whether ``cost`` is the floor's, up to rounding: no other plan is cheaper."""
    return cost <= floor * (1 + 1e-9)


def dissolve_unprofitable(sel: Selection, model: CostModel) -> Selection:
    """Operators that cost more than running their nodes one at a time (on small data the
    compile and dispatch terms dominate) are replaced by those nodes."""
    operators, unfused = list(sel.operators), list(sel.unfused)
    for op in list(operators):
        materialized = {n for o in operators if o is not op for n in o.roots} | set(unfused)
        alone = [n for n in op.nodes if n not in materialized]
        if sum(model.unfused(n) for n in alone) < model.operator(op):
            operators.remove(op)
            unfused.extend(alone)
    return Selection(operators, unfused)


def search_cut(
    memo: MemoTable, model: CostModel, space: PlanSpace | None = None
) -> tuple[frozenset[Edge], _Search]:
    """The cheapest cut set: each partition's interesting points searched on their own."""
    search = _Search(memo, model, space)
    points = interesting_points(memo)
    search.stats.interesting_points = len(points)
    partitions = components(memo.entries, search.edges)
    search.stats.partitions = len(partitions)
    cut = 0
    for part in partitions:
        _, chosen = search.solve(part, points, 0)
        cut |= chosen
    return search.edges_of(cut), search


def cost_based(memo: MemoTable, model: CostModel) -> SelectionResult:
    # The heuristics' plans seed the search per partition; compare whole plans too, so that the
    # chosen plan is never worse than either by the model, whatever the partition boundaries. Each
    # is compared after building its multi-aggregates: the search costs operators one by one, and
    # a plan that recomputes a per-row result in two aggregates (KMeans' P.T @ X and colSums(P))
    # only wins once those share one pass. A seed at the DAG's floor (no plan costs less: GLM's
    # bodies fused whole) makes the search needless.
    heuristic_space = PlanSpace(memo)
    result = None
    for seed in _heuristics(memo, model, heuristic_space):
        result = _better(result, seed.selection, seed.cut, model, SearchStats(plans_costed=2))
    dag = memo.dag
    if _at_floor(result.cost_s, plan_floor(model, dag.nodes, dag.roots)):
        return _refined(result, model)
    cut, search = search_cut(memo, model, heuristic_space.with_lone(model.lone_pays))
    sel = Planner(search.space, cut).build(memo.dag.roots)
    search.stats.plans_costed += 2
    result = _better(None, sel, cut, model, search.stats, result)
    return _refined(result, model)


def _better(
    result: SelectionResult | None,
    plan: Selection,
    cut: frozenset[Edge],
    model: CostModel,
    stats: SearchStats,
    other: SelectionResult | None = None,
) -> SelectionResult:
    """The cheaper of ``result`` and ``plan`` with its multi-aggregates built (``result`` on a
    tie), then of that and ``other`` (``other`` only if strictly cheaper)."""
    merged = build_multi_aggregates(plan, model)
    cost = model.selection(merged)
    if result is None or cost < result.cost_s:
        result = SelectionResult(merged, cost, stats, cut)
    if other is not None and other.cost_s < result.cost_s:
        result = SelectionResult(other.selection, other.cost_s, stats, other.cut)
    return result


def _refined(result: SelectionResult, model: CostModel) -> SelectionResult:
    refined = dissolve_unprofitable(result.selection, model)
    refined_cost = model.selection(refined)
    if refined_cost < result.cost_s:
        return SelectionResult(refined, refined_cost, result.stats, result.cut)
    return result


def _heuristics(memo: MemoTable, model: CostModel, space: PlanSpace) -> list[SelectionResult]:
    return [fuse_all(memo, model, space), fuse_no_redundancy(memo, model, space)]


POLICIES = {
    "fuse_all": fuse_all,
    "fuse_no_redundancy": fuse_no_redundancy,
    "cost_based": cost_based,
}
