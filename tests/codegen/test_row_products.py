"""Row kernels' renderings of small products inside a row: dot products below 16 columns (four
at a time, the rest one by one), axpys from 16 on, zero entries of a per-row result skipped in
``P.T @ Y`` only where Y's row is finite, column aggregates updated in place. Each gives the
reference interpreter's numbers, special values included."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import fusedml as fm

RNG = np.random.default_rng(3)


def _special(X):
    """X with a NaN, an inf, a -inf, a -0.0 and huge and tiny values in rows of their own."""
    X = X.copy()
    X[1, 2], X[4, 0], X[4, 3], X[7, 1] = np.nan, np.inf, -np.inf, -0.0
    X[9, :] = 1e300
    X[10, :] = 1e-300
    return X


def _fused(expr, mode="fuse_all"):
    """The result in ``mode``, asserting the plan's only operator is a generated Row kernel."""
    with warnings.catch_warnings(), fm.config(compile_s=0.0):
        warnings.simplefilter("error", fm.KernelFallbackWarning)
        assert [op.template for op in fm.explain(expr, fusion=mode).operators] == ["row"]
        return fm.evaluate(expr, fusion=mode)


@pytest.mark.parametrize("width", [1, 3, 7, 8, 16])
@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_products_of_every_rendering_give_the_reference_numbers(width, fmt):
    rng = np.random.default_rng(3)  # its own: the shared RNG's draws depend on the test order
    X = _special(rng.standard_normal((40, 20)))
    X[np.abs(X) < 0.8] = 0.0  # zeros for the CSR layout (and the annihilation rule)
    B = rng.standard_normal((20, width))
    B[0, :] = 0.0
    Xm = fm.matrix(sp.csr_matrix(X) if fmt == "csr" else X)
    Bm = fm.matrix(B)
    expr = fm.sum(fm.exp(0.1 * (Xm @ Bm)) - Xm @ Bm, axis=1)
    want = fm.evaluate(expr, fusion="none")
    np.testing.assert_allclose(_fused(expr), want, rtol=1e-12)
    assert np.isnan(want).any() and np.isinf(want).any()


@pytest.mark.parametrize("width", [4, 6])
def test_dot_products_four_at_a_time_beside_a_full_aggregate(width):
    """Blocked dot products (and the remainder's one-by-one dots) beside other outputs of the
    same kernel: a per-row minimum, full sums, each as the reference computes them. 40 columns:
    the row-at-a-time kernel (tiled kernels render their products by blocks of their own)."""
    rng = np.random.default_rng(5)
    X = _special(rng.standard_normal((300, 40)))
    B = rng.standard_normal((40, width))
    Xm = fm.matrix(X)
    S = Xm @ fm.matrix(B) - 1.0
    expr = (fm.min(S, axis=1), fm.sum(fm.argmax(S, axis=1, keepdims=True) == 2.0), fm.sum(S > 0))
    with fm.config(dispatch_s=0.0):
        got = _fused(expr, "cost_based")
    want = fm.evaluate(expr, fusion="none")
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    assert got[1] == want[1] > 0 and got[2] == want[2] > 0


def test_zero_shares_skip_only_rows_where_the_other_factor_is_finite():
    """KMeans' ``P.T @ X``: P is mostly zeros, and 0 * inf must still give NaN. The inf row is
    nearest (-inf) to the centroids with a positive first coordinate and shares 0 with the rest."""
    X = RNG.standard_normal((60, 5))
    X[4, 0], X[7, 1], X[9, :] = np.inf, -0.0, 1e300
    C = RNG.standard_normal((4, 5))
    C[:2, 0], C[2:, 0] = 1.0, -1.0
    Xm, Cm = fm.matrix(X), fm.matrix(C)
    D = -2 * (Xm @ Cm.T) + np.sum(C * C, axis=1)
    P = fm.min(D, axis=1, keepdims=True) >= D
    P = P / fm.sum(P, axis=1, keepdims=True)
    expr = (P.T @ Xm, fm.sum(P, axis=0))
    got, want = _fused(expr, "cost_based"), fm.evaluate(expr, fusion="none")
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    assert np.isnan(want[0][2:, 0]).all() and np.isinf(want[0][:2, 0]).all()
    assert np.isfinite(want[0][:, 1:]).all()


@pytest.mark.parametrize("agg", [fm.min, fm.max])
def test_column_aggregates_of_per_row_results_propagate_nan(agg):
    X = RNG.standard_normal((50, 6))
    B = RNG.standard_normal((6, 3))
    Xm = fm.matrix(X)
    expr = agg(Xm @ B + 1.0, axis=0)
    np.testing.assert_allclose(_fused(expr), fm.evaluate(expr, fusion="none"), rtol=1e-12)
    X[7, 2] = np.nan
    Xm = fm.matrix(X)
    expr = agg(Xm @ B + 1.0, axis=0)
    got = _fused(expr)
    np.testing.assert_allclose(got, fm.evaluate(expr, fusion="none"), rtol=1e-12)
    assert np.isnan(got).all()
