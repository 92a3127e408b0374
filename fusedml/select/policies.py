"""Plan selection policies over one memo table and one cost model.

- ``fuse_all``: fuse maximally, recomputing shared intermediates inside every consumer (FA).
- ``fuse_no_redundancy``: materialize every multi-consumer intermediate (FNR).
- ``cost_based``: per partition of the memo, search the assignments of its interesting points
  (materialize or fuse), seeded with the FA and FNR plans. Two prunings keep the search small:
  *structural*, a point whose materialization splits its partition into independent parts is
  branched on first, and each part is then solved on its own (the cost model is additive over
  independent parts); *cost-based*, within an exhaustive enumeration a lower bound (static costs
  plus the materialized points' writes and reads) skips every assignment that only adds
  materialized points to one already no better than the best plan found. Multi-aggregates are built
  last, where they are cheaper.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fusedml.fusion.memo import MemoTable
from fusedml.ir.node import Node
from fusedml.select.candidates import Edge, Planner, PlanSpace, Selection
from fusedml.select.cost import CostModel, ScopeBound, node_bytes
from fusedml.select.magg import build_multi_aggregates
from fusedml.select.points import (
    Point,
    components,
    fusable_edges,
    interesting_points,
    multi_consumer_cut,
)

EXHAUSTIVE_MAX_POINTS = 4  # below this, enumerate instead of looking for splitting points


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


def fuse_all(memo: MemoTable, model: CostModel) -> SelectionResult:
    sel = Planner(memo).build(memo.dag.roots)
    return SelectionResult(sel, model.selection(sel))


def fuse_no_redundancy(memo: MemoTable, model: CostModel) -> SelectionResult:
    cut = multi_consumer_cut(memo)
    sel = Planner(memo, cut).build(memo.dag.roots)
    return SelectionResult(sel, model.selection(sel), cut=cut)


class _Search:
    def __init__(self, memo: MemoTable, model: CostModel) -> None:
        self.memo = memo
        self.space = PlanSpace(memo)
        self.model = model
        self.edges = fusable_edges(memo)
        self.stats = SearchStats()
        dag = memo.dag
        fused_by = {(c, p) for c, p in self.edges}
        roots = set(dag.roots)
        # materialized whatever the plan: outputs, and inputs of consumers that never fuse them
        self.always_required = {
            n
            for n in memo.entries
            if n in roots or any((c, n) not in fused_by for c in dag.consumers[n])
        }
        self._cost_cache: dict[tuple, float] = {}

    def required(self, nodes: frozenset[Node], cut: frozenset[Edge]) -> list[Node]:
        cut_producers = {p for _, p in cut}
        return [n for n in nodes if n in self.always_required or n in cut_producers]

    def scope_cost(self, nodes: frozenset[Node], cut: frozenset[Edge]) -> float:
        local = frozenset(e for e in cut if e[0] in nodes or e[1] in nodes)
        key = (nodes, local)
        cost = self._cost_cache.get(key)
        if cost is None:
            steps = Planner(self.space, local).steps(self.required(nodes, local), scope=nodes)
            cost = self.model.steps(steps)
            self._cost_cache[key] = cost
            self.stats.plans_costed += 1
        return cost

    def solve(
        self, nodes: frozenset[Node], points: list[Point], cut: frozenset[Edge]
    ) -> tuple[float, frozenset[Edge]]:
        points = [pt for pt in points if pt.producer in nodes and not pt.edges <= cut]
        if len(points) > EXHAUSTIVE_MAX_POINTS:
            split = self._splitting_point(nodes, points, cut)
            if split is not None:
                point, parts = split
                rest = [pt for pt in points if pt is not point]
                cut_t = cut | point.edges
                cost_t, chosen_t = 0.0, cut_t
                for part in parts:
                    c, ch = self.solve(part, rest, cut_t)
                    cost_t += c
                    chosen_t |= ch
                cost_f, chosen_f = self.solve(nodes, rest, cut)
                return (cost_t, chosen_t) if cost_t < cost_f else (cost_f, chosen_f)
        return self._enumerate(nodes, points, cut)

    def _splitting_point(self, nodes, points, cut):
        best = None
        for pt in points:
            parts = components(nodes, (e for e in self.edges if e not in cut and e not in pt.edges))
            if len(parts) < 2:
                continue
            sizes = sorted(sum(pt2.producer in part for pt2 in points) for part in parts)
            score = (sizes[-1], -len(parts))  # the most balanced split first
            if best is None or score < best[0]:
                best = (score, pt, parts)
        return None if best is None else (best[1], best[2])

    def _enumerate(
        self, nodes: frozenset[Node], points: list[Point], cut: frozenset[Edge]
    ) -> tuple[float, frozenset[Edge]]:
        """MPSkipEnum: all assignments in binary order, bit 0 (most significant) the point with
        the largest intermediate, since the lower bound prunes most there."""
        points = sorted(points, key=lambda pt: -node_bytes(pt.producer))
        k = len(points)
        total = 1 << k
        self.stats.plans_total += total
        required = set(self.required(nodes, cut))
        external = {i for n in nodes for i in n.inputs if i not in nodes}
        bound = ScopeBound.of(nodes, external, required)

        def trues(i: int) -> list[Point]:
            return [pt for b, pt in enumerate(points) if i >> (k - 1 - b) & 1]

        def cut_of(i: int) -> frozenset[Edge]:
            return cut.union(*(pt.edges for pt in trues(i)))

        # fuse-all and no-redundancy within the scope first: the initial upper bound
        best_cost, best_cut = min(
            ((self.scope_cost(nodes, cut_of(i)), cut_of(i)) for i in (0, total - 1)),
            key=lambda c: c[0],
        )
        i = 1
        while i < total - 1:
            chosen = trues(i)
            extra = {pt.producer for pt in chosen} - required
            if self.model.lower_bound(bound, sum(map(node_bytes, extra))) >= best_cost:
                # every assignment that only adds points after the last true one is no better
                last_true = max(b for b in range(k) if i >> (k - 1 - b) & 1)
                skip = 1 << (k - 1 - last_true)
                self.stats.plans_pruned += min(skip, total - 1 - i)
                i += skip
                continue
            cost = self.scope_cost(nodes, cut_of(i))
            if cost < best_cost:
                best_cost, best_cut = cost, cut_of(i)
            i += 1
        return best_cost, best_cut


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


def search_cut(memo: MemoTable, model: CostModel) -> tuple[frozenset[Edge], _Search]:
    """The cheapest cut set: each partition's interesting points searched on their own."""
    search = _Search(memo, model)
    points = interesting_points(memo)
    search.stats.interesting_points = len(points)
    partitions = components(memo.entries, search.edges)
    search.stats.partitions = len(partitions)
    cut: frozenset[Edge] = frozenset()
    for part in partitions:
        _, chosen = search.solve(part, points, frozenset())
        cut |= chosen
    return cut, search


def cost_based(memo: MemoTable, model: CostModel) -> SelectionResult:
    cut, search = search_cut(memo, model)
    sel = Planner(search.space, cut).build(memo.dag.roots)
    result = SelectionResult(sel, model.selection(sel), search.stats, cut)
    # the heuristics' plans seed the search per partition; compare whole plans too, so that the
    # chosen plan is never worse than either by the model, whatever the partition boundaries
    for alternative in (fuse_all(memo, model), fuse_no_redundancy(memo, model)):
        if alternative.cost_s < result.cost_s:
            result = SelectionResult(
                alternative.selection, alternative.cost_s, search.stats, alternative.cut
            )
    for refine in (build_multi_aggregates, dissolve_unprofitable):
        refined = refine(result.selection, model)
        refined_cost = model.selection(refined)
        if refined_cost < result.cost_s:
            result = SelectionResult(refined, refined_cost, result.stats, result.cut)
    return result


POLICIES = {
    "fuse_all": fuse_all,
    "fuse_no_redundancy": fuse_no_redundancy,
    "cost_based": cost_based,
}
