"""fm.explain's Plan: operators, printing, Graphviz and the debug levels."""

import numpy as np
import scipy.sparse as sp

import fusedml as fm
from tests.formats import unbound

RNG = np.random.default_rng(0)


def test_plan_lists_operators_with_template_inputs_aggregation_and_cost():
    X, Y = (unbound((200_000, 20)) for _ in range(2))  # large enough to fuse, planned only
    plan = fm.explain((fm.sum(X * Y), fm.sum(fm.exp(X), axis=1)))
    assert {op.template for op in plan.operators} <= {"cell", "row", "magg"}
    for op in plan.operators:
        assert op.inputs and op.estimated_cost_s > 0 and op.aggregation
    text = str(plan)
    assert "CELL[full_agg sum]" in text or "MAGG" in text
    assert "search: interesting_points=" in text and "out[1]" in text
    assert plan.estimated_cost_s >= sum(op.estimated_cost_s for op in plan.operators)


def test_to_dot_draws_operators_as_clusters():
    W = fm.matrix(sp.random(3000, 2000, density=0.01, format="csr", random_state=0))
    U, V = fm.matrix(RNG.standard_normal((3000, 8))), fm.matrix(RNG.standard_normal((2000, 8)))
    plan = fm.explain(fm.sum(W * (U @ V.T) ** 2))
    dot = plan.to_dot()
    assert dot.startswith("digraph plan {") and dot.rstrip().endswith("}")
    assert dot.count("subgraph cluster_") == 1 and 'label="OUTER full_agg"' in dot
    assert dot.count("->") == sum(len(n.inputs) for n in plan.dag.nodes)  # every DAG edge


def test_debug_levels(capsys):
    X = unbound((200_000, 20))
    expr = fm.sum(X * X)
    with fm.config(debug=1):
        fm.explain(expr)
    err = capsys.readouterr().err
    assert "[fusedml] explore:" in err and "[fusedml] select:" in err and "memo" not in err
    with fm.config(debug=3):
        fm.explain(expr)
    err = capsys.readouterr().err
    assert "memo after exploration" in err and "CELL(" in err and "selected (cost_based)" in err
    assert "Plan(fusion='cost_based'" in err
