"""Differential corpus: random expression DAGs through ``fm.evaluate`` vs the numpy oracle."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings

import fusedml as fm
from tests import exprgen, oracle


def fm_leaves(leaves):
    # 0-D leaves become runtime scalars (fm.matrix of a 0-D array), not literals
    return [fm.matrix(np.asarray(v)) if np.ndim(v) == 0 else fm.matrix(v) for v in leaves]


def check(tree, leaves, fusion="none"):
    expected = oracle.evaluate(tree, leaves)
    expr = exprgen.build(tree, fm_leaves(leaves))
    got = fm.evaluate(expr, fusion=fusion)
    want = expected.value
    if np.ndim(want) == 0:
        assert isinstance(got, float), type(got)
    elif np.ndim(want) == 2 and expected.csr:
        assert sp.issparse(got) and got.format == "csr", f"expected CSR, got {type(got)}"
        got = got.toarray()
    else:
        assert isinstance(got, np.ndarray), f"expected ndarray, got {type(got)}"
        assert got.dtype == (np.int64 if expected.index else np.float64), got.dtype
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12, equal_nan=True)


@settings(max_examples=600)
@given(exprgen.expressions(max_depth=6, allow_sparse=True))
def test_none_matches_numpy_oracle(case):
    tree, leaves = case
    check(tree, leaves)


@settings(max_examples=150)
@given(exprgen.expressions(max_depth=4, allow_sparse=True))
@pytest.mark.filterwarnings("ignore::fusedml.FusionModeWarning")
def test_every_mode_matches_numpy_oracle(case):
    tree, leaves = case
    for mode in fm.FUSION_MODES:
        check(tree, leaves, fusion=mode)
