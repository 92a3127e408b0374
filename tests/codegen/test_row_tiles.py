"""Row kernels over tiles of rows (``row_tiles``): skinny dense bodies are rendered tile by tile,
wider or sparse ones row by row, and both give the reference interpreter's numbers, over chunks
of several tiles and a last partial tile, special values and exact ties included."""

import contextlib
import sys
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import fusedml as fm
from fusedml.codegen import row_tiles
from fusedml.codegen.spec import kernel_spec

RNG = np.random.default_rng(11)
ROWS = 64 * 256 + 777  # 64 chunks of more than one tile of 256 rows, the last tiles partial


def _special(X):
    X = X.copy()
    X[1, 2], X[4, 0], X[4, 1], X[7, 1] = np.nan, np.inf, -np.inf, -0.0
    X[9, :], X[10, :] = 1e300, 1e-300
    X[len(X) - 1, 0] = np.nan  # in the last, partial tile
    return X


@pytest.fixture(autouse=True)
def tiles_from_two_rows(monkeypatch):
    """Tiles for every size (they pay from 500k rows on): the tests' data is smaller. Each test
    draws its data from the same seed, whichever tests ran before it in its process."""
    monkeypatch.setattr(row_tiles, "TILE_MIN_ROWS", 2)
    monkeypatch.setattr(sys.modules[__name__], "RNG", np.random.default_rng(11))


def _dyadic(shape, rng=None):
    """Normal draws rounded to multiples of 2**-10: every product and sum of a few hundred of
    them is exact in float64, so a duplicated centroid ties exactly whatever order numpy's BLAS
    or a kernel sums in (with arbitrary floats BLAS itself may round two equal columns
    differently), and other centroids' distances are far apart (coarser steps made two rows of C
    sum alike, a near tie on the row of 1e300s that rounding decides)."""
    return np.round((rng or RNG).standard_normal(shape) * 1024) / 1024


def _source(expr, mode):
    with fm.config(compile_s=0.0, dispatch_s=0.0):
        (op,) = fm.explain(expr, fusion=mode).operators
    assert op.template == "row"
    return kernel_spec(op.cplan).build().source()


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
    X = _special(_dyadic((ROWS, cols)))
    C = _dyadic((7, cols))
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


def _first_nearest_step(X, C):
    Xm, Cm = fm.matrix(X), fm.matrix(C)
    D = -2 * (Xm @ Cm.T) + np.sum(C * C, axis=1)
    P = fm.one_hot(fm.argmax(-D, axis=1))
    w = fm.matrix(np.linspace(0.5, 2.0, X.shape[0])[:, None])
    return (P.T @ Xm, fm.sum(P, axis=0), P.T @ (w * Xm), P.T @ w)


@pytest.mark.parametrize(("cols", "tiled", "sparse"), [(10, True, False), (40, False, False),
                                                       (10, False, True)])  # fmt: skip
def test_one_hot_scatter_matches_numpy(cols, tiled, sparse):
    """P.T @ Y with P the one-hot rows of each record's first nearest centroid: finite rows of Y
    are added to their group only, a row with inf or NaN makes 0 * inf NaN in the others, and
    a tie goes to the first centroid, as numpy's ``np.eye(k)[np.argmax(-D, 1)].T @ Y``."""
    X = _dyadic((ROWS, cols))
    if sparse:
        X[RNG.random(X.shape) < 0.7] = 0.0
        X[:, 3] = X[:, 3] * 0.0  # -0.0 and 0.0 stored or not
    X = _special(X)
    C = _dyadic((7, cols))
    C[5] = C[2]  # exact ties: the records near centroid 2 go to 2, none to 5
    Xv = sp.csr_array(X) if sparse else X
    expr = _first_nearest_step(Xv, C)
    assert ("for i0 in range(lo, hi" in _source(expr[0], "fuse_all")) == tiled
    w = np.linspace(0.5, 2.0, ROWS)[:, None]
    with np.errstate(all="ignore"):
        P = np.eye(7)[np.argmax(-(-2 * (X @ C.T) + np.sum(C * C, axis=1)), axis=1)]
        want = (P.T @ X, P.sum(axis=0), P.T @ (w * X), P.T @ w)
    assert np.isnan(want[0]).any() and P[:, 2].sum() > 0 and P[:, 5].sum() == 0
    # cost_based fuses the four outputs into one Row kernel (fuse_all: four, each compiled)
    assert [op.template for op in fm.explain(expr, fusion="cost_based").operators] == ["row"]
    for mode in ("none", "cost_based"):
        got = _fused(expr, mode) if mode != "none" else fm.evaluate(expr, fusion="none")
        for g, v in zip(got, want, strict=True):
            np.testing.assert_allclose(np.reshape(g, v.shape), v, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("cols", "tiled", "sparse"), [(10, True, False), (40, False, False),
                                                       (10, False, True)])  # fmt: skip
def test_argmax_is_computed_in_the_row_kernel_as_numpy_s(cols, tiled, sparse):
    """fm.argmax of a per-row result is an output of the Row kernel (no matrix of scores is
    written for numpy's argmax to scan): the first maximum, a NaN before any number, ties to
    the first, int64 as numpy's, also inside the kernel (``labels == y``)."""
    X = _dyadic((ROWS, cols))
    if sparse:
        X[RNG.random(X.shape) < 0.7] = 0.0
    X = _special(X)
    C = _dyadic((7, cols))
    C[5] = C[2]
    y = RNG.integers(0, 7, size=(ROWS, 1)).astype(float)
    Xm = fm.matrix(sp.csr_array(X) if sparse else X)
    D = -2 * (Xm @ fm.matrix(C).T) + np.sum(C * C, axis=1)
    labels = fm.argmax(-D, axis=1)
    expr = (labels, fm.min(D, axis=1), fm.sum(fm.argmax(-D, axis=1, keepdims=True) == y))
    assert ("for i0 in range(lo, hi" in _source(expr[0], "fuse_all")) == tiled
    plan = fm.explain(expr, fusion="cost_based")
    assert [op.template for op in plan.operators] == ["row"]
    assert not [n for n in plan.unfused if n.op.value == "argmax"], plan
    with np.errstate(all="ignore"):
        S = -(-2 * (X @ C.T) + np.sum(C * C, axis=1))
    want = np.argmax(S, axis=1)
    assert np.isnan(S).any() and (want == 2).any() and not (want == 5).any()
    for mode in ("none", "fuse_all", "cost_based"):
        got = _fused(expr, mode) if mode != "none" else fm.evaluate(expr, fusion="none")
        assert got[0].dtype == np.int64 and got[0].shape == (ROWS,)
        np.testing.assert_array_equal(got[0], want)
        np.testing.assert_allclose(got[1], -S.max(axis=1), rtol=1e-12, atol=1e-12)
        assert got[2] == float(np.sum(want[:, None] == y))


@pytest.mark.parametrize("cols", [40, 300])
def test_wide_products_are_blas_calls_per_tile_with_the_body_fused_after(cols, monkeypatch):
    """X @ C.T with 24 centroids: one BLAS call per tile (any width of X), the rest of the
    step (argmax, one-hot sums, counts, row minima) fused after it; the reference's numbers
    with special values, exact ties to the first centroid, and scipy's BLAS on one thread while
    the kernel runs (its chunks already run on every core), restored after."""
    from fusedml.runtime import fused, threads

    rng = np.random.default_rng(cols)  # its own draws: the other tests' data stays as it was
    X = _special(_dyadic((ROWS // 4, cols), rng))
    C = _dyadic((24, cols), rng)
    C[9] = C[3]
    Xm = fm.matrix(X)
    D = -2 * (Xm @ fm.matrix(C).T) + np.sum(C * C, axis=1)
    P = fm.one_hot(fm.argmax(-D, axis=1))
    expr = (P.T @ Xm, fm.sum(P, axis=0), fm.min(D, axis=1))
    assert "np.dot(" in _source(expr[0], "fuse_all")
    blas_threads = []
    serial = threads.serial_scipy_blas

    @contextlib.contextmanager
    def watched():
        with serial():
            blas_threads.append(threads._scipy_openblas_threads()[0]())
            yield

    monkeypatch.setattr(fused, "serial_scipy_blas", watched)
    before = threads._scipy_openblas_threads()[0]()
    with np.errstate(all="ignore"):
        S = -(-2 * (X @ C.T) + np.sum(C * C, axis=1))
    P_np = np.eye(24)[np.argmax(S, axis=1)]
    assert (P_np[:, 3] > 0).any() and not (P_np[:, 9] > 0).any()
    with np.errstate(all="ignore"):
        want = (P_np.T @ X, P_np.sum(axis=0), -S.max(axis=1))
    for mode in ("fuse_all", "cost_based"):
        got = _fused(expr, mode)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(np.reshape(g, w.shape), w, rtol=1e-12, atol=1e-12)
    assert blas_threads and set(blas_threads) == {1}
    assert threads._scipy_openblas_threads()[0]() == before
