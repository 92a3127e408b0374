"""NaN, inf, signed zeros and extreme magnitudes come out of every fusion mode as numpy computes
them: fast-math may reorder sums across cells, never the arithmetic inside one cell."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import fusedml as fm
from fusedml.ir.ops import Op
from fusedml.pipeline import optimize_until

NEG2 = np.full((2000, 50), -2.0)  # large enough that cost_based fuses it
LOGS = np.array([[-2.0, -1.0, 3.0, 0.0, -np.inf, np.inf]])
EXPS = np.array([[800.0, -800.0, 1.0, np.nan, 0.5, 709.0]])
TINY = np.array([[1e-300, -1e-300, 1.0, 1e-100, 0.0, -0.0]])
ZEROS = np.array([[-0.0, 0.0, np.inf, -np.inf, 2.0, -4.0]])
HALF = np.array([[0.5]])

CASES = {  # name: (expression over fm.matrix(data), numpy over data, data)
    "sum(x**2.5 * x**0.5) of negatives": (
        lambda X: fm.sum(X**2.5 * X**0.5), lambda a: np.sum(a**2.5 * a**0.5), NEG2),
    "exp(log(x))": (lambda X: fm.exp(fm.log(X)), lambda a: np.exp(np.log(a)), LOGS),
    "sum(exp(log(x)), axis=1)": (
        lambda X: fm.sum(fm.exp(fm.log(X)), axis=1), lambda a: np.exp(np.log(a)).sum(1), LOGS),
    "exp(x) * exp(-x)": (lambda X: fm.exp(X) * fm.exp(-X), lambda a: np.exp(a) * np.exp(-a), EXPS),
    "x * 1e200 * 1e200": (lambda X: X * 1e200 * 1e200, lambda a: a * 1e200 * 1e200, TINY),
    "x * 1e200 / 1e200": (lambda X: X * 1e200 / 1e200, lambda a: a * 1e200 / 1e200, TINY),
    "1 / (x + 0)": (lambda X: 1 / (X + 0), lambda a: 1 / (a + 0), ZEROS),
    "(-x) ** 0.5": (lambda X: (-X) ** 0.5, lambda a: (-a) ** 0.5, ZEROS),
    "x ** [[0.5]], one exponent": (
        lambda X: -(X ** fm.matrix(HALF)), lambda a: -(a**HALF), -ZEROS),
    "x ** 0.5, one cell, one exponent each": (
        lambda X: -(X[:, 2:3] ** fm.matrix(HALF)), lambda a: -(a[:, 2:3] ** HALF), -ZEROS),
    "x ** 2 and x ** -1 at extremes": (
        lambda X: X**2 + X**-1, lambda a: a**2 + a**-1, np.array([[1e300, 1e-300, -0.0, 0.1]])),
    "minimum/maximum of signed zeros": (
        lambda X: 1 / fm.minimum(X, 0.0) + 1 / fm.maximum(-0.0, X),
        lambda a: 1 / np.minimum(a, 0.0) + 1 / np.maximum(-0.0, a), ZEROS),
    "sign of -0.0 and NaN": (
        lambda X: 1 / fm.sign(X), lambda a: 1 / np.sign(a), np.array([[-0.0, 0.0, np.nan, -3.0]])),
}  # fmt: skip


@pytest.mark.parametrize("mode", fm.FUSION_MODES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_special_values_as_numpy(name, mode):
    build, numpy_value, data = CASES[name]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        want = numpy_value(data)
    with fm.config(dispatch_s=0.0, compile_s=0.0):  # fuse even these small inputs
        got = fm.evaluate(build(fm.matrix(data)), fusion=mode)
    signs = ~np.isnan(want)  # a NaN's sign bit means nothing
    np.testing.assert_array_equal(np.signbit(got)[signs], np.signbit(want)[signs])  # -0.0, -inf
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0, equal_nan=True)


def test_the_cases_ran_as_fused_kernels(fresh_stats):
    with fm.config(dispatch_s=0.0, compile_s=0.0):
        for build, _, data in CASES.values():
            fm.evaluate(build(fm.matrix(data)), fusion="fuse_all")
    stats = fresh_stats()
    assert stats["kernels_executed"] == len(CASES) - 1  # a one-cell result is never fused
    assert stats.get("fused_ops_by_reference", 0) == 0
    fm.reset_stats()
    build, _, data = CASES["sum(x**2.5 * x**0.5) of negatives"]
    fm.evaluate(build(fm.matrix(data)))  # the default mode, default costs: one fused operator
    assert fresh_stats()["kernels_executed"] == 1


def test_csr_special_values_keep_the_annihilation_rule():
    X = sp.csr_array(np.array([[0.0, -2.0, 0.0], [1e-300, 0.0, -np.inf]]))
    dense = X.toarray()
    with np.errstate(all="ignore"):
        literal = dense * np.exp(np.log(dense)) / dense * 1e200 * 1e200  # numpy, in this order
    want = np.where(dense != 0, literal, 0.0)  # a CSR zero annihilates: X * (...) / X is 0
    for mode in fm.FUSION_MODES:
        with fm.config(dispatch_s=0.0, compile_s=0.0):
            got = fm.evaluate(fm.matrix(X) * fm.exp(fm.log(fm.matrix(X))) / X * 1e200 * 1e200,
                              fusion=mode)  # fmt: skip
        got = got.toarray() if sp.issparse(got) else got
        np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True, err_msg=mode)


def test_adding_zero_is_not_simplified_but_adding_negative_zero_is():
    X = fm.matrix(ZEROS)
    ops = lambda e: [n.op for n in optimize_until(e, "rewrite").nodes]  # noqa: E731
    assert Op.ADD in ops(X + 0)  # -0.0 + 0.0 is +0.0
    assert Op.ADD not in ops(X + -0.0)  # x + -0.0 is x for every x, -0.0 included
    assert Op.SUB not in ops(X - 0)  # x - 0.0 is x for every x
    assert Op.SUB in ops(X - -0.0)


def _outer_inputs(factor_value, product_value, density):
    """A dense W, ``density`` non-zero, with factors U, V and a product operand R holding one
    special value each (None: none)."""
    rng = np.random.default_rng(3)
    W = sp.random(300, 280, density=density, format="csr", random_state=1).toarray()
    W[7, :] = W[:, 5] = 0.0  # a row and a column W reads only as 0
    U, V, R = rng.normal(size=(300, 4)), rng.normal(size=(280, 4)), rng.normal(size=(280, 3))
    if factor_value is not None:
        U[7, 1] = factor_value
    if product_value is not None:
        R[5, 2] = product_value
    return W, U, V, R


@pytest.mark.parametrize("factor_value", [None, np.inf, np.nan, 1e200, -1e155])
@pytest.mark.parametrize("product_value", [None, np.inf])
@pytest.mark.parametrize("density", [0.02, 0.9])  # zeros gathered away, or every cell visited
def test_an_outer_driver_skips_its_zeros_only_where_they_add_nothing(
    factor_value, product_value, density
):
    W, U, V, R = _outer_inputs(factor_value, product_value, density)
    w, u, v, r = map(fm.matrix, (W, U, V, R))
    with np.errstate(all="ignore"):  # numpy cell by cell: 0 * inf is NaN in every sum
        Y = W * (U @ V.T)
        wants = [np.sum(W * (U @ V.T) ** 2), (Y[:, :, None] * R[None, :, :]).sum(axis=1),
                 (Y.T[:, :, None] * U[None, :, :3]).sum(axis=1)]  # fmt: skip
    exprs = [fm.sum(w * (u @ v.T) ** 2), (w * (u @ v.T)) @ r, (w * (u @ v.T)).T @ u[:, :3]]
    for expr, want in zip(exprs, wants, strict=True):
        with fm.config(compile_s=0.0, dispatch_s=0.0):
            assert [op.template for op in fm.explain(expr, fusion="fuse_all").operators] == [
                "outer"]  # fmt: skip
            got = fm.evaluate(expr, fusion="fuse_all")
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, equal_nan=True)


@pytest.mark.parametrize("mode", fm.FUSION_MODES)
def test_a_computed_negative_zero_of_a_sparse_result_keeps_its_sign(mode):
    """s / t with s a 1 x 1 CSR value broadcast over a row of -inf: the CSR result holds -0.0
    (stored, as numpy computes it), and X divided by it is -inf where X is positive."""
    X = np.array([[0.125, -0.25, 0.5, 1.0], [-2.0, 4.0, 1.5, 0.75]])
    t = np.array([[-np.inf, -2.0, -np.inf, -1e300]])
    s = sp.csr_array(np.array([[2.5]]))
    with np.errstate(all="ignore"):
        want = X / (2.5 / t)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = fm.evaluate(fm.matrix(X) / (fm.matrix(s) / fm.matrix(t)), fusion=mode)
    assert np.isneginf(want[0, 0])
    np.testing.assert_array_equal(np.asarray(got), want)
