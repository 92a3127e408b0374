"""The reference interpreter, op by op, on dense and CSR inputs against numpy/scipy."""

import numpy as np
import pytest
import scipy.sparse as sp

import fusedml as fm

RNG = np.random.default_rng(7)
DENSE = RNG.normal(size=(6, 5))
SPARSE = sp.random(6, 5, density=0.4, format="csr", random_state=3, data_rvs=RNG.standard_normal)
INPUTS = {"dense": DENSE, "csr": SPARSE}


def ev(expr):
    return fm.evaluate(expr, fusion="none")


def dense_of(x):
    return x.toarray() if sp.issparse(x) else np.asarray(x)


@pytest.mark.parametrize("fmt", ["dense", "csr"])
@pytest.mark.parametrize(
    ("name", "sparse_safe"),
    [("negative", True), ("abs", True), ("sqrt", True), ("sign", True), ("exp", False),
     ("log", False), ("sigmoid", False), ("arctan", True)],
)  # fmt: skip
def test_unary(fmt, name, sparse_safe):
    got = ev(getattr(fm, name)(fm.matrix(INPUTS[fmt])))
    with np.errstate(all="ignore"):
        fn = {"sigmoid": lambda x: 1 / (1 + np.exp(-x))}.get(name, getattr(np, name, None))
        want = fn(dense_of(INPUTS[fmt]))
    assert sp.issparse(got) == (fmt == "csr" and sparse_safe)
    np.testing.assert_allclose(dense_of(got), want, rtol=1e-15, equal_nan=True)


@pytest.mark.parametrize("left", ["dense", "csr"])
@pytest.mark.parametrize("right", ["dense", "csr", "row", "col", "scalar"])
@pytest.mark.parametrize("name", ["add", "multiply", "divide", "minimum", "greater", "power"])
def test_binary_against_scipy_and_numpy(left, right, name):
    a = INPUTS[left]
    b = {"row": RNG.normal(size=(1, 5)), "col": RNG.normal(size=(6, 1)), "scalar": 2.0}.get(
        right, INPUTS.get(right)
    )
    got = ev(getattr(fm, name)(fm.matrix(a), b if right == "scalar" else fm.matrix(b)))
    with np.errstate(all="ignore"):
        want = getattr(np, name)(dense_of(a), dense_of(b)).astype(np.float64)
    if name in ("multiply", "divide") and left == "csr":
        want[dense_of(a) == 0] = 0.0
    if name == "multiply" and right == "csr":
        want[dense_of(b) == 0] = 0.0
    np.testing.assert_allclose(dense_of(got), want, rtol=1e-15, equal_nan=True)
    if name == "multiply" and left == "csr" and right in ("dense", "csr"):
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


@pytest.mark.parametrize("fmt", ["dense", "csr"])
@pytest.mark.parametrize("name", ["sum", "min", "max", "mean"])
@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_aggregates(fmt, name, axis, keepdims):
    data = INPUTS[fmt].copy()
    if fmt == "csr":
        data.data[0] = np.nan if name in ("min", "max") else data.data[0]
    got = ev(getattr(fm, name)(fm.matrix(data), axis=axis, keepdims=keepdims))
    want = getattr(np, name)(dense_of(data), axis=axis, keepdims=keepdims)
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-13, equal_nan=True)


@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_argmax_first_maximum_and_nan(fmt):
    a = np.array([[1.0, 3.0, 3.0], [0.0, 0.0, 0.0], [-1.0, np.nan, 5.0], [-2.0, 0.0, -1.0]])
    x = sp.csr_array(a) if fmt == "csr" else a
    got = ev(fm.argmax(fm.matrix(x), axis=1))
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np.argmax(a, axis=1))
    np.testing.assert_array_equal(ev(fm.argmax(fm.matrix(x), axis=0)), np.argmax(a, axis=0))


@pytest.mark.parametrize("left", ["dense", "csr"])
@pytest.mark.parametrize("right", ["dense", "csr"])
def test_matmul_formats(left, right):
    a, b = INPUTS[left], INPUTS[right].T
    got = ev(fm.matrix(a) @ fm.matrix(b))
    assert sp.issparse(got) == (left == right == "csr")
    np.testing.assert_allclose(dense_of(got), dense_of(a) @ dense_of(b), rtol=1e-13)
    v = RNG.normal(size=5)
    np.testing.assert_allclose(ev(fm.matrix(a) @ v), dense_of(a) @ v, rtol=1e-13)
    np.testing.assert_allclose(ev(v @ fm.matrix(a).T), v @ dense_of(a).T, rtol=1e-13)


@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_structure_ops(fmt):
    x = INPUTS[fmt]
    X = fm.matrix(x)
    assert sp.issparse(ev(X.T)) == (fmt == "csr")
    np.testing.assert_array_equal(dense_of(ev(X.T)), dense_of(x).T)
    np.testing.assert_array_equal(dense_of(ev(X[:, 1:3])), dense_of(x)[:, 1:3])
    np.testing.assert_array_equal(ev(X[:, -1]), dense_of(x)[:, -1])
    stacked = ev(fm.hstack([X, X[:, :2]]))
    assert sp.issparse(stacked) == (fmt == "csr")
    np.testing.assert_array_equal(dense_of(stacked), np.hstack([dense_of(x), dense_of(x)[:, :2]]))
    mixed = ev(fm.hstack([X, DENSE]))
    assert not sp.issparse(mixed)


def test_edge_shapes_empty_one_row_all_zero():
    for a in (np.ones((0, 3)), np.ones((1, 3)), np.ones((3, 1)), np.zeros((4, 4))):
        for x in (a, sp.csr_array(a)):
            X = fm.matrix(x)
            np.testing.assert_allclose(ev(fm.sum(X * 2, axis=0)), (a * 2).sum(axis=0))
            np.testing.assert_allclose(ev(fm.exp(X) @ np.ones(a.shape[1])), np.exp(a).sum(axis=1))
            assert ev(fm.sum(X.T @ X)) == pytest.approx(np.sum(a.T @ a))
    with np.errstate(all="ignore"):
        assert np.isnan(ev(fm.mean(fm.matrix(np.ones((0, 3))))))


def test_where_and_comparisons():
    a, b = DENSE, -DENSE
    cond = fm.matrix(SPARSE) > 0
    got = ev(fm.where(cond, a, b))
    np.testing.assert_array_equal(got, np.where(SPARSE.toarray() > 0, a, b))
    eq = ev(fm.matrix(SPARSE) == 0)  # f(0, 0) != 0: the result is dense
    assert not sp.issparse(eq)
    np.testing.assert_array_equal(eq, (SPARSE.toarray() == 0).astype(float))


def test_outputs_never_alias_inputs():
    a = np.ones((3, 2))
    out = ev(fm.matrix(a) * 1)  # rewritten to the input itself
    out[0, 0] = 5.0
    assert a[0, 0] == 1.0
    col = ev(fm.matrix(a)[:, 0])
    col[0] = 7.0
    assert a[0, 0] == 1.0
