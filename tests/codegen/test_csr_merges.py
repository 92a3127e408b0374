"""Cell and MAgg kernels over several CSR inputs of one shape read them by column cursors: a sum
that is zero wherever one factor is visits the columns all of them store (a k-way merge), a sum
that is zero only where all of them are walks the union of their rows. Both give the reference
interpreter's numbers, with stored zeros, empty rows and special values stored."""

import re

import numpy as np
import pytest
import scipy.sparse as sp

import fusedml as fm
from fusedml.codegen.spec import kernel_spec


def _csr(seed: int, special: bool) -> sp.csr_array:
    S = sp.random(120, 9, density=0.3, format="csr", random_state=seed)
    S.data[::5] = 0.0  # stored zeros annihilate as implicit ones do
    S = sp.lil_array(S)
    S[7, :] = 0.0  # an empty row
    S = sp.csr_array(S)
    if special:
        at = np.arange(1, S.nnz, 6)
        S.data[at] = np.array([np.nan, np.inf, -np.inf, 1e300, -0.0])[np.arange(at.size) % 5]
    return S


def _cases(x, y, z, d):
    """name -> (expression, whether its kernel walks a union of rows, else merges)"""
    return {
        "merge": (fm.sum(x * y * z), False),
        "merge_rows": (fm.sum(x * fm.exp(d) * y, axis=1), False),
        "union": ((fm.sum(x * x), fm.sum(x * y), fm.sum(y * y)), True),
        "union_dense_side": ((fm.sum(x * d), fm.sum(fm.exp(d) * y * z)), True),
    }


@pytest.mark.parametrize("special", [False, True])
@pytest.mark.parametrize("name", ["merge", "merge_rows", "union", "union_dense_side"])
def test_csr_inputs_read_by_column_cursors(name, special):
    X, Y, Z = (_csr(seed, special) for seed in (1, 2, 3))
    D = np.random.default_rng(0).normal(size=X.shape)
    expr, union = _cases(*map(fm.matrix, (X, Y, Z, D)))[name]
    with fm.config(compile_s=0.0, dispatch_s=0.0):
        (op,) = fm.explain(expr, fusion="cost_based").operators
        source = kernel_spec(op.cplan).build().source()
        got = fm.evaluate(expr, fusion="cost_based")
    assert ("while True:" in source) == union and re.search(r"b\d_at < b\d_end", source)
    assert ("j = max(" in source) != union  # the k-way merge
    want = fm.evaluate(expr, fusion="none")
    for g, w in zip(np.atleast_1d(got), np.atleast_1d(want), strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12, equal_nan=True)
