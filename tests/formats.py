"""The format axis of the test suite, defined once (as scikit-learn's ``CSR_CONTAINERS``): one
constructor per built-in format, each building that format's value from a dense ndarray.

    @pytest.mark.parametrize("to_format", FORMATS)
    def test_x(to_format):
        X = fm.matrix(to_format(a))

Test ids are the constructors' names, "dense" and "csr". ``unbound`` makes an input of a format
that has a shape but no data.
"""

import itertools

import numpy as np
import scipy.sparse as sp

import fusedml as fm
from fusedml.formats import Format
from fusedml.ir.frontend import placeholder


def dense(a) -> np.ndarray:
    return np.asarray(a)


def csr(a) -> sp.csr_array:
    return sp.csr_array(a)


FORMATS = (dense, csr)


_unbound_names = itertools.count()


def unbound(shape: tuple[int, ...], fmt: Format = Format.DENSE, nnz: int | None = None) -> fm.Expr:
    """An input of this shape, format and number of non-zeros without data, for tests that only
    plan (``fm.explain``, ``optimize_until``): the cost model sees a large input, nothing is
    allocated. Each has a fresh name, as ``fm.matrix`` inputs do, so that no two tests share its
    nodes or a cached plan."""
    return placeholder(f"unbound{next(_unbound_names)}", shape, fmt, nnz)
