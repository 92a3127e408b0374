"""OFMC exploration: golden memo tables and individual template rules."""

import numpy as np
import pytest
import scipy.sparse as sp

import fusedml as fm
from fusedml import pipeline
from fusedml.fusion import templates as T
from fusedml.fusion.templates import CloseType, TemplateType

RNG = np.random.default_rng(0)


def memo_of(exprs):
    return pipeline.optimize_until(exprs, "explore")


def test_golden_cell_chain():
    X, Y, Z = (fm.matrix(RNG.standard_normal((1000, 20))) for _ in range(3))
    assert str(memo_of(fm.sum(X * Y * Z))) == "\n".join(
        [
            "%2 mul: ROW(-1,-1|OV) CELL(-1,-1|OV)",
            "%4 mul: ROW(-1,-1|OV) CELL(-1,-1|OV) ROW(2,-1|OV) CELL(2,-1|OV)",
            "%5 sum: ROW(4|CV) CELL(4|CV)",
        ]
    )


def test_golden_mmchain():
    X = fm.matrix(RNG.standard_normal((1000, 20)))
    expr = X.T @ (RNG.standard_normal(1000) * (X @ RNG.standard_normal(20)))
    assert str(memo_of(expr)) == "\n".join(
        [
            "%4 matmul: ROW(-1,-1|OV)",
            "%5 mul: ROW(-1,-1|OV) CELL(-1,-1|OV) ROW(-1,4|OV)",
            "%6 matmul: ROW(-1,5|CV)",
        ]
    )


def test_golden_outer_with_sparse_driver():
    W = fm.matrix(sp.random(1000, 800, density=0.01, format="csr", random_state=0))
    U, V = fm.matrix(RNG.standard_normal((1000, 10))), fm.matrix(RNG.standard_normal((800, 10)))
    text = str(memo_of(fm.sum(W * (U @ V.T) ** 2)))
    assert text == "\n".join(
        [
            "%4 matmul: OUTER(-1,-1|OI)",
            "%6 pow: ROW(-1,-1|OV) CELL(-1,-1|OV) OUTER(4,-1|OI)",
            "%7 mul: ROW(-1,-1|OV) CELL(-1,-1|OV) ROW(-1,6|OV) CELL(-1,6|OV) OUTER(-1,6|OV)",
            "%8 sum: ROW(7|CV) CELL(7|CV) OUTER(7|CV)",
        ]
    ), text


def test_closed_invalid_plans_are_dropped():
    U, V = fm.matrix(RNG.standard_normal((1000, 10))), fm.matrix(RNG.standard_normal((800, 10)))
    memo = memo_of(fm.sum(U @ V.T))  # nothing drives the outer product: no Outer root
    assert all(e.type is not TemplateType.OUTER or not e.close.is_valid
               for entries in memo.entries.values() for e in entries)  # fmt: skip


def test_template_predicates():
    X = fm.matrix(RNG.standard_normal((1000, 20)))
    B = fm.matrix(RNG.standard_normal((20, 3)))
    assert T.skinny_product((X @ B).node) and not T.skinny_product((X.T @ X).node)
    assert T.column_aggregation((X.T @ (X @ B)).node)
    small_u = fm.matrix(RNG.standard_normal((200, 5)))
    assert not T.outer_product((small_u @ small_u.T).node)  # 200 <= OUTER_MIN_DIM
    U = fm.matrix(RNG.standard_normal((300, 5)))
    assert T.outer_product((U @ U.T).node)
    assert T.ROW.close((X.T).node) is CloseType.OPEN_INVALID
    assert T.CELL.close(fm.sum(X, axis=0, keepdims=True).node) is CloseType.CLOSED_VALID


@pytest.mark.parametrize("bad", ["outer broadcast", "scalar output"])
def test_cell_does_not_open_on_outer_broadcasts_or_scalars(bad):
    a = fm.matrix(RNG.standard_normal((5, 1)))
    b = fm.matrix(RNG.standard_normal((1, 4)))
    node = (a * b).node if bad == "outer broadcast" else (fm.sum(a) * 2).node
    assert not T.CELL.open(node)
