"""The interim tier (``runtime/interpreter.py``): fused operators whose kernels are not ready run
over row blocks of a dense main input, or at a CSR driver's stored entries (Outer), and give the
reference interpreter's numbers, special values included."""

import sys
import weakref
from collections import Counter

import numpy as np
import pytest
import scipy.sparse as sp
from fusedml.algorithms import ALSCG, GLM, KMeans, MLogReg
from hypothesis import given, settings

import fusedml as fm
from fusedml.codegen import cache
from fusedml.runtime import fused, interpreter
from tests import exprgen
from tests.exprgen import check


@pytest.fixture
def interim(monkeypatch, tmp_path):
    """No kernel ever ready (compiles off, empty disk cache, none of this process's kernels kept
    in memory by earlier tests), and blocks of a few cells, so that the tests' small inputs are
    split."""
    monkeypatch.setattr(interpreter, "BLOCK_CELLS", 1)  # one row per block
    monkeypatch.setattr(interpreter, "NODE_CELLS", 1)
    monkeypatch.setattr(cache, "_memory", {})
    for name in [n for n in sys.modules if n.startswith("fusedml_kernel_")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(fused, "_prepared", weakref.WeakKeyDictionary())
    with fm.config(cache_dir=str(tmp_path), compile="off", dispatch_s=0.0, compile_s=0.0):
        yield


def _ran(before: dict, after: dict) -> Counter:
    keys = ("interim_in_row_blocks", "interim_at_stored_entries", "fused_ops_awaiting_kernel")
    return Counter({k: after.get(k, 0) - before.get(k, 0) for k in keys})


def test_differential_corpus_in_the_interim_tier(interim):
    runs: Counter = Counter()

    @settings(max_examples=60)
    @given(exprgen.expressions(max_depth=4, allow_sparse=True))
    def corpus(case):
        before = fm.stats()
        for mode in ("fuse_all", "cost_based"):
            check(*case, fusion=mode)
        runs.update(_ran(before, fm.stats()))

    corpus()
    assert runs["fused_ops_awaiting_kernel"] > 0
    assert runs["interim_in_row_blocks"] >= 5, runs  # not vacuous: blocks ran


def _outer_case(rng, special: bool):
    m, n, k = 300, 280, 4
    W = sp.random(m, n, density=0.05, format="csr", random_state=3)
    W.data[::7] = 0.0  # stored zeros annihilate as implicit ones do
    X = sp.random(m, n, density=0.08, format="csr", random_state=4)  # another pattern
    U, V = rng.normal(size=(m, k)), rng.normal(size=(n, k))
    if special:
        U[3, 1], U[5, 0], V[7, 2], V[11, 3] = np.nan, np.inf, -np.inf, 1e300
    return W, X, U, V


@pytest.mark.parametrize("special", [False, True])
def test_outer_operators_at_the_stored_entries(interim, special):
    """Every output kind of an Outer operator over a CSR driver: a sum, the cells, and products
    with a factor on either side, with a second sparse matrix of another pattern in the body."""
    rng = np.random.default_rng(0)
    W, X, U, V = _outer_case(rng, special)
    w, x, u, v = (fm.matrix(a) for a in (W, X, U, V))
    cells = w * (fm.exp(u @ v.T * 0.1) - x)
    exprs = [fm.sum(cells), cells, cells @ v, cells.T @ u]
    before = fm.stats()
    for expr in exprs:
        want = fm.evaluate(expr, fusion="none")
        got = fm.evaluate(expr, fusion="fuse_all")
        assert "outer" in {op.template for op in fm.explain(expr, fusion="fuse_all").operators}
        got, want = (a.toarray() if sp.issparse(a) else np.asarray(a) for a in (got, want))
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, equal_nan=True)
    assert _ran(before, fm.stats())["interim_at_stored_entries"] == len(exprs)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize(
    "make",
    [
        lambda: KMeans(n_clusters=3, n_init=1, random_state=0),
        lambda: MLogReg(max_iter=3),
        lambda: GLM(family="binomial", link="probit", max_iter=3),
        lambda: ALSCG(rank=3, max_iter=2, random_state=0),
    ],
)
def test_fits_in_the_interim_tier_equal_the_reference_s(interim, make):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 5))
    y = (X[:, 0] + rng.normal(size=400) > 0).astype(float)
    if isinstance(make(), ALSCG):
        X, y = sp.random(300, 280, density=0.05, format="csr", random_state=2), None
        X.data = np.round(X.data * 4 + 1)
    before = fm.stats()
    interim_fit = make().fit(X, y)
    ran = _ran(before, fm.stats())
    assert ran["interim_in_row_blocks"] + ran["interim_at_stored_entries"] > 0
    with fm.config(codegen=False):
        reference_fit = make().fit(X, y)
    for name in ("coef_", "cluster_centers_", "user_factors_"):
        if hasattr(reference_fit, name):
            np.testing.assert_allclose(
                getattr(interim_fit, name), getattr(reference_fit, name), rtol=1e-9, atol=1e-12
            )
