"""Every fusing mode streams the sparse-safe outer patterns over a CSR driver ``W`` through the
Outer template: the cells of ``U @ V.T`` are computed at W's non-zeros only, and no plan
materializes that product (or a function of it) dense."""

from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse as sp

import fusedml as fm
from fusedml.formats import Format
from fusedml.fusion.templates import outer_product
from tests.formats import unbound

MODES = ("fuse_all", "fuse_no_redundancy", "cost_based")
M, N, RANK = 100_000, 80_000, 10  # a dense M x N product would take 60 GiB

# Bodies repeat (W * (U @ V.T), W * log(U @ V.T + eps), ...) so that the value checks compile few
# kernels: literals are kernel arguments, so eps does not split them.
PATTERNS = {
    "full_sum": lambda f: fm.sum(f.W * (f.U @ f.V.T)),
    "col_sums": lambda f: fm.sum(f.W * (f.U @ f.V.T), axis=0),
    "row_sums": lambda f: fm.sum(f.W * (f.U @ f.V.T), axis=1),
    "row_means": lambda f: fm.mean(f.W * (f.U @ f.V.T), axis=1),
    "cellwise": lambda f: f.W * (f.U @ f.V.T),
    "transposed": lambda f: (f.W * (f.U @ f.V.T)).T,
    "divide": lambda f: f.W / (f.U @ f.V.T),
    "right": lambda f: (f.W * (f.U @ f.V.T)) @ f.R,
    "left": lambda f: (f.W * (f.U @ f.V.T)).T @ f.L,
    "wsloss": lambda f: fm.sum(f.W * (f.U @ f.V.T - f.X) ** 2),
    "pre_weighted_loss": lambda f: fm.sum((f.X - f.W * (f.U @ f.V.T)) ** 2),
    "log": lambda f: f.W * fm.log(f.U @ f.V.T + 1e-3),
    "log_row_sums": lambda f: fm.sum(f.W * fm.log(f.U @ f.V.T + 1e-3), axis=1),
    # U @ V.T - X shared by the loss and the gradient (ALS-CG's step written as one body)
    "loss_and_gradient": lambda f: (
        fm.sum(f.W * (f.U @ f.V.T - f.X) ** 2),
        (f.W * (f.U @ f.V.T - f.X)) @ f.V,
    ),
    "shared_log": lambda f: (
        fm.sum(f.W * fm.log(f.U @ f.V.T + 1e-3)),
        fm.max(f.X * fm.log(f.U @ f.V.T + 1e-3), axis=1),
    ),
}


def _csr(rows, cols, nnz, rng):
    """A random CSR matrix without scipy.sparse.random's dense index permutation."""
    r = np.sort(rng.integers(0, rows, nnz))
    c = rng.integers(0, cols, nnz)
    return sp.csr_array((rng.random(nnz) + 0.5, (r, c)), shape=(rows, cols))


def _factors(m, n, rank, nnz, seed):
    rng = np.random.default_rng(seed)
    W, X = _csr(m, n, nnz, rng), _csr(m, n, nnz, rng)
    U, V, R, L = (rng.random((rows, rank)) + 0.1 for rows in (m, n, n, m))
    return SimpleNamespace(
        **{k: fm.matrix(v) for k, v in dict(W=W, X=X, U=U, V=V, R=R, L=L).items()}
    )


@pytest.fixture(scope="module")
def big():
    """W and X at 1e-5 density, shapes only: the tests that use them only plan."""
    W, X = (unbound((M, N), Format.CSR, nnz=M) for _ in range(2))
    U, V, R, L = (unbound((rows, RANK)) for rows in (M, N, N, M))
    return SimpleNamespace(W=W, X=X, U=U, V=V, R=R, L=L)


@pytest.fixture(scope="module")
def small():
    return _factors(400, 300, 4, nnz=3000, seed=1)  # both dimensions above OUTER_MIN_DIM


def _dense_products(plan):
    """Materialized values (operator outputs and inputs, unfused nodes) of the product's size,
    held dense."""
    materialized = {r for op in plan.operators for r in (*op.roots, *op.inputs)}
    materialized |= set(plan.unfused)
    return [n for n in materialized if n.meta.format is Format.DENSE and n.meta.cells == M * N]


def _unstreamed_products(plan):
    """Outer products not computed inside a sparse-safe Outer operator over a CSR driver."""
    return [
        p
        for p in plan.dag.nodes
        if outer_product(p)
        and not any(
            op.template == "outer"
            and p in op.nodes
            and op.cplan.sparse_safe
            and op.main_input.meta.format is Format.CSR
            for op in plan.operators
        )
    ]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", PATTERNS)
def test_plan_streams_the_outer_product(big, name, mode):
    plan = fm.explain(PATTERNS[name](big), fusion=mode)
    assert any(outer_product(n) for n in plan.dag.nodes), str(plan)
    assert not _unstreamed_products(plan), str(plan)
    assert not _dense_products(plan), str(plan)


def test_the_reference_plan_materializes_the_product(big):
    plan = fm.explain(PATTERNS["row_sums"](big), fusion="none")
    assert _unstreamed_products(plan) and _dense_products(plan)


def _values(value):
    values = value if isinstance(value, tuple) else (value,)
    return [v.toarray() if sp.issparse(v) else np.asarray(v) for v in values]


@pytest.mark.parametrize("name", PATTERNS)
def test_values_match_the_reference(small, name):
    expr = PATTERNS[name](small)
    expected = _values(fm.evaluate(expr, fusion="none"))
    for mode in MODES:
        assert any(op.template == "outer" for op in fm.explain(expr, fusion=mode).operators)
        for got, want in zip(_values(fm.evaluate(expr, fusion=mode)), expected, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, err_msg=mode)


def test_no_redundancy_still_materializes_a_product_shared_over_dense_drivers():
    # over a dense driver an Outer operator visits every cell: sharing the product is FNR's call
    rng = np.random.default_rng(2)
    f = SimpleNamespace(**{k: fm.matrix(rng.random((600, 5))) for k in "UV"})
    f.W, f.X = fm.matrix(rng.random((600, 600))), fm.matrix(rng.random((600, 600)))
    plan = fm.explain(PATTERNS["loss_and_gradient"](f), fusion="fuse_no_redundancy")
    (product,) = (n for n in plan.dag.nodes if outer_product(n))
    assert product in plan.unfused, str(plan)
