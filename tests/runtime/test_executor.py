"""The executor runs single nodes on plain numpy values through a function chosen once per plan
(no per-node dispatch): the values are the reference's, other values (CSR) take the dispatch,
and a backend that runs single nodes its own way still sees every one of them."""

import numpy as np
import pytest
import scipy.sparse as sp

import fusedml as fm
from fusedml.runtime.backend import LocalBackend

RNG = np.random.default_rng(3)
X = RNG.normal(size=(7, 4))
V = RNG.normal(size=(4, 1))


def _expr(x):
    """A transpose, two products, elementwise ops and aggregates, none of them fused."""
    s = fm.exp(fm.matrix(x) @ fm.matrix(V))
    return fm.sum(fm.matrix(x).T @ (s * 2.0 - 1.0), axis=0) / fm.max(s)


def _want():
    s = np.exp(X @ V)
    return np.sum(X.T @ (s * 2.0 - 1.0), axis=0) / np.max(s)


class CountingBackend(LocalBackend):
    """The local backend, counting the single nodes it is asked to run."""

    name = "counting"

    def __init__(self) -> None:
        self.nodes = 0

    def run_node(self, node, args):
        self.nodes += 1
        return super().run_node(node, args)


@pytest.mark.parametrize("to_format", [np.asarray, sp.csr_array], ids=["dense", "csr"])
def test_single_nodes_give_numpy_s_values(to_format):
    got = fm.evaluate(_expr(to_format(X)), fusion="none")
    np.testing.assert_allclose(got, _want(), rtol=1e-13)
    assert isinstance(got, np.ndarray) and got.shape == (1,)


def test_a_backend_running_single_nodes_its_own_way_sees_every_one():
    expr = _expr(X)
    plan = fm.explain(expr, fusion="none")
    backend = CountingBackend()
    with fm.config(backend=backend):
        got = fm.evaluate(expr, fusion="none")
    np.testing.assert_allclose(got, _want(), rtol=1e-13)
    assert backend.nodes == len(plan.unfused) >= 8
