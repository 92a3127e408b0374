"""Bad input is refused when the expression is built, with messages naming the operands."""

import numpy as np
import pytest
import scipy.sparse as sp

import fusedml as fm


def test_shape_mismatch_names_both_shapes():
    X, Y = fm.matrix(np.ones((3, 4))), fm.matrix(np.ones((5, 4)))
    with pytest.raises(fm.ShapeError, match=r"\(3, 4\) and \(5, 4\)"):
        X + Y
    with pytest.raises(fm.ShapeError, match=r"\(3, 4\) and \(5, 4\)"):
        X @ Y
    with pytest.raises(ValueError, match=r"\(3, 4\) and \(3,\)"):  # ShapeError is a ValueError
        X * np.ones(3)
    with pytest.raises(fm.ShapeError, match="same number of rows"):
        fm.hstack([X, Y])
    with pytest.raises(fm.ShapeError, match="scalar"):
        X @ 2.0


def test_non_numeric_and_high_dimensional_input():
    with pytest.raises(TypeError, match="unsupported dtype"):
        fm.matrix(np.array(["a", "b"]))
    with pytest.raises(TypeError, match="unsupported dtype"):
        fm.matrix(np.ones(3, dtype=complex))
    with pytest.raises(TypeError, match="unsupported dtype"):
        fm.matrix(np.array([object(), object()]))
    with pytest.raises(ValueError, match="3-D"):
        fm.matrix(np.ones((2, 2, 2)))
    with pytest.raises(TypeError, match="cannot use a str"):
        fm.matrix(np.ones(2)) + "x"
    with pytest.raises(TypeError, match="unsupported dtype"):
        fm.matrix(sp.csr_array(np.ones((2, 2), dtype=complex)))


def test_unknown_fusion_mode_everywhere():
    e = fm.sum(fm.matrix(np.ones(3)))
    with pytest.raises(ValueError, match="unknown fusion mode 'fast'"):
        fm.evaluate(e, fusion="fast")
    with pytest.raises(ValueError, match="unknown fusion mode"):
        fm.config(fusion="fast")
    with pytest.raises(ValueError, match="unknown fusion mode"):
        fm.explain(e, fusion="Cost_Based")


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.bool_, np.float32, np.uint8])
def test_int_bool_float32_inputs_compute_in_float64(dtype):
    a = (np.arange(12).reshape(3, 4) % 3).astype(dtype)
    got = fm.evaluate(fm.matrix(a) / 2 + fm.sum(fm.matrix(a), axis=0), fusion="none")
    want = a.astype(np.float64) / 2 + a.astype(np.float64).sum(axis=0)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, want)
    sparse = fm.evaluate(fm.matrix(sp.csr_array(a)) * 0.5, fusion="none")
    assert sparse.dtype == np.float64
    np.testing.assert_array_equal(sparse.toarray(), a.astype(np.float64) * 0.5)


def test_empty_min_max_argmax_raise_like_numpy_at_build_time():
    empty = fm.matrix(np.ones((0, 3)))
    with pytest.raises(ValueError, match="zero-size array"):
        fm.min(empty)
    with pytest.raises(ValueError, match="zero-size array"):
        fm.max(empty, axis=0)
    assert fm.evaluate(fm.max(empty, axis=1), fusion="none").shape == (0,)
    with pytest.raises(ValueError, match="zero-size array"):
        fm.argmax(fm.matrix(np.ones((3, 0))), axis=1)


def test_indexing_and_axis_errors():
    X = fm.matrix(np.ones((3, 4)))
    with pytest.raises(IndexError, match="column selection"):
        X[0]
    with pytest.raises(IndexError, match=r"step 1"):
        X[:, ::2]
    with pytest.raises(IndexError, match="out of bounds"):
        X[:, 4]
    with pytest.raises(np.exceptions.AxisError):
        fm.sum(X, axis=2)
    with pytest.raises(ValueError, match="argmax"):
        fm.argmax(fm.matrix(np.ones(3)))


def test_one_hot_takes_only_argmax_labels():
    """fm.one_hot(labels) needs labels in range by construction: those of a 1-D argmax."""
    s = np.array([[1.0, 3.0, 3.0], [np.nan, 2.0, np.inf]])
    S = fm.matrix(s)
    got = fm.evaluate(fm.one_hot(fm.argmax(S, axis=1), 3))
    np.testing.assert_array_equal(got, np.eye(3)[[1, 0]])
    got = fm.evaluate(fm.one_hot(fm.argmax(S, axis=0)))  # argmax along columns: np.eye(rows)
    np.testing.assert_array_equal(got, np.eye(2)[np.argmax(s, axis=0)])
    for labels in (fm.argmax(S, axis=1, keepdims=True), fm.sum(S, 1)):
        with pytest.raises(ValueError, match=r"labels of fm\.argmax"):
            fm.one_hot(labels)
    with pytest.raises(ValueError, match="num_classes=4"):
        fm.one_hot(fm.argmax(S, axis=1), 4)


def test_lazy_expressions_refuse_implicit_evaluation():
    X = fm.matrix(np.ones((2, 2)))
    with pytest.raises(TypeError, match="truth value"):
        bool(X > 0)
    with pytest.raises(TypeError, match=r"fm\.evaluate"):
        np.asarray(X)
    with pytest.raises(TypeError, match=r"fm\.evaluate"):
        float(fm.sum(X))


def test_masked_arrays_are_refused_not_unmasked():
    masked = np.ma.array([1.0, 2.0, 3.0], mask=[0, 1, 0])
    with pytest.raises(TypeError, match=r"masked arrays.*filled"):
        fm.sum(masked)
    with pytest.raises(TypeError, match="masked arrays"):
        fm.jit(lambda x: fm.sum(x))(masked)
    unmasked = np.ma.array([1.0, 2.0, 3.0])  # nothing hidden: the values are the data
    assert fm.evaluate(fm.sum(unmasked)) == np.sum(unmasked)


def test_python_ints_beyond_int64_become_floats_as_in_numpy():
    a = np.array([1.0, -2.0])
    np.testing.assert_array_equal(fm.evaluate(fm.matrix(a) * 2**70), a * 2**70)
    assert fm.jit(lambda x, s: fm.sum(x) * s)(a, 2**70) == np.sum(a) * 2**70
    with pytest.raises(OverflowError):  # numpy: "int too large to convert to float"
        fm.matrix(a) * 10**400


def test_numpy_ufuncs_without_counterpart_say_what_to_use():
    X = fm.matrix(np.ones((2, 2)))
    assert isinstance(np.arctan(X), fm.Expr)  # those with a counterpart stay lazy
    with pytest.raises(TypeError, match=r"np\.tanh cannot be applied.*fm\.evaluate"):
        np.tanh(X)
    with pytest.raises(TypeError, match=r"np\.add\.reduce cannot"):
        np.add.reduce(X)
    with pytest.raises(TypeError, match=r"np\.exp\(\.\.\., where=\.\.\.\)"):
        np.exp(X, where=True)
