"""The reference interpreter, op by op, on dense and CSR inputs against numpy/scipy."""

import numpy as np
import pytest
import scipy.sparse as sp

import fusedml as fm
from tests.formats import FORMATS, csr

RNG = np.random.default_rng(7)
DENSE = RNG.normal(size=(6, 5))  # no zeros
VALUES = sp.random(
    6, 5, density=0.4, random_state=3, data_rvs=RNG.standard_normal
).toarray()  # 60 % zeros, which CSR skips
OTHER_OPERANDS = {"row": RNG.normal(size=(1, 5)), "col": RNG.normal(size=(6, 1)), "scalar": 2.0}


def ev(expr):
    return fm.evaluate(expr, fusion="none")


def dense_of(x):
    return x.toarray() if sp.issparse(x) else np.asarray(x)


@pytest.mark.parametrize("to_format", FORMATS)
@pytest.mark.parametrize(
    ("name", "sparse_safe"),
    [("negative", True), ("abs", True), ("sqrt", True), ("sign", True), ("exp", False),
     ("log", False), ("sigmoid", False), ("arctan", True)],
)  # fmt: skip
def test_unary(to_format, name, sparse_safe):
    x = to_format(VALUES)
    got = ev(getattr(fm, name)(fm.matrix(x)))
    with np.errstate(all="ignore"):
        fn = {"sigmoid": lambda x: 1 / (1 + np.exp(-x))}.get(name, getattr(np, name, None))
        want = fn(VALUES)
    assert sp.issparse(got) == (sp.issparse(x) and sparse_safe)
    np.testing.assert_allclose(dense_of(got), want, rtol=1e-15, equal_nan=True)


@pytest.mark.parametrize("left", FORMATS)
@pytest.mark.parametrize("right", [*FORMATS, *OTHER_OPERANDS])
@pytest.mark.parametrize("name", ["add", "multiply", "divide", "minimum", "greater", "power"])
def test_binary_against_scipy_and_numpy(left, right, name):
    a = left(VALUES)
    b = OTHER_OPERANDS[right] if isinstance(right, str) else right(VALUES)
    got = ev(getattr(fm, name)(fm.matrix(a), b if right == "scalar" else fm.matrix(b)))
    with np.errstate(all="ignore"):
        want = getattr(np, name)(dense_of(a), dense_of(b)).astype(np.float64)
    if name in ("multiply", "divide") and sp.issparse(a):
        want[dense_of(a) == 0] = 0.0
    if name == "multiply" and sp.issparse(b):
        want[dense_of(b) == 0] = 0.0
    np.testing.assert_allclose(dense_of(got), want, rtol=1e-15, equal_nan=True)
    if name == "multiply" and sp.issparse(a) and right in FORMATS:
        scipy_result = sp.csr_array(a).multiply(b)  # scipy's own sparse semantics agree
        np.testing.assert_allclose(dense_of(got), dense_of(scipy_result), equal_nan=True)


def test_csr_zeros_annihilate_inf_and_nan_stored_or_not():
    X = sp.csr_array(np.array([[1.0, 2.0, 0.0], [0.0, 3.0, 4.0]]))
    X.data[0] = 0.0  # a stored zero behaves like a structural one
    Y = np.array([[np.inf, 1.0, np.nan], [np.nan, np.inf, 2.0]])
    got = ev(fm.matrix(X) * Y)
    assert sp.issparse(got)
    np.testing.assert_array_equal(got.toarray(), [[0.0, 2.0, 0.0], [0.0, np.inf, 8.0]])
    np.testing.assert_array_equal(
        ev(fm.matrix(X) / 0.0).toarray(), [[0, np.inf, 0], [0, np.inf, np.inf]]
    )
    np.testing.assert_array_equal(ev(fm.matrix(X) @ np.array([np.inf, 1.0, 1.0])), [2.0, 7.0])
    dense = ev(fm.matrix(X.toarray()) * Y)  # the same values dense follow numpy: 0 * inf = nan
    assert np.isnan(dense[0, 0]) and np.isnan(dense[0, 2])


@pytest.mark.parametrize("to_format", FORMATS)
@pytest.mark.parametrize("name", ["sum", "min", "max", "mean"])
@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_aggregates(to_format, name, axis, keepdims):
    values = VALUES.copy()
    if name in ("min", "max"):  # a NaN among the non-zeros wins over CSR's implicit zeros
        values.flat[np.flatnonzero(values)[0]] = np.nan
    got = ev(getattr(fm, name)(fm.matrix(to_format(values)), axis=axis, keepdims=keepdims))
    want = getattr(np, name)(values, axis=axis, keepdims=keepdims)
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-13, equal_nan=True)


@pytest.mark.parametrize("axis", [0, 1])
def test_row_and_column_sums_keep_numpy_s_special_values_and_zero_signs(axis):
    """Dense sums along an axis run as products with ones: the same NaN, infinities, overflow
    and signed zeros as numpy's sum, on narrow and wide shapes."""
    rng = np.random.default_rng(5)
    for shape in [(40, 3), (3, 40), (1, 7), (7, 1), (0, 4), (4, 0), (300, 64)]:
        a = rng.normal(size=shape)
        if a.size:
            a.flat[rng.integers(0, a.size, 4)] = [np.nan, np.inf, -np.inf, 1e308]
        b = np.full(shape, -0.0)
        ints = rng.integers(-3, 4, size=shape)
        for values in (a, b, np.abs(a) * 1e300, ints):
            got = ev(fm.sum(fm.matrix(values), axis=axis, keepdims=True))
            want = np.sum(values, axis=axis, keepdims=True).astype(np.float64)
            np.testing.assert_allclose(got, want, rtol=1e-13, equal_nan=True)
            signed = ~np.isnan(want)  # a NaN's sign means nothing
            np.testing.assert_array_equal(np.signbit(got)[signed], np.signbit(want)[signed])


@pytest.mark.parametrize("to_format", FORMATS)
def test_argmax_first_maximum_and_nan(to_format):
    a = np.array([[1.0, 3.0, 3.0], [0.0, 0.0, 0.0], [-1.0, np.nan, 5.0], [-2.0, 0.0, -1.0]])
    x = to_format(a)
    got = ev(fm.argmax(fm.matrix(x), axis=1))
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np.argmax(a, axis=1))
    np.testing.assert_array_equal(ev(fm.argmax(fm.matrix(x), axis=0)), np.argmax(a, axis=0))


@pytest.mark.parametrize("left", FORMATS)
@pytest.mark.parametrize("right", FORMATS)
def test_matmul_formats(left, right):
    a, b = left(VALUES), right(VALUES.T)
    got = ev(fm.matrix(a) @ fm.matrix(b))
    assert sp.issparse(got) == (sp.issparse(a) and sp.issparse(b))
    np.testing.assert_allclose(dense_of(got), dense_of(a) @ dense_of(b), rtol=1e-13)
    v = RNG.normal(size=5)
    np.testing.assert_allclose(ev(fm.matrix(a) @ v), dense_of(a) @ v, rtol=1e-13)
    np.testing.assert_allclose(ev(v @ fm.matrix(a).T), v @ dense_of(a).T, rtol=1e-13)


@pytest.mark.parametrize("to_format", FORMATS)
def test_structure_ops(to_format):
    x = to_format(VALUES)
    X = fm.matrix(x)
    assert sp.issparse(ev(X.T)) == sp.issparse(x)
    np.testing.assert_array_equal(dense_of(ev(X.T)), dense_of(x).T)
    np.testing.assert_array_equal(dense_of(ev(X[:, 1:3])), dense_of(x)[:, 1:3])
    np.testing.assert_array_equal(ev(X[:, -1]), dense_of(x)[:, -1])
    stacked = ev(fm.hstack([X, X[:, :2]]))
    assert sp.issparse(stacked) == sp.issparse(x)
    np.testing.assert_array_equal(dense_of(stacked), np.hstack([dense_of(x), dense_of(x)[:, :2]]))
    mixed = ev(fm.hstack([X, DENSE]))
    assert not sp.issparse(mixed)


def test_edge_shapes_empty_one_row_all_zero():
    for a in (np.ones((0, 3)), np.ones((1, 3)), np.ones((3, 1)), np.zeros((4, 4))):
        for x in (to_format(a) for to_format in FORMATS):
            X = fm.matrix(x)
            np.testing.assert_allclose(ev(fm.sum(X * 2, axis=0)), (a * 2).sum(axis=0))
            np.testing.assert_allclose(ev(fm.exp(X) @ np.ones(a.shape[1])), np.exp(a).sum(axis=1))
            assert ev(fm.sum(X.T @ X)) == pytest.approx(np.sum(a.T @ a))
    with np.errstate(all="ignore"):
        assert np.isnan(ev(fm.mean(fm.matrix(np.ones((0, 3))))))


def test_where_and_comparisons():
    a, b = DENSE, -DENSE
    cond = fm.matrix(csr(VALUES)) > 0
    got = ev(fm.where(cond, a, b))
    np.testing.assert_array_equal(got, np.where(VALUES > 0, a, b))
    eq = ev(fm.matrix(csr(VALUES)) == 0)  # f(0, 0) != 0: the result is dense
    assert not sp.issparse(eq)
    np.testing.assert_array_equal(eq, (VALUES == 0).astype(float))


def test_outputs_never_alias_inputs():
    a = np.ones((3, 2))
    out = ev(fm.matrix(a) * 1)  # rewritten to the input itself
    out[0, 0] = 5.0
    assert a[0, 0] == 1.0
    col = ev(fm.matrix(a)[:, 0])
    col[0] = 7.0
    assert a[0, 0] == 1.0
