"""Hash-consed nodes and their meta."""

import gc

import numpy as np
import scipy.sparse as sp

import fusedml as fm
import fusedml.pipeline
from fusedml.formats import Format
from fusedml.ir.build import const, data, make
from fusedml.ir.ops import Op
from fusedml.ir.verify import verify


def test_structurally_equal_nodes_are_one_object():
    x = data("x", (4, 3), Format.DENSE)
    a = make(Op.MUL, (x, const(2.0)))
    b = make(Op.MUL, (x, const(2.0)))
    assert a is b
    assert make(Op.SUM, (a,), axis=None) is make(Op.SUM, (b,), axis=None)
    assert make(Op.SUM, (a,), axis=0) is not make(Op.SUM, (a,), axis=1)
    assert const(0.0) is not const(-0.0)  # different literals (1/x differs)
    assert data("x", (4, 3), Format.DENSE) is x
    assert data("x", (4, 3), Format.CSR, 5) is not x


def test_cse_through_the_front_end():
    X = fm.matrix(np.ones((3, 3)))
    assert ((X * 2) + 1).node is ((X * 2) + 1).node


def test_interning_does_not_keep_nodes_alive():
    from fusedml.ir import node as node_module

    x = data("gc-probe", (2, 2), Format.DENSE)
    before = len(node_module._interned)
    make(Op.EXP, (make(Op.NEG, (x,)),))
    gc.collect()
    assert len(node_module._interned) <= before


def test_meta_shapes_formats_and_nnz():
    X = fm.matrix(sp.random(100, 10, density=0.1, format="csr", random_state=0))
    D = fm.matrix(np.ones((100, 10)))
    prod = (X * D).node.meta
    assert prod.format is Format.CSR and prod.nnz == 100
    assert (X + D).node.meta.format is Format.DENSE
    assert (X + X).node.meta.format is Format.CSR
    assert fm.exp(X).node.meta.format is Format.DENSE
    assert (D / X).node.meta.format is Format.DENSE  # only a sparse numerator stays sparse
    assert (X @ D.T).node.meta.shape == (100, 100)
    assert fm.sum(X, axis=0).node.meta.shape == (10, 1)  # 1-D result: the IR's column
    assert fm.argmax(X).node.meta.dtype == "int64"
    assert X[:, 2:5].node.meta.nnz == 30
    verify(fm.pipeline.as_dag([(X * D + 1).node]))


def test_printer_lists_nodes_and_outputs():
    X = fm.matrix(np.ones((2, 3)))
    text = str(fm.pipeline.optimize_until(fm.sum(X * X), "dag"))
    assert "mul(" in text and "sum(" in text and "2x3 dense" in text and "out[0]" in text
