"""Each trait of ``fusedml.formats.Format`` and what it decides, shown by formats that differ from
a built-in one in that trait alone (registered for one test each)."""

import contextlib

import numpy as np
import pytest
import scipy.sparse as sp

import fusedml as fm
from fusedml.formats import Format
from fusedml.ir.build import make
from fusedml.ir.frontend import placeholder
from fusedml.ir.ops import Op
from fusedml.select.constants import CostConstants
from fusedml.select.cost import CostModel, all_cores, drives_sparse, node_bytes, node_flops
from tests import ell


class Boxed:
    """A user value only a test format claims: a dense array in a box."""

    def __init__(self, a):
        self.a, self.shape, self.ndim = np.asarray(a, dtype=np.float64), np.shape(a), 2


def twin(base: Format, **traits) -> Format:
    """A format with ``base``'s values (boxed) and rules, except the given traits."""

    class Twin(type(base)):
        name = f"{base.name}_twin_" + "_".join(sorted(traits))

        def claims(self, value):
            return isinstance(value, Boxed)

        def from_value(self, value, what="fm.matrix"):
            return value if isinstance(value, Boxed) else Boxed(base.to_dense(value))

        def nnz(self, value):
            return int(np.count_nonzero(value.a))

        def to_canonical(self, value):
            return self.canonical.from_value(value.a)

        def to_dense(self, value):
            return value.a

    for trait, value in traits.items():
        setattr(Twin, trait, value)
    return Twin()


@contextlib.contextmanager
def registered(fmt):
    Format.register(fmt)
    try:
        yield fmt
    finally:
        Format.unregister(fmt)


def leaf(fmt, shape=(100, 50), nnz=500):
    return placeholder(f"x_{fmt.name}", shape, fmt, nnz).node


def test_a_format_registered_or_removed_is_seen_by_values_of_types_asked_about_before():
    value = ell.Ell.from_csr(sp.csr_array(np.eye(3)))
    before = Format.of(value)  # remembered per type
    with ell.registered() as fmt:
        assert before is not fmt and Format.of(value) is fmt
        assert Format.of(np.eye(3)) is Format.DENSE
    assert Format.of(value) is before
    assert Format.of(sp.csr_array(np.eye(3))) is Format.CSR


def test_detection_and_conversion():
    assert Format.of(np.zeros(3)) is Format.DENSE and Format.of([1, 2]) is Format.DENSE
    assert Format.of(sp.coo_array(np.eye(2))) is Format.CSR
    assert Format.of(object()) is None and Format.of(3.0) is None
    fmt, value = Format.convert(sp.coo_array(np.eye(2)))
    assert fmt is Format.CSR and isinstance(value, sp.csr_array)
    fmt, value = Format.convert(3)  # unclaimed values are tried as dense arrays
    assert fmt is Format.DENSE and value.shape == ()
    E_value = ell.Ell.from_csr(sp.csr_array(np.eye(3)))
    assert Format.of(E_value) is None  # remembered per type until the formats change
    with ell.registered() as E:
        assert Format.of(E_value) is E  # registered formats are asked first
        assert fm.matrix(E_value).node.meta.format is E
        with pytest.raises(ValueError, match="registered already"):
            Format.register(ell.EllFormat())
    assert Format.of(E_value) is None


@pytest.mark.parametrize("annihilates", [False, True])
def test_zeros_annihilate_decides_sparse_results_and_the_zero_rule(annihilates):
    fmt = twin(Format.DENSE, zeros_annihilate=annihilates)
    with registered(fmt):
        x = np.array([[0.0, 1.0], [2.0, 0.0]])
        inf = np.full((2, 2), np.inf)
        expr = fm.matrix(Boxed(x)) * fm.matrix(inf)
        assert expr.node.meta.format is Format.result(sparse=annihilates)
        got = fm.evaluate(expr, fusion="none")
        got = got.toarray() if sp.issparse(got) else got
        # a zero of an annihilating operand times inf is 0; numpy's rule gives NaN
        assert np.isnan(got[0, 0]) != annihilates and got[0, 1] == np.inf


@pytest.mark.parametrize("nonzeros", [False, True])
def test_iterates_nonzeros_decides_the_work_counted_and_sparse_drivers(nonzeros):
    fmt = twin(Format.CSR, iterates_nonzeros=nonzeros)
    x = leaf(fmt)
    assert fmt.work_cells(x.meta) == (500 if nonzeros else 5000)
    w = placeholder("w", (50, 1), Format.DENSE).node
    assert node_flops(make(Op.MATMUL, (x, w))) == 2 * (500 if nonzeros else 5000)
    assert drives_sparse(x) == nonzeros


@pytest.mark.parametrize("views", [False, True])
def test_views_decide_whether_a_transpose_costs_more_than_its_dispatch(views):
    model = CostModel(CostConstants())
    t = make(Op.TRANSPOSE, (leaf(twin(Format.DENSE, views=views)),))
    assert (model.unfused(t) == model.c.dispatch_s) == views


@pytest.mark.parametrize("threaded", [False, True])
def test_threaded_products_decide_the_rates_of_an_unfused_product(threaded):
    x = leaf(twin(Format.DENSE, threaded_products=threaded))
    w = placeholder("w", (50, 1), Format.DENSE).node
    assert all_cores(make(Op.MATMUL, (x, w))) == threaded


def test_nbytes_is_what_the_cost_model_reads():
    class Wide(type(Format.DENSE)):
        name = "wide"

        def nbytes(self, meta):
            return 16.0 * meta.cells

    assert node_bytes(leaf(Wide())) == 2 * node_bytes(leaf(Format.DENSE))


def test_to_canonical_is_what_the_reference_computes_on():
    fmt = twin(Format.DENSE)
    with registered(fmt):
        a = np.arange(6.0).reshape(2, 3)
        got = fm.evaluate(fm.sum(fm.matrix(Boxed(a)) * 2, axis=0), fusion="none")
        np.testing.assert_array_equal(got, (a * 2).sum(axis=0))
