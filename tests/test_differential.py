"""Differential corpus: random expression DAGs through ``fm.evaluate`` vs the numpy oracle."""

from collections import Counter

import numpy as np
from hypothesis import given, settings

import fusedml as fm
from tests import exprgen
from tests.exprgen import check


@settings(max_examples=600)
@given(exprgen.expressions(max_depth=6, allow_sparse=True))
def test_none_matches_numpy_oracle(case):
    tree, leaves = case
    check(tree, leaves)


FUSING = ("fuse_all", "fuse_no_redundancy", "cost_based (no fixed costs)")
STATS = ("fused_ops_executed", "kernels_executed", "fused_ops_by_reference")


def check_counted(tree, leaves, mode, overrides, runs: Counter):
    """``check`` under ``mode``, every fused operator run as a generated kernel (none through the
    reference); adds their number to ``runs[label]``."""
    before = fm.stats()
    with fm.config(**overrides):
        check(tree, leaves, fusion=mode)
    after = fm.stats()
    ran = {counter: after.get(counter, 0) - before.get(counter, 0) for counter in STATS}
    assert ran["kernels_executed"] == ran["fused_ops_executed"], ran
    assert ran["fused_ops_by_reference"] == 0, ran
    runs[mode + (" (no fixed costs)" if overrides else "")] += ran["fused_ops_executed"]


def check_every_mode(tree, leaves, runs: Counter):
    # on these tiny inputs the cost model rightly prefers unfused numpy: also run cost_based
    # without fixed per-operator costs, so that its fused plans are checked too
    for mode in fm.FUSION_MODES:
        check_counted(tree, leaves, mode, {}, runs)
    check_counted(tree, leaves, "cost_based", {"dispatch_s": 0.0, "compile_s": 0.0}, runs)


def assert_fused_operators_ran(runs: Counter, at_least: int):
    """The equality checks were not vacuous: each fusing mode ran fused operators."""
    for label in FUSING:
        assert runs[label] >= at_least, (label, runs)


def test_every_mode_matches_numpy_oracle():
    runs: Counter = Counter()  # fused operators run per mode over this test's own examples

    @settings(max_examples=150)
    @given(exprgen.expressions(max_depth=4, allow_sparse=True))
    def every_mode_matches(case):
        check_every_mode(*case, runs)

    every_mode_matches()
    assert_fused_operators_ran(runs, at_least=25)  # runs seen: 45 to 91 per mode


def test_every_mode_keeps_special_values():
    runs: Counter = Counter()

    @settings(max_examples=60)
    @given(exprgen.special_value_expressions())
    def every_mode_keeps(case):
        check_every_mode(*case, runs)

    every_mode_keeps()
    assert_fused_operators_ran(runs, at_least=10)  # runs seen: 26 to 49 per mode


def test_a_product_term_that_overflows_beside_an_infinite_one():
    """(W * (U @ V.T - X)).T @ U where a row of the last product sums inf and a term
    1.05e299 * -1e300: BLAS's fused multiply-add keeps the sum at inf, a loop that rounds the
    term to -inf first gives NaN (the hand-written wdivmm operator does). Each mode must give
    one of the two, cell by cell, and every other cell as the oracle."""
    X = np.array([[0.126, -0.132, 0.640], [0.105, -0.536, 0.362]])
    W = np.array([[2.0, 1.0, 0.0], [-1.0, -1.0, -2.0]])
    U = np.array([[-np.inf, -1.198], [-1.724, -1e300]])
    V = np.array([[0.126, -0.132], [0.640, 0.105], [-0.536, 0.362]])
    x, w, u, v = (("leaf", k) for k in range(4))
    uv = ("matmul", u, ("T", v))
    tree = ("matmul", ("T", ("bin", "multiply", w, ("bin", "subtract", uv, x))), u)
    before = fm.stats().get("hand_ops_executed", 0)
    check_every_mode(tree, [X, W, U, V], Counter())
    assert fm.stats().get("hand_ops_executed", 0) > before  # the loop that gives NaN ran
