"""Compressed matrices as a member of the format axis: their operations on column groups and
every fusion mode over compressed leaves, against numpy on the decompressed data."""

from collections import Counter

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings

import fusedml as fm
from fusedml.formats import COMPRESSED, Format
from fusedml.formats import compressed_kernels as kernels
from fusedml.formats import compressed_ops as ops
from tests import cla, exprgen

SPECIAL = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e300, -1e-300, 2.5])


def sample(n, m, seed, special=False):
    """Low-cardinality data with constant, all-zero and dominant-value columns."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-2, 3, size=(n, m)).astype(float)
    if m > 1:
        a[:, 1] = 7.0
    if m > 2:
        a[:, 2] = 0.0
        a[rng.random(n) < 0.2, 2] = 3.0
    if special:
        mask = rng.random((n, m)) < 0.15
        a[mask] = rng.choice(SPECIAL, size=int(mask.sum()))
    return a


def same(got, want):
    """Equal up to reassociated sums; NaN and infinities at the same places."""
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    assert got.shape == want.shape
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(np.isinf(got), np.isinf(want))
    finite = np.isfinite(want)
    assert np.array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)])
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-12, atol=1e-300)


SHAPES = [(0, 3), (1, 4), (40, 1), (60, 6)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("special", [False, True])
def test_group_operations_match_numpy(shape, special):
    rng = np.random.default_rng(7)
    for seed in range(4):
        a = sample(*shape, seed, special)
        x = cla.compressed(a, seed)
        assert np.array_equal(x.decompress().view(np.int64), a.view(np.int64))
        b = rng.standard_normal((shape[1], 3))
        c = rng.standard_normal((2, shape[0]))
        with np.errstate(all="ignore"):
            same(ops.right_matmul(x, b), a @ b)
            same(ops.left_matmul(c, x), c @ a)
            for how, f in (("sum", np.sum), ("min", np.min), ("max", np.max)):
                if a.size or how == "sum":
                    same(ops.full_reduce(x, how), f(a))
                if shape[0] or how == "sum":
                    same(ops.col_reduce(x, how), f(a, axis=0, keepdims=True))
                if shape[1] or how == "sum":
                    same(ops.row_reduce(x, how), f(a, axis=1, keepdims=True))
            mapped = ops.map_values(x, lambda v: np.exp(v) * 2 - 1)
            same(mapped.decompress(), np.exp(a) * 2 - 1)


def test_format_member_and_results():
    a = sample(30, 5, 1)
    x = cla.compressed(a, 1)
    before = x.decompress()
    assert Format.of(x) is COMPRESSED
    e = fm.matrix(x)
    assert e.node.meta.format is COMPRESSED
    assert (2 * e + 1).node.meta.format is COMPRESSED  # scalar-only: stays compressed
    assert (e * e).node.meta.format is COMPRESSED
    assert (e + fm.matrix(a)).node.meta.format is Format.DENSE
    got = fm.evaluate(fm.sum(2 * e + 1, axis=0), fusion="none")
    same(got, (2 * a + 1).sum(axis=0, keepdims=True).reshape(-1))
    for mode in fm.FUSION_MODES:
        out = fm.evaluate(e * 3, fusion=mode)  # compressed in, compressed out (as CSR)
        assert isinstance(out, fm.CompressedMatrix)
        assert out.codes[0] is x.codes[0]  # the same codes, new dictionaries
        same(out.decompress(), a * 3)
    assert isinstance(fm.evaluate(fm.sum(e * 3, axis=1), fusion="none"), np.ndarray)
    assert np.array_equal(x.decompress().view(np.int64), before.view(np.int64))


def test_indexing_by_rows_and_all_or_no_columns():
    a = sample(20, 4, 3)
    x = cla.compressed(a, 3)
    np.testing.assert_array_equal(x[2:9, :].decompress(), a[2:9])
    np.testing.assert_array_equal(x[[3, 1], 0:4].decompress(), a[[3, 1]])
    assert x[0:0, 0:0].shape == (0, 0) and x[5:7, 2:2].shape == (2, 0)
    assert x.T[0:0, 0:0].shape == (0, 0)
    np.testing.assert_array_equal(x.T[:, 4:9].decompress(), a[4:9].T)
    for key in [(slice(None), slice(0, 2)), (slice(None), 1), (slice(None), slice(None, None, -1))]:
        with pytest.raises(TypeError, match="all"):
            x[key]


def to_compressed(a):
    return cla.compressed(np.asarray(a), seed=int(np.asarray(a).size))


MODES = [(mode, {}) for mode in fm.FUSION_MODES]
MODES.append(("cost_based", {"dispatch_s": 0.0, "compile_s": 0.0}))  # tiny inputs fused too


def corpus_runs(tree, leaves, runs: Counter) -> None:
    """The case in every fusion mode with every dense 2-D leaf compressed."""
    exprgen.check_in_modes(
        tree, leaves, MODES, COMPRESSED, runs, "compressed driven", dense=to_compressed
    )


def test_differential_corpus_with_compressed_leaves():
    runs: Counter = Counter()

    # dense leaves only (each 2-D one is compressed; CSR leaves are the CSR tests' business)
    @settings(max_examples=40, deadline=None)
    @given(exprgen.expressions(max_depth=4, allow_sparse=False))
    def corpus(case):
        corpus_runs(*case, runs)

    corpus()
    assert runs["fused"] >= 10 and runs["compressed driven"] >= 3, runs


def test_special_values_with_compressed_leaves():
    runs: Counter = Counter()

    @settings(max_examples=15, deadline=None)
    @given(exprgen.special_value_expressions())
    def corpus(case):
        corpus_runs(*case, runs)

    corpus()
    assert runs["fused"] >= 5 and runs["compressed driven"] >= 3, runs


@pytest.mark.parametrize("mode", ["fuse_all", "cost_based"])
def test_every_template_runs_a_compressed_driver(mode, fresh_stats):
    rng = np.random.default_rng(0)
    A = sample(300, 40, 3)
    C = cla.compressed(A, 3)
    X = rng.normal(size=(300, 40))
    v, w = rng.normal(size=40), rng.normal(size=300)
    U, V = rng.normal(size=(300, 4)), rng.normal(size=(40, 4))
    c, x, u, vt = fm.matrix(C), fm.matrix(X), fm.matrix(U), fm.matrix(V).T
    cases = [  # (expression, numpy value, template of its one operator)
        (fm.sum(c * fm.exp(x)), (A * np.exp(X)).sum(), "cell"),
        (c * x + c * c, A * X + A * A, "cell"),
        (fm.max(c * x, axis=0), (A * X).max(axis=0), "cell"),
        (c.T @ (w * (c @ v)), A.T @ (w * (A @ v)), "row"),
        # dense semantics: no Outer operator (it needs a driver whose zeros annihilate); the
        # 40-column product is computed per row, c's rows decoded
        (fm.sum(c * (u @ vt) ** 2), (A * (U @ V.T) ** 2).sum(), "row"),
    ]
    with fm.config(fusion=mode, compile_s=0.0, dispatch_s=0.0):
        for expr, want, template in cases:
            plan = fm.explain(expr)
            assert [op.template for op in plan.operators] == [template], plan
            (op,) = plan.operators
            assert op.main_input.meta.format is COMPRESSED
            np.testing.assert_allclose(fm.evaluate(expr), want, rtol=1e-12, atol=1e-12)
    assert fresh_stats()["kernels_executed"] == len(cases)
    assert fresh_stats().get("fused_ops_by_reference", 0) == 0


def wide_groups(n, special, seed=0):
    """n x 5 data as a co-coded DDC group with more tuples than ``cla.BIG`` (its rows are added
    up after the chunks, one accumulator per group), a sorted column as runs (RLE), an SDC column
    holding 30% of the rows (its codes written out per block) and a DDC column."""
    rng = np.random.default_rng(seed)
    a = np.column_stack([
        rng.integers(0, 400, n), rng.integers(0, 400, n), np.sort(rng.integers(0, 9, n)),
        np.where(rng.random(n) < 0.3, rng.integers(1, 50, n), 0), rng.integers(0, 3, n),
    ]).astype(float)  # fmt: skip
    if special:  # a few tuples of the big group hold inf or NaN
        rows = rng.choice(n, 20, replace=False)
        a[rows, 0] = rng.choice([np.inf, -np.inf, np.nan], 20)
    parts = [([0, 1], "ddc"), ([2], "rle"), ([3], "sdc"), ([4], "ddc")]
    groups = [cla.group(a[:, cols], np.array(cols), kind) for cols, kind in parts]
    x = fm.CompressedMatrix.from_groups(a.shape, groups)
    assert np.diff(x.ddc.tupptr).max() > kernels.BIG
    return a, x


@pytest.mark.parametrize("special", [False, True])
def test_products_over_big_groups_runs_and_dense_sdc(special):
    a, x = wide_groups(60_000, special)
    rng = np.random.default_rng(1)
    v, w, W = rng.standard_normal(5), rng.standard_normal(60_000), rng.standard_normal((60_000, 2))
    c = fm.matrix(x)
    with np.errstate(all="ignore"):
        want_chain, want_left = a.T @ (w * (a @ v)), a.T @ W
        for mode in ("none", "cost_based"):
            with fm.config(fusion=mode):
                same(fm.evaluate(c.T @ (w * (c @ v))), want_chain)
                same(fm.evaluate(c.T @ (fm.matrix(W) * 2.0)), want_left * 2.0)


@pytest.mark.parametrize(("mode", "cfg"), MODES)
def test_products_with_csr_operands_multiply_only_stored_entries(mode, cfg):
    """As with a dense matrix, NaN and inf meet only the CSR operand's stored entries (scipy)."""
    a = sample(200, 3, 4, special=True)
    x = fm.matrix(cla.compressed(a, 4))
    S = sp.random(3, 4, density=0.4, format="csr", random_state=1)
    T = sp.random(4, 200, density=0.4, format="csr", random_state=2)
    N = sp.random(3, 2, density=0.5, format="csr", random_state=3)  # narrower than tall
    s, t, narrow = fm.matrix(S), fm.matrix(T), fm.matrix(N)
    with np.errstate(all="ignore"):
        cases = [
            (fm.exp(x @ s) * 2, np.exp(a @ S) * 2),
            (fm.exp(x @ narrow) * 2, np.exp(a @ N) * 2),
            (fm.sum((x @ s) ** 2, axis=1), ((a @ S) ** 2).sum(axis=1)),
            (t @ x, T @ a),
            (x.T @ t.T, a.T @ T.T),
        ]
        with fm.config(fusion=mode, **cfg):
            for expr, want in cases:
                got = fm.evaluate(expr)
                same(got.decompress() if isinstance(got, fm.CompressedMatrix) else got, want)
