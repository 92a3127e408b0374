"""The front end follows numpy's shapes for every op, checked against numpy on zero arrays."""

import itertools

import numpy as np
import pytest

import fusedml as fm

SHAPES = [(), (1,), (3,), (1, 3), (2, 1), (2, 3), (0, 3), (3, 0)]


def operand(shape):
    return np.zeros(shape) if shape else 0.0


@pytest.mark.parametrize(("a", "b"), list(itertools.product(SHAPES, SHAPES)))
def test_broadcasting_shapes_match_numpy(a, b):
    try:
        want = np.broadcast_shapes(a, b)
    except ValueError:
        with pytest.raises(fm.ShapeError):
            fm.matrix(np.zeros(a)) + fm.matrix(np.zeros(b))
        return
    got = fm.multiply(fm.matrix(np.zeros(a)), fm.matrix(np.zeros(b)))
    assert got.shape == want
    value = fm.evaluate(got, fusion="none")
    assert np.shape(value) == want


@pytest.mark.parametrize(("a", "b"), list(itertools.product(SHAPES, SHAPES)))
def test_matmul_shapes_match_numpy(a, b):
    if not a or not b:
        with pytest.raises(fm.ShapeError):
            fm.matrix(np.zeros(a)) @ fm.matrix(np.zeros(b))
        return
    try:
        want = np.matmul(np.zeros(a), np.zeros(b))
    except ValueError:
        with pytest.raises(fm.ShapeError):
            fm.matrix(np.zeros(a)) @ fm.matrix(np.zeros(b))
        return
    got = fm.evaluate(fm.matrix(np.zeros(a)) @ fm.matrix(np.zeros(b)), fusion="none")
    assert np.shape(got) == want.shape


@pytest.mark.parametrize("shape", [s for s in SHAPES if s])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduction_shapes_match_numpy(shape, axis, keepdims):
    a = np.ones(shape)
    try:
        want = np.sum(a, axis=axis, keepdims=keepdims)
    except np.exceptions.AxisError:
        with pytest.raises(np.exceptions.AxisError):
            fm.sum(fm.matrix(a), axis=axis, keepdims=keepdims)
        return
    expr = fm.sum(fm.matrix(a), axis=axis, keepdims=keepdims)
    assert expr.shape == np.shape(want)
    np.testing.assert_array_equal(fm.evaluate(expr, fusion="none"), want)
    np.testing.assert_array_equal(
        fm.evaluate(fm.matrix(a).sum(axis, keepdims=keepdims), fusion="none"), want
    )


def test_transpose_hstack_and_columns_follow_numpy():
    a, v = np.arange(6.0).reshape(2, 3), np.arange(3.0)
    A, V = fm.matrix(a), fm.matrix(v)
    assert V.T.shape == (3,) and A.T.shape == (3, 2)
    np.testing.assert_array_equal(fm.evaluate(fm.hstack([V, V]), fusion="none"), np.hstack([v, v]))
    both = fm.evaluate(fm.hstack([A, A[:, :1]]), fusion="none")
    np.testing.assert_array_equal(both, np.hstack([a, a[:, :1]]))
    assert A[:, 5:].shape == (2, 0) and A[:, -1].shape == (2,)
    with pytest.raises(fm.ShapeError, match="all 1-D or all 2-D"):
        fm.hstack([A, V])


def test_numpy_ufuncs_and_reverse_operators_stay_lazy():
    a = np.arange(1.0, 7.0).reshape(2, 3)
    A = fm.matrix(a)
    for expr, want in [
        (np.exp(A), np.exp(a)), (a * A, a * a), (2 - A, 2 - a), (1 / A, 1 / a),
        (2**A, 2**a), (a @ A.T, a @ a.T), (-A, -a), (abs(-A), a),
        (np.maximum(A, 3), np.maximum(a, 3)), (A >= 3, (a >= 3).astype(float)),
    ]:  # fmt: skip
        assert isinstance(expr, fm.Expr)
        np.testing.assert_allclose(fm.evaluate(expr, fusion="none"), want)
    assert np.sum(A).shape == ()  # numpy's np.sum calls Expr.sum
    np.testing.assert_allclose(fm.evaluate(np.sum(A, axis=0), fusion="none"), a.sum(axis=0))


def test_scalars_alone_compute_eagerly_like_numpy():
    assert fm.exp(0.0) == 1.0 and isinstance(fm.exp(0.0), float)
    assert fm.maximum(2, 3) == 3.0
    assert fm.where(0.0, 1.0, 2.0) == 2.0
    assert fm.sum(4.0) == 4.0
