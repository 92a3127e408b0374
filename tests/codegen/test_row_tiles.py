"""Row kernels over tiles of rows (``row_tiles``): skinny dense bodies are rendered tile by tile,
wider or sparse ones row by row, and both give the reference interpreter's numbers, over chunks
of several tiles and a last partial tile, special values and exact ties included."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import fusedml as fm
from fusedml.codegen.spec import kernel_spec

RNG = np.random.default_rng(11)
ROWS = 64 * 256 + 777  # 64 chunks of more than one tile of 256 rows, the last tiles partial


def _special(X):
    X = X.copy()
    X[1, 2], X[4, 0], X[4, 1], X[7, 1] = np.nan, np.inf, -np.inf, -0.0
    X[9, :], X[10, :] = 1e300, 1e-300
    X[ROWS - 1, 0] = np.nan  # in the last, partial tile
    return X


def _source(expr, mode):
    with fm.config(compile_s=0.0, dispatch_s=0.0):
        (op,) = fm.explain(expr, fusion=mode).operators
    assert op.template == "row"
    return kernel_spec(op.cplan).build().source


def _fused(expr, mode):
    with warnings.catch_warnings(), fm.config(compile_s=0.0, dispatch_s=0.0):
        warnings.simplefilter("error", fm.KernelFallbackWarning)
        return fm.evaluate(expr, fusion=mode)


def _kmeans_step(X, C):
    Xm, Cm = fm.matrix(X), fm.matrix(C)
    D = -2 * (Xm @ Cm.T) + np.sum(C * C, axis=1)
    nearest = fm.min(D, axis=1, keepdims=True)
    P = nearest >= D
    P = P / fm.sum(P, axis=1, keepdims=True)
    return (P.T @ Xm, fm.sum(P, axis=0), fm.sum(nearest), fm.max(D, axis=1))


@pytest.mark.parametrize(("cols", "tiled"), [(10, True), (40, False)])
def test_kmeans_step_matches_the_reference_tiled_or_not(cols, tiled):
    X = _special(RNG.standard_normal((ROWS, cols)))
    C = RNG.standard_normal((7, cols))
    C[5] = C[2]  # a duplicated centroid: every record near it is an exact tie, shared equally
    expr = _kmeans_step(X, C)
    assert ("for i0 in range(lo, hi" in _source(expr[0], "fuse_all")) == tiled
    want = fm.evaluate(expr, fusion="none")
    for mode in ("fuse_all", "cost_based"):
        got = _fused(expr, mode)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=0)
    # the tie really occurs (on the finite records: a NaN record makes every share NaN)
    clean = np.nan_to_num(X, posinf=0.0, neginf=0.0)
    finite = fm.evaluate(_kmeans_step(clean, C)[1], fusion="none")
    shares = np.asarray(finite).ravel()
    assert shares[5] == shares[2] > 0


def test_products_aggregates_and_rows_with_special_values():
    """x @ B (vector and one column), row sums and means, per-row outputs and a full min."""
    X = _special(RNG.standard_normal((ROWS, 12)))
    B, w = RNG.standard_normal((12, 5)), RNG.standard_normal((12, 1))
    y = RNG.standard_normal((ROWS, 1))
    Xm, Bm, wm, ym = fm.matrix(X), fm.matrix(B), fm.matrix(w), fm.matrix(y)
    Z = fm.exp(0.1 * (Xm @ Bm)) - ym * (Xm @ wm)
    exprs = [
        Xm.T @ (Z - fm.mean(Z, axis=1, keepdims=True)),
        fm.sum(Z * Z, axis=1),
        fm.min(Z),
    ]
    for expr in exprs:
        assert "for i0 in range(lo, hi" in _source(expr, "fuse_all")
        want = fm.evaluate(expr, fusion="none")
        got = _fused(expr, "fuse_all")
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
        assert np.isnan(want).any() or np.isinf(want).any()


def test_sparse_inputs_stay_row_by_row():
    X = sp.random(300, 10, density=0.3, format="csr", random_state=0)
    B = RNG.standard_normal((10, 4))
    expr = fm.sum(fm.exp(fm.matrix(X) @ fm.matrix(B)), axis=0)
    assert "for i0 in range(lo, hi" not in _source(expr, "fuse_all")
    np.testing.assert_allclose(_fused(expr, "fuse_all"), fm.evaluate(expr, fusion="none"))
