"""optimize_until, explain and config scoping."""

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import fusedml as fm
from fusedml import pipeline
from fusedml.ir.dag import Dag


def test_optimize_until_returns_each_stage():
    X = fm.matrix(np.ones((3, 2)))
    expr = fm.sum(X.T * 1)
    dag = pipeline.optimize_until(expr, "dag")
    rewritten = pipeline.optimize_until(expr, "rewrite")
    plan = pipeline.optimize_until(expr, "plan", fusion="none")
    assert isinstance(dag, Dag) and isinstance(rewritten, Dag) and isinstance(plan, fm.Plan)
    assert len(rewritten) < len(dag)
    assert plan.dag.roots == rewritten.roots and plan.operators == ()
    with pytest.raises(ValueError, match="unknown stage"):
        pipeline.optimize_until(expr, "codegen")


def test_explain_prints_the_dag_and_modes():
    X = fm.matrix(np.ones((3, 2)))
    plan = fm.explain((fm.sum(X * X), X.T @ X), fusion="none")
    text = str(plan)
    assert text.startswith("Plan(fusion='none', 0 fused operator(s)")
    assert "out[0]" in text and "out[1]" in text and "matmul(" in text


def test_config_is_scoped_and_per_thread():
    assert fm.get_config().fusion == "cost_based"
    seen = {}
    with fm.config(fusion="none"):
        assert fm.get_config().fusion == "none"
        t = threading.Thread(target=lambda: seen.setdefault("fusion", fm.get_config().fusion))
        t.start()
        t.join()
        with fm.config(fusion="hand"):
            assert fm.get_config().fusion == "hand"
        assert fm.get_config().fusion == "none"
    assert fm.get_config().fusion == "cost_based"
    assert seen["fusion"] == "cost_based"  # a new thread starts from the defaults
    with pytest.raises(TypeError, match="unknown config field"):
        fm.config(fusoin="none")


def test_env_var_sets_the_default_and_bad_values_fail_clearly():
    code = "import fusedml as fm; print(fm.get_config().fusion)"
    env = {**os.environ, "FUSEDML_FUSION": "fuse_no_redundancy"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "fuse_no_redundancy"
    env["FUSEDML_FUSION"] = "bogus"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode != 0 and "FUSEDML_FUSION" in out.stderr


def test_evaluate_tuples_share_work(fresh_stats):
    X = fm.matrix(np.arange(6.0).reshape(2, 3))
    shared = fm.exp(X)
    a, b = fm.evaluate((fm.sum(shared), fm.max(shared)), fusion="none")
    assert a == pytest.approx(np.exp(np.arange(6.0)).sum()) and b == pytest.approx(np.exp(5.0))
    assert fresh_stats()["ops_executed"] == 3  # exp once, then two aggregates
    assert fm.evaluate([2.0, X[:, 0]], fusion="none")[0] == 2.0


def test_debug_level_verifies_and_prints(capsys):
    X = fm.matrix(np.ones((2, 2)))
    with fm.config(debug=2):
        fm.evaluate(fm.sum(X * 1), fusion="none")
    assert "Plan(fusion='none'" in capsys.readouterr().err


def test_a_multi_aggregate_runs_before_consumers_of_its_first_root():
    # the L2SVM line search: g's subtraction consumes the first sum and precedes the second in
    # the DAG; the schedule once placed the MAgg at its last root, after that subtraction
    rng = np.random.default_rng(0)
    Y, Xw, Xd = (fm.matrix(rng.standard_normal(50_000)) for _ in range(3))
    out = 1 - Y * (Xw + 0.5 * Xd)
    sv = out > 0
    out = out * sv
    g = 2.0 - fm.sum(out * Y * Xd)
    h = 1.0 + fm.sum(Xd * sv * Xd)
    plan = fm.explain((g, h), fusion="cost_based")
    assert [op.template for op in plan.operators] == ["magg"]
    np.testing.assert_allclose(
        fm.evaluate((g, h), fusion="cost_based"), fm.evaluate((g, h), fusion="none"), rtol=1e-12
    )
