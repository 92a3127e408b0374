"""Selection policies: redundancy vs materialization, optimality of the cost-based search, and
the cost-based plan never worse than the heuristics' by the model."""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
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


def _glm_probit_memos(monkeypatch, field: str, csr: bool = False) -> list:
    """The memo tables and cost models of GLM-probit's iteration bodies, as its fit plans them
    (X dense, or CSR with 70% zeros); ``field``: a cost field set to its own value (the same
    costs), different per caller, so that no plan cached by another test is reused."""
    from fusedml.algorithms import GLM

    rng = np.random.default_rng(1)
    X, y = rng.standard_normal((3_000, 6)), (rng.random(3_000) < 0.5).astype(float)
    if csr:
        X = sp.csr_matrix(np.where(np.abs(X) > 1.0, X, 0.0))
    memos = []
    real = policies.cost_based

    def recorded(memo, model):
        memos.append((memo, model))
        return real(memo, model)

    monkeypatch.setitem(policies.POLICIES, "cost_based", recorded)
    constants = pipeline.cost_model().c
    with fm.config(codegen=False, **{field: getattr(constants, field)}):
        GLM(family="binomial", link="probit", max_iter=2, tol=0.0).fit(X, y)
    monkeypatch.setitem(policies.POLICIES, "cost_based", real)
    assert len(memos) >= 5
    return memos


def test_every_estimator_body_is_planned_as_by_the_exhaustive_search(monkeypatch):
    """Local search on the estimators' own bodies (GLM-probit's Hessian body: 13 points) ends
    at the exhaustive search's cost, with a few dozen plans costed instead of thousands."""
    totals, local_from = [], policies.LOCAL_SEARCH_FROM
    for memo, model in _glm_probit_memos(monkeypatch, "dask_task_s"):
        found = {}
        for threshold in (local_from, 100):
            monkeypatch.setattr(policies, "LOCAL_SEARCH_FROM", threshold)
            cut, s = search_cut(memo, model)
            found[threshold] = (model.selection(Planner(s.space, cut).build(memo.dag.roots)), s)
        (local, s_local), (exhaustive, s_exhaustive) = found.values()
        assert local == pytest.approx(exhaustive, rel=1e-12)
        assert s_local.stats.plans_costed <= 60
        totals.append(s_exhaustive.stats.plans_total)
    assert max(totals) > 1_000  # the space the local search avoids


@pytest.mark.parametrize("csr", [False, True])
def test_a_plan_at_the_floor_ends_the_search(monkeypatch, csr):
    """GLM-probit's bodies: fused whole, a seed plan costs what no plan can undercut
    (``plan_floor``), and the cost-based policy returns it after costing the two seeds, at the
    cost the full search reaches."""
    field = "network_bytes_per_s" if csr else "dask_round_trip_s"
    for memo, model in _glm_probit_memos(monkeypatch, field, csr):
        quick = policies.cost_based(memo, model)
        with monkeypatch.context() as m:
            m.setattr(policies, "plan_floor", lambda *args: 0.0)  # never reached: full search
            full = policies.cost_based(memo, model)
        assert quick.cost_s == pytest.approx(full.cost_s, rel=1e-9)
        if len(memo.dag.nodes) > 50:
            assert quick.stats.plans_costed == 2 < full.stats.plans_costed
        dag = memo.dag
        assert policies.plan_floor(model, dag.nodes, dag.roots) <= full.cost_s * (1 + 1e-9)


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
