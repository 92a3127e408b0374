"""Which fused operators the cost-based plan of each of the paper's patterns has, and that they
compute the reference's numbers."""

import numpy as np
import pytest
import scipy.sparse as sp
from fusedml.datasets.bodies import mlogreg_step

import fusedml as fm
from fusedml.cplan.kinds import OutputKind
from fusedml.ir.ops import Op
from tests.formats import FORMATS, csr

ROWS = 200_000  # large enough that fusing pays for the amortized compile in the cost model


def templates(plan):
    return sorted(op.template for op in plan.operators)


def assert_plan(expr, expected, fusion="cost_based"):
    plan = fm.explain(expr, fusion=fusion)
    assert templates(plan) == sorted(expected), str(plan)
    return plan


@pytest.fixture(scope="module")
def dense():
    rng = np.random.default_rng(0)
    return {k: rng.standard_normal((ROWS, 20)) for k in "XYZ"} | {
        "w": rng.standard_normal(ROWS), "v": rng.standard_normal(20),
        "P": rng.random((ROWS, 3)), "V": rng.standard_normal((20, 3)),
    }  # fmt: skip


@pytest.fixture(scope="module")
def factors():
    rng = np.random.default_rng(1)
    W = sp.random(3000, 2000, density=0.01, format="csr", random_state=2)
    return W, rng.standard_normal((3000, 10)), rng.standard_normal((2000, 10))


def test_sum_xyz_is_one_cell_operator(dense):
    X, Y, Z = (fm.matrix(dense[k]) for k in "XYZ")
    plan = assert_plan(fm.sum(X * Y * Z), ["cell"])
    assert plan.operators[0].aggregation == "full_agg"
    assert fm.evaluate(fm.sum(X * Y * Z)) == pytest.approx(
        np.sum(dense["X"] * dense["Y"] * dense["Z"])
    )


def test_three_sums_are_one_multi_aggregate(dense):
    X, Y = fm.matrix(dense["X"]), fm.matrix(dense["Y"])
    exprs = (fm.sum(X**2), fm.sum(X * Y), fm.sum(Y**2))
    plan = assert_plan(exprs, ["magg"])
    (op,) = plan.operators
    assert len(op.roots) == 3 and op.cplan.aggregations == ("sum", "sum", "sum")
    got = fm.evaluate(exprs)
    x, y = dense["X"], dense["Y"]
    np.testing.assert_allclose(got, [np.sum(x**2), np.sum(x * y), np.sum(y**2)], rtol=1e-12)
    assert_plan(exprs, ["cell", "cell", "cell"], fusion="fuse_all")  # heuristics build no MAgg


def test_mmchain_is_one_row_operator(dense):
    X = fm.matrix(dense["X"])
    expr = X.T @ (dense["w"] * (X @ dense["v"]))
    plan = assert_plan(expr, ["row"])
    op = plan.operators[0]
    assert op.aggregation == "col_product" and op.main_input is X.node
    assert plan.unfused == ()  # X.T is read in place, not materialized
    x = dense["X"]
    np.testing.assert_allclose(fm.evaluate(expr), x.T @ (dense["w"] * (x @ dense["v"])))


def test_mlogreg_hessian_vector_is_one_row_operator(dense):
    X, P, V = fm.matrix(dense["X"]), fm.matrix(dense["P"]), fm.matrix(dense["V"])
    Q = P * (X @ V)
    expr = X.T @ (Q - P * fm.sum(Q, axis=1, keepdims=True))
    assert_plan(expr, ["row"])
    x, p, v = dense["X"], dense["P"], dense["V"]
    q = p * (x @ v)
    np.testing.assert_allclose(fm.evaluate(expr), x.T @ (q - p * q.sum(axis=1, keepdims=True)))


def _no_dense_outer_product(plan, shape):
    materialized = [r for op in plan.operators for r in op.roots] + list(plan.unfused)
    return not any(n.shape == shape and n.meta.format.value == "dense" for n in materialized)


def test_outer_patterns_are_one_outer_operator_each(factors):
    W, U, V = factors
    Wm, Um, Vm = fm.matrix(W), fm.matrix(U), fm.matrix(V)
    loss = fm.sum(Wm * (Um @ Vm.T) ** 2)
    right = (Wm * (Um @ Vm.T)) @ Vm
    for expr, kind in ((loss, "full_agg"), (right, "row_product")):
        plan = assert_plan(expr, ["outer"])
        assert plan.operators[0].aggregation == kind
        assert plan.operators[0].main_input is Wm.node  # the sparse driver
        assert _no_dense_outer_product(plan, W.shape)
        assert any(n.op is Op.MATMUL and n.shape == W.shape for n in plan.operators[0].nodes)
    dense_uv = U @ V.T
    assert fm.evaluate(loss) == pytest.approx(np.sum(W.toarray() * dense_uv**2))
    np.testing.assert_allclose(fm.evaluate(right), (W.toarray() * dense_uv) @ V, rtol=1e-10)
    unfused = fm.explain(loss, fusion="none")
    assert not _no_dense_outer_product(unfused, W.shape)  # Base does materialize U @ V.T


def test_outer_opens_only_for_large_products():
    rng = np.random.default_rng(3)
    W = fm.matrix(sp.random(100, 80, density=0.05, format="csr", random_state=4))
    U, V = fm.matrix(rng.standard_normal((100, 5))), fm.matrix(rng.standard_normal((80, 5)))
    plan = fm.explain(fm.sum(W * (U @ V.T) ** 2), fusion="fuse_all")
    assert "outer" not in templates(plan)


def test_jit_body_fixture_plan_is_fused_and_correct():
    from fusedml.datasets.bodies import mlogreg_data

    args = mlogreg_data(50_000)
    step = fm.jit(mlogreg_step)
    plan = step.explain(*args)
    assert plan.operators and all(op.template in ("row", "cell") for op in plan.operators)
    with fm.config(fusion="none"):
        want = step(*args)
    got = step(*args)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-10)


def test_row_template_covers_column_ranges_hstack_and_skinny_products(dense):
    X, Y = fm.matrix(dense["X"]), fm.matrix(dense["Y"])
    B = fm.matrix(dense["V"])
    expr = fm.sum(fm.hstack([X[:, :10], Y]) * 2, axis=1) + fm.sum((X @ B) ** 2, axis=1)
    plan = fm.explain(expr, fusion="fuse_all")
    assert "row" in templates(plan)
    covered = {n.op for op in plan.operators for n in op.nodes}
    assert {Op.COLS, Op.HSTACK, Op.MATMUL} <= covered
    x, y, b = dense["X"], dense["Y"], dense["V"]
    want = (np.hstack([x[:, :10], y]) * 2).sum(axis=1) + ((x @ b) ** 2).sum(axis=1)
    for mode in ("fuse_all", "cost_based"):
        np.testing.assert_allclose(fm.evaluate(expr, fusion=mode), want, rtol=1e-9, atol=1e-10)


def _lloyd(X, C):
    """KMeans' iteration: P.T @ X and colSums(P) from the same per-row assignment P."""
    D = -2 * (X @ C.T) + fm.sum(C * C, axis=1)
    nearest = fm.min(D, axis=1, keepdims=True)
    P = nearest >= D
    P = P / fm.sum(P, axis=1, keepdims=True)
    return P.T @ X, fm.sum(P, axis=0)


def _lloyd_numpy(x, c):
    d = -2 * np.asarray(x @ c.T) + np.sum(c * c, axis=1)
    p = (d.min(axis=1, keepdims=True) >= d).astype(float)
    p /= p.sum(axis=1, keepdims=True)
    return np.asarray(p.T @ x), p.sum(axis=0)


# not FORMATS: the CSR case is its own wider matrix, which a dense array would take 480 MB to hold
@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_kmeans_iteration_is_one_row_multi_aggregate(dense, fmt):
    """P is never materialized: P.T @ X (P computed per row, transposed) and colSums(P) share one
    Row operator (the paper's single KMeans operator); fuse_all computes them in two."""
    x = dense["X"] if fmt == "dense" else sp.random(ROWS, 300, 0.02, "csr", random_state=3)
    c = np.random.default_rng(4).standard_normal((5, x.shape[1]))
    X = fm.matrix(x)
    exprs = _lloyd(X, c)
    plan = assert_plan(exprs, ["row"])
    (op,) = plan.operators
    assert op.cplan.kind is OutputKind.MULTI and len(op.roots) == 2 and op.main_input is X.node
    assert_plan(exprs, ["row", "row"], fusion="fuse_all")
    want = _lloyd_numpy(x, c)
    for mode in ("cost_based", "fuse_all"):
        got = fm.evaluate(exprs, fusion=mode)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(np.asarray(g).ravel(), np.ravel(w), rtol=1e-9, atol=1e-9)


def _softmax_loss(X, B):
    """MLogReg's probabilities (a per-row output) and a loss sum from the same X @ B."""
    XB = X @ B
    top = fm.maximum(fm.max(XB, axis=1, keepdims=True), 0.0)
    E = fm.exp(XB - top)
    total = fm.sum(E, axis=1, keepdims=True) + fm.exp(-top)
    return E / total, fm.sum(fm.log(total)) - fm.sum(XB - top), fm.sum(top, axis=0)


@pytest.mark.parametrize("body", [_lloyd, _softmax_loss])
@pytest.mark.parametrize("to_format", FORMATS)
@pytest.mark.parametrize("case", ["nan_inf", "all_zero", "one_row", "ints", "empty"])
def test_row_multi_outputs_match_reference(body, to_format, case):
    """Row operators with several outputs (P.T @ Y with P computed per row, column and full sums,
    per-row outputs), merged or not, on edge cases, vs the reference."""
    rng = np.random.default_rng(5)
    rows = {"one_row": 1, "empty": 0}.get(case, 500)
    x = rng.standard_normal((rows, 7))
    if case == "nan_inf":
        x[rng.random(x.shape) < 0.05] = np.inf
        x[rng.random(x.shape) < 0.05] = np.nan
        x[rng.random(x.shape) < 0.05] = -np.inf
    if case == "all_zero":
        x[:] = 0.0
    if case == "ints":
        x = rng.integers(-3, 4, size=x.shape)
    if to_format is csr:  # zeros for CSR to skip
        x = np.where(rng.random(x.shape) < 0.6, 0, x)
    c = rng.standard_normal((3, 7))
    exprs = body(fm.matrix(to_format(x)), c if body is _lloyd else c.T)
    want = fm.evaluate(exprs, fusion="none")
    for mode in ("cost_based", "fuse_all", "fuse_no_redundancy"):
        with fm.config(compile_s=0.0):  # fuse even at these sizes
            plan = fm.explain(exprs, fusion=mode)
            got = fm.evaluate(exprs, fusion=mode)
        if rows > 1:
            assert "row" in templates(plan), str(plan)
            if mode == "cost_based":  # merged: one operator with several outputs
                assert any(len(op.roots) > 1 for op in plan.operators), str(plan)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-9, atol=1e-12)


def test_mlogreg_probabilities_and_loss_are_one_row_operator(dense):
    """A per-row output (the probabilities) and three loss sums over the same X @ B share one Row
    operator under cost_based: X is read once, X @ B never materialized."""
    x = dense["X"]
    b = np.random.default_rng(6).standard_normal((20, 2)) * 0.3
    yk = np.zeros((ROWS, 2))
    yk[::3, 0] = 1.0
    yb = 1.0 - yk.sum(axis=1, keepdims=True)
    X, B, Yk, yb_m = fm.matrix(x), fm.matrix(b), fm.matrix(yk), fm.matrix(yb)
    XB = X @ B
    top = fm.maximum(fm.max(XB, axis=1, keepdims=True), 0.0)
    E = fm.exp(XB - top)
    total = fm.sum(E, axis=1, keepdims=True) + fm.exp(-top)
    loss = -fm.sum(Yk * (XB - top)) + fm.sum(yb_m * top) + fm.sum(fm.log(total))
    exprs = (E / total, loss)
    plan = assert_plan(exprs, ["row"])
    (op,) = plan.operators
    assert op.cplan.kind is OutputKind.MULTI and len(op.roots) == 4
    xb = x @ b
    t = np.maximum(xb.max(axis=1, keepdims=True), 0.0)
    e = np.exp(xb - t)
    tot = e.sum(axis=1, keepdims=True) + np.exp(-t)
    want_loss = -np.sum(yk * (xb - t)) + np.sum(yb * t) + np.sum(np.log(tot))
    got_p, got_loss = fm.evaluate(exprs)
    np.testing.assert_allclose(got_p, e / tot, rtol=1e-12)
    assert got_loss == pytest.approx(want_loss, rel=1e-12)


def test_multi_aggregates_never_merge_operators_that_feed_each_other():
    """MLogReg's loss and gradient with an intercept on small data: one Row operator writes
    XB - top, an unfused exp reads it and another Row operator reads that; merging the two Row
    operators would make one operator wait for its own output."""
    rng = np.random.default_rng(0)
    x, yk = rng.standard_normal((203, 6)), np.eye(3)[rng.integers(0, 3, 203)]
    X, B, b = fm.matrix(x), fm.matrix(rng.standard_normal((6, 2)) * 0.1), fm.matrix(np.ones((1, 2)))
    Yk, yb = fm.matrix(yk[:, :2]), fm.matrix(yk[:, 2:])
    XB = X @ B + b
    top = fm.maximum(fm.max(XB, axis=1, keepdims=True), 0.0)
    E = fm.exp(XB - top)
    total = fm.sum(E, axis=1, keepdims=True) + fm.exp(-top)
    loss = -fm.sum(Yk * (XB - top)) + fm.sum(yb * top) + fm.sum(fm.log(total))
    G = E / total - Yk
    exprs = (X.T @ G, fm.sum(G, axis=0), loss)
    want = fm.evaluate(exprs, fusion="none")
    with fm.config(dispatch_s=0.0, compile_s=0.0):
        plan = fm.explain(exprs, fusion="cost_based")
        assert len(plan.schedule) == len(plan.operators) + len(plan.unfused)
        got = fm.evaluate(exprs, fusion="cost_based")
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
