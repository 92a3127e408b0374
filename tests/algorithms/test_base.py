"""The estimators' shared helpers against numpy: the intercept's products with [X, 1] (X never
copied), the one-pass reductions over X, dense and CSR, and the class codes of labels."""

import numpy as np
import pytest
import scipy.sparse as sp
from fusedml.algorithms._base import (
    class_codes,
    coefficients,
    count_nonzero,
    joined,
    linear,
    max_abs,
    max_row_norm,
    scaled,
    total_weight,
    transposed,
)
from hypothesis import given
from hypothesis import strategies as st

import fusedml as fm

RNG = np.random.default_rng(5)
X0 = np.where(RNG.random((40, 3)) < 0.5, RNG.standard_normal((40, 3)), 0.0)
FORMATS = {"dense": lambda X: X, "csr": sp.csr_array}


@fm.jit
def _products(X, w, b, G, intercept):
    return linear(X, w, b), *transposed(X, G, intercept)


def _with_ones(X):
    return np.hstack([X, np.ones((len(X), 1))])


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("intercept", [False, True])
@pytest.mark.parametrize("columns", [None, 2])
def test_intercept_products_are_those_of_the_appended_ones_column(columns, intercept, fmt):
    D = 3 + intercept
    w = RNG.standard_normal(D if columns is None else (D, columns))
    G = RNG.standard_normal(40 if columns is None else (40, columns))
    Xd = _with_ones(X0) if intercept else X0
    assert coefficients(w, 3)[1] is None or intercept
    product, *parts = _products(FORMATS[fmt](X0), *coefficients(w, 3), G, intercept)
    np.testing.assert_allclose(product, Xd @ w, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(joined(parts), Xd.T @ G, rtol=1e-12, atol=1e-12)
    assert joined(parts).shape == w.shape


@pytest.mark.parametrize("fmt", FORMATS)
def test_reductions_equal_numpy(fmt):
    X = FORMATS[fmt](X0 * -3.0)
    assert max_abs(X) == np.max(np.abs(X0 * 3.0))
    assert count_nonzero(X) == np.count_nonzero(X0)
    assert max_abs(FORMATS[fmt](np.zeros((4, 2)))) == 0.0
    np.testing.assert_array_equal(np.asarray(sp.csr_array(scaled(X, 0.5)).todense()), X0 * -1.5)
    assert scaled(X, 1.0) is X
    sw = RNG.random(40)
    assert total_weight(sw, 40) == pytest.approx(np.sum(sw), rel=1e-14)
    assert total_weight(1.0, 40) == 40


def _norm(row):
    """||row||, scaled so that the squares neither under- nor overflow."""
    m = np.max(np.abs(row))
    return m * np.sqrt(np.sum((row / m) ** 2)) if m else 0.0


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("scale", [1.0, 1e-300, 1e300])
@pytest.mark.parametrize("intercept", [False, True])
def test_max_row_norm_is_over_the_rows_with_weight(intercept, scale, fmt):
    sw = np.where(np.arange(40) % 3 == 0, 0.0, 2.0)
    rows = (_with_ones(X0 * scale) if intercept else X0 * scale)[sw > 0]
    got = max_row_norm(FORMATS[fmt](X0 * scale), sw, intercept)
    assert got == pytest.approx(max(_norm(r) for r in rows), rel=1e-14)


def test_lbfgs_runs_scipys_blas_on_one_thread_and_restores_it():
    """scipy's own OpenBLAS is on one thread while L-BFGS-B runs (its workers would spin through
    the kernels), back at its count afterwards, also after nested use and an error; numpy's
    OpenBLAS is never touched."""
    from fusedml.algorithms import _base
    from threadpoolctl import ThreadpoolController

    libs = _base._scipy_openblas()
    if not libs:
        pytest.skip("scipy has no OpenBLAS of its own here")
    counts = lambda: [c.get_num_threads() for c in libs]  # noqa: E731
    paths = {c.filepath for c in libs}
    others = [c for c in ThreadpoolController().lib_controllers if c.filepath not in paths]
    before, before_others = counts(), [c.get_num_threads() for c in others]
    seen, seen_others = [], []

    def objective(x):
        seen.append(counts())
        seen_others.append([c.get_num_threads() for c in others])
        with _base._scipy_blas_one_thread():  # nested: still one thread, restored only once
            seen.append(counts())
        return float(x @ x), 2 * x

    result = _base.lbfgs(objective, np.ones(3), max_iter=5, tol=0.0)
    np.testing.assert_allclose(result.x, 0.0, atol=1e-8)
    assert seen and all(c == [1] * len(libs) for c in seen)
    assert counts() == before
    with pytest.raises(RuntimeError), _base._scipy_blas_one_thread():
        raise RuntimeError("inside the block")
    assert counts() == before
    assert all(c == before_others for c in seen_others)


LABEL_DTYPES = ["int8", "uint8", "int32", "int64", "uint64", "float32", "float64"]


@given(
    st.sampled_from(LABEL_DTYPES),
    st.lists(st.integers(-(2**17), 2**17), min_size=1, max_size=40),
    st.integers(0, 2**64 - 2**18),
    st.booleans(),
)
def test_class_codes_are_numpy_s_unique_classes_and_inverse(dtype, values, base, negative_zero):
    info = np.iinfo(dtype) if dtype[0] in "iu" else None
    if info is not None:  # labels within the dtype's range, near ``base`` for the wide ones
        start = min(max(base + info.min, info.min), info.max - 2**18) if info.bits == 64 else 0
        values = [min(max(start + v, info.min), info.max) for v in values]
    y = np.array(values).astype(dtype) if info is None else np.array(values, dtype=dtype)
    if negative_zero and info is None:
        y = np.where(y == 0, -0.0, y).astype(dtype)  # the zero class keeps its first sign
    classes, codes = class_codes(y)
    want_classes, want_codes = np.unique(y, return_inverse=True)
    assert classes.dtype == want_classes.dtype
    np.testing.assert_array_equal(classes, want_classes)
    np.testing.assert_array_equal(codes, want_codes)
    if info is None:
        np.testing.assert_array_equal(np.signbit(classes), np.signbit(want_classes))


def test_class_codes_of_labels_that_are_not_small_integers():
    for y in (np.array(["b", "a", "b"]), np.array([0, 70_000]), np.array([True, False])):
        classes, codes = class_codes(y)
        want_classes, want_codes = np.unique(y, return_inverse=True)
        np.testing.assert_array_equal(classes, want_classes)
        np.testing.assert_array_equal(codes, want_codes)
