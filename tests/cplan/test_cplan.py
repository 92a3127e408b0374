"""CPlan construction: main input, kind, placeholders, cleanup, CSE and the kernel key."""

import numpy as np
import scipy.sparse as sp

import fusedml as fm
from fusedml.formats import Format
from fusedml.ir.ops import Op
from tests.formats import unbound

RNG = np.random.default_rng(0)
ROWS = 200_000


def only_operator(expr, fusion="fuse_all"):
    (op,) = fm.explain(expr, fusion=fusion).operators
    return op


def test_main_input_is_largest_then_sparsest():
    X, S = unbound((ROWS, 20)), unbound((ROWS, 20), Format.CSR, nnz=ROWS * 20 // 100)
    v = RNG.standard_normal(20)
    op = only_operator(fm.sum(X * S * v))
    assert op.main_input is S.node  # equal size: the sparse one drives
    assert op.cplan.sparse_safe
    op = only_operator(fm.sum(fm.exp(X) * v, axis=1))
    assert op.main_input is X.node and op.aggregation == "row_agg"


def test_placeholders_cleanup_and_cse():
    X = fm.matrix(RNG.standard_normal((ROWS, 20)))
    Y = fm.matrix(RNG.standard_normal((ROWS, 20)))
    op = only_operator(fm.sum((X - Y) ** 2 + (X - Y) * 2))
    body = op.cplan.body
    names = sorted(n.attr("name") for n in body.leaves)
    assert names == ["a", "b0"]
    ops = [n.op for n in body.nodes]
    assert Op.POW not in ops  # x ** 2 -> x * x
    assert ops.count(Op.SUB) == 1  # (X - Y) once: common subexpressions are one node
    assert {i.op for i in body.nodes if i.op is Op.MUL} and ops.count(Op.ADD) == 2  # x*2 -> x+x
    np.testing.assert_allclose(
        fm.evaluate(fm.sum((X - Y) ** 2 + (X - Y) * 2), fusion="fuse_all"),
        fm.evaluate(fm.sum((X - Y) ** 2 + (X - Y) * 2), fusion="none"),
    )


def test_kernel_key_ignores_data_shapes_and_literal_values():
    def key(rows, c):
        X, Y = (unbound((rows, 20)) for _ in range(2))
        return only_operator(fm.sum(X * Y + c)).cplan.key

    assert key(ROWS, 1.5) == key(ROWS // 2, -3.0)
    X, Y = (unbound((ROWS, 20)) for _ in range(2))
    assert key(ROWS, 1.5) != only_operator(fm.sum(X * Y - 1.5)).cplan.key


def test_outer_kinds():
    W = fm.matrix(sp.random(3000, 2000, density=0.01, format="csr", random_state=1))
    U, V = fm.matrix(RNG.standard_normal((3000, 10))), fm.matrix(RNG.standard_normal((2000, 10)))
    assert only_operator(W * (U @ V.T)).aggregation == "no_agg"
    assert only_operator((W * (U @ V.T)) @ V).aggregation == "row_product"
    left = (W * (U @ V.T)).T @ U
    assert only_operator(left).aggregation == "col_product"
    np.testing.assert_allclose(
        fm.evaluate(left), fm.evaluate(left, fusion="none"), rtol=1e-9, atol=1e-12
    )
    assert only_operator(fm.sum(W * (U @ V.T))).aggregation == "full_agg"
