"""The kernels' per-cell functions against numpy's ufuncs on a grid of special values: equal up to
an ulp or two for finite results, and exactly in NaN, +-inf and the sign of zeros."""

import itertools

import numpy as np
import pytest

import fusedml.codegen.cellops as f
from fusedml.ir.ops import ELEMENTWISE_FN, Op

GRID = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 2.5, -2.5, 0.1,
        1e300, -1e300, 1e-300, -1e-300, 5e-324, 709.8, -709.8, 800.0, -800.0]  # fmt: skip
UNARY = {Op.NEG: f.neg, Op.EXP: f.exp, Op.LOG: f.log, Op.ABS: f.fabs, Op.SQRT: f.sqrt,
         Op.SIGN: f.sign, Op.ARCTAN: f.arctan, Op.SIGMOID: f.sigmoid}  # fmt: skip
BINARY = {Op.ADD: f.add, Op.SUB: f.sub, Op.MUL: f.mul, Op.DIV: f.div, Op.MINIMUM: f.minimum,
          Op.MAXIMUM: f.maximum}  # fmt: skip


def assert_same(got, want, what):
    got, want = float(got), float(want)
    if np.isnan(want) or np.isinf(want) or want == 0.0:
        assert repr(got) == repr(want) or (np.isnan(got) and np.isnan(want)), what
    else:
        assert got == pytest.approx(want, rel=5e-16, abs=1e-320), what


@pytest.mark.parametrize("op", sorted(UNARY, key=str))
def test_unary(op):
    with np.errstate(all="ignore"):
        want = ELEMENTWISE_FN[op](np.array(GRID))
    for a, w in zip(GRID, want, strict=True):
        assert_same(UNARY[op](a), w, (op, a))


@pytest.mark.parametrize("op", sorted(BINARY, key=str))
def test_binary(op):
    b = np.array(GRID)
    for a in GRID:
        with np.errstate(all="ignore"):
            want = ELEMENTWISE_FN[op](np.full(b.shape, a), b)
        for y, w in zip(GRID, want, strict=True):
            assert_same(BINARY[op](a, y), w, (op, a, y))


def test_power_with_an_array_exponent_and_with_one_exponent_for_all_cells():
    grid = np.array(GRID)
    with np.errstate(all="ignore"):
        for a, b in itertools.product(GRID, GRID):  # elementwise exponents: pow
            assert_same(f.power(a, b), np.power(np.array([a, a]), np.array([b, b]))[0], (a, b))
        for b in GRID:  # numpy's scalar-exponent loop: sqrt for 0.5, square, reciprocal
            for a, w in zip(GRID, np.power(grid, b), strict=True):
                assert_same(f.scalar_power(a, b), w, (a, b))
