"""The format axis, proven by a format that lives only in the test suite (ELL, ``tests/ell.py``):
registered through traits and the operand protocol alone, its inputs run through the same
planner, skeletons and cost model as CSR's and give the numpy oracle's numbers."""

from collections import Counter

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings

import fusedml as fm
from tests import ell, exprgen


@pytest.fixture(scope="module", autouse=True)
def ell_format():
    with ell.registered() as fmt:
        yield fmt


def to_ell(csr):
    return ell.Ell.from_csr(sp.csr_array(csr))


# FA and cost-based, also without fixed costs (so that its tiny inputs are fused), with every
# CSR leaf given as ELL (the oracle's CSR semantics are ELL's)
MODES = (
    ("fuse_all", {}),
    ("cost_based", {}),
    ("cost_based", {"dispatch_s": 0.0, "compile_s": 0.0}),
)


def corpus_runs(tree, leaves, runs: Counter) -> None:
    exprgen.check_in_modes(tree, leaves, MODES, ell.ELL, runs, "ell driven", sparse=to_ell)


def test_differential_corpus_with_ell_leaves():
    runs: Counter = Counter()

    @settings(max_examples=80)
    @given(exprgen.expressions(max_depth=4, allow_sparse=True))
    def corpus(case):
        corpus_runs(*case, runs)

    corpus()
    assert runs["fused"] >= 25 and runs["ell driven"] >= 5, runs


def test_special_values_with_ell_leaves():
    runs: Counter = Counter()

    @settings(max_examples=30)
    @given(exprgen.special_value_expressions())
    def corpus(case):
        corpus_runs(*case, runs)

    corpus()
    assert runs["fused"] >= 10 and runs["ell driven"] >= 3, runs


def _ell_csr(rng, shape, density):
    S = sp.random(*shape, density=density, format="csr", random_state=rng)
    S.data[::7] = 0.0  # stored zeros annihilate like structural ones
    return ell.Ell.from_csr(S), S


@pytest.mark.parametrize("mode", ["fuse_all", "cost_based"])
def test_every_template_runs_an_ell_driver_natively(mode, fresh_stats):
    rng = np.random.default_rng(0)
    E, S = _ell_csr(rng, (300, 400), 0.05)
    X = rng.normal(size=(300, 400))
    v, w = rng.normal(size=400), rng.normal(size=300)
    U, V = rng.normal(size=(300, 4)), rng.normal(size=(400, 4))
    e, x, u, vt = fm.matrix(E), fm.matrix(X), fm.matrix(U), fm.matrix(V).T
    cases = [  # (expression, numpy value, template of its one operator)
        (fm.sum(e * fm.exp(x)), S.multiply(np.exp(X)).sum(), "cell"),
        (e * x + e * e, (S.multiply(X) + S.multiply(S)).toarray(), "cell"),
        (fm.max(e * x, axis=0), S.multiply(X).toarray().max(axis=0), "cell"),
        (e.T @ (w * (e @ v)), S.T @ (w * (S @ v)), "row"),
        (fm.sum(e * (u @ vt) ** 2), S.multiply((U @ V.T) ** 2).sum(), "outer"),
    ]
    with fm.config(fusion=mode, compile_s=0.0, dispatch_s=0.0):
        for expr, want, template in cases:
            plan = fm.explain(expr)
            assert [op.template for op in plan.operators] == [template], plan
            (op,) = plan.operators
            assert op.main_input.meta.format is ell.ELL
            got = fm.evaluate(expr)
            got = got.toarray() if sp.issparse(got) else got
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert fresh_stats()["kernels_executed"] == len(cases)
    assert fresh_stats().get("fused_ops_by_reference", 0) == 0


def test_ell_argument_of_a_jit_function():
    rng = np.random.default_rng(1)
    E, S = _ell_csr(rng, (50, 30), 0.2)

    @fm.jit
    def gram_times(X, v):
        return X.T @ (X @ v)

    v = rng.normal(size=30)
    np.testing.assert_allclose(gram_times(E, v), S.T @ (S @ v), rtol=1e-12)
