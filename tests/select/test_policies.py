"""Selection policies: redundancy vs materialization, optimality of the cost-based search, and
the cost-based plan never worse than the heuristics' by the model."""

import itertools

import numpy as np
import pytest
from fusedml.datasets.bodies import BODIES
from hypothesis import given, settings

import fusedml as fm
from fusedml import pipeline
from fusedml.select import policies
from fusedml.select.candidates import Planner
from fusedml.select.points import interesting_points
from fusedml.select.policies import search_cut
from tests import exprgen
from tests.formats import unbound


def shared_intermediate(rows):
    rng = np.random.default_rng(0)
    X, Y, Z = (fm.matrix(rng.standard_normal((rows, 20))) for _ in range(3))
    T = fm.exp(X) * fm.sigmoid(X) / (1 + fm.abs(X))  # ~65 flops per cell
    # two consumers no single operator can serve (a full aggregate and a cellwise output)
    return T, (fm.sum(T * Y), T * Z)


def recomputed(plan, node):
    return sum(node in op.nodes for op in plan.operators) >= 2


def materialized(plan, node):
    return node in plan.unfused or any(node in op.roots for op in plan.operators)


@pytest.mark.parametrize(("rows", "choice"), [(5, "recompute"), (400_000, "materialize")])
def test_shared_intermediate_policies_and_two_size_regimes(rows, choice):
    T, exprs = shared_intermediate(rows)
    with fm.config(compile_s=0.0):  # fixed per-operator costs are then dispatch only
        fa = fm.explain(exprs, fusion="fuse_all")
        fnr = fm.explain(exprs, fusion="fuse_no_redundancy")
        cb = fm.explain(exprs, fusion="cost_based")
    assert recomputed(fa, T.node) and not materialized(fa, T.node)
    assert materialized(fnr, T.node) and not recomputed(fnr, T.node)
    assert cb.estimated_cost_s <= min(fa.estimated_cost_s, fnr.estimated_cost_s)
    if choice == "recompute":  # dispatches dominate: fewer operators win
        assert fa.estimated_cost_s < fnr.estimated_cost_s
        assert recomputed(cb, T.node) and not materialized(cb, T.node)
    else:  # the 65 flops per cell, done twice, cost more than writing T once and reading it back
        assert fnr.estimated_cost_s < fa.estimated_cost_s
        assert materialized(cb, T.node) and not recomputed(cb, T.node)
    (want_sum, want_mat), *others = (
        fm.evaluate(exprs, fusion=m) for m in ("none", "fuse_all", "cost_based")
    )
    for got_sum, got_mat in others:
        assert got_sum == pytest.approx(want_sum, rel=1e-12)
        np.testing.assert_allclose(got_mat, want_mat, rtol=1e-13)


def unbound_arguments(make, rows):
    """Inputs without data, shaped as ``make(rows)``'s data: the axes that differ between a
    one-row and a two-row call grow with ``rows``."""
    one, two = make(1), make(2)
    return [
        unbound(tuple(rows if m != n else m for m, n in zip(np.shape(a), np.shape(b), strict=True)))
        for a, b in zip(one, two, strict=True)
    ]


@pytest.mark.parametrize("name", sorted(BODIES))
@pytest.mark.parametrize("rows", [2_000, 1_000_000])
def test_search_finds_the_exhaustive_optimum(name, rows):
    fn, make = BODIES[name]
    outputs = fn(*unbound_arguments(make, rows))  # traced as fm.jit would, with no data
    plan = fm.explain(outputs, fusion="none")
    memo = pipeline.optimize_until(plan.dag, "explore")
    model = pipeline.cost_model()
    cut, search = search_cut(memo, model)
    space = search.space
    found = model.selection(Planner(space, cut).build(memo.dag.roots))
    points = interesting_points(memo)
    assert len(points) >= 8  # a search space worth pruning
    brute = min(
        model.selection(
            Planner(space, frozenset().union(*(p.edges for p in subset))).build(memo.dag.roots)
        )
        for k in range(len(points) + 1)
        for subset in itertools.combinations(points, k)
    )
    assert found == pytest.approx(brute, rel=1e-12)
    assert search.stats.plans_costed <= search.stats.plans_total
    # the local search costs a few dozen of the 2**k plans (exhaustively: 283-419)
    assert search.stats.plans_costed <= 60, search.stats


def test_every_estimator_body_is_planned_as_by_the_exhaustive_search(monkeypatch):
    """Local search on the estimators' own bodies (GLM-probit's Hessian body: 13 points) ends
    at the exhaustive search's cost, with a few dozen plans costed instead of thousands."""
    from fusedml.algorithms import GLM

    rng = np.random.default_rng(1)
    X, y = rng.standard_normal((3_000, 6)), (rng.random(3_000) < 0.5).astype(float)
    found: dict[str, list] = {"local": [], "exhaustive": []}
    search = policies.search_cut
    into = []  # the list the current fit's searches go to

    def recorded(memo, model):
        cut, s = search(memo, model)
        cost = model.selection(Planner(s.space, cut).build(memo.dag.roots))
        into[-1].append((cost, s.stats.plans_costed))
        return cut, s

    monkeypatch.setattr(policies, "search_cut", recorded)
    constants = pipeline.cost_model().c
    # each fit sets a cost field to its own value: the same costs, but no plan cached by another
    # test (or by the other fit) is reused
    for mode, threshold, field in (
        ("local", policies.LOCAL_SEARCH_FROM, "dask_task_s"),
        ("exhaustive", 100, "dask_round_trip_s"),
    ):
        monkeypatch.setattr(policies, "LOCAL_SEARCH_FROM", threshold)
        into.append(found[mode])
        with fm.config(codegen=False, **{field: getattr(constants, field)}):
            GLM(family="binomial", link="probit", max_iter=2, tol=0.0).fit(X, y)
    pairs = list(zip(found["local"], found["exhaustive"], strict=True))
    assert max(e[1] for _, e in pairs) > 1_000  # the space the local search avoids
    for local, exhaustive in pairs:
        assert local[0] == pytest.approx(exhaustive[0], rel=1e-12)
        assert local[1] <= 60


def test_lower_bound_prunes_when_materializing_is_expensive():
    X, Y = (unbound((300_000, 20)) for _ in range(2))
    A, B = X + 1, Y + 1  # shared, cheap to recompute, expensive to write and read back
    memo = pipeline.optimize_until([fm.sum(A * B), fm.sum(A), fm.sum(B)], "explore")
    _, search = search_cut(memo, pipeline.cost_model())
    assert search.stats.interesting_points == 2
    assert search.stats.plans_pruned > 0
    assert search.stats.plans_costed + search.stats.plans_pruned <= search.stats.plans_total


@settings(max_examples=200)
@given(exprgen.expressions(max_depth=5, allow_sparse=True))
def test_cost_based_never_costs_more_than_the_heuristics(case):
    tree, leaves = case
    expr = exprgen.build(tree, exprgen.fm_leaves(leaves))
    if not isinstance(expr, fm.Expr):
        return
    costs = {m: fm.explain(expr, fusion=m).estimated_cost_s for m in pipeline.POLICIES}
    assert costs["cost_based"] <= min(costs["fuse_all"], costs["fuse_no_redundancy"]) * (1 + 1e-12)


def test_every_mode_runs_fused_operators_on_the_corpus_patterns(fresh_stats):
    rng = np.random.default_rng(5)
    X, Y = fm.matrix(rng.standard_normal((300, 4))), fm.matrix(rng.standard_normal((300, 4)))
    expr = fm.sum(fm.exp(X) * Y, axis=1)
    for mode in ("fuse_all", "fuse_no_redundancy"):
        np.testing.assert_allclose(
            fm.evaluate(expr, fusion=mode), fm.evaluate(expr, fusion="none"), rtol=1e-13
        )
    assert fresh_stats()["fused_ops_executed"] == 2
