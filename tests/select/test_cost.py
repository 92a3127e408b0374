"""The cost model against hand-computed costs, and where its constants come from."""

import dataclasses
import json

import numpy as np
import pytest
import scipy.sparse as sp

import fusedml as fm
from fusedml.formats import Format
from fusedml.select import calibrate as calibration
from fusedml.select.constants import CostConstants, current_constants
from fusedml.select.cost import CostModel, node_bytes
from tests.formats import unbound

C = CostConstants(
    read_bandwidth_bytes_per_s=1e9, write_bandwidth_bytes_per_s=5e8, flops_per_s=1e9,
    dispatch_s=1e-5, compile_s=0.1, compile_amortization_calls=100,
)  # fmt: skip


def explain_with(constants, expr, fusion):
    with fm.config(**constants.__dict__):
        return fm.explain(expr, fusion=fusion)


def test_cell_operator_cost_is_write_plus_max_read_compute_plus_fixed_terms():
    n = 100_000
    X, Y, Z = (unbound((n, 10)) for _ in range(3))
    (op,) = explain_with(C, fm.sum(X * Y * Z), "fuse_all").operators
    read = 3 * n * 10 * 8  # three dense inputs
    flops = 2 * n * 10 + 4 * n * 10  # two multiplies, a sum (weight 4)
    want = 8 / 5e8 + max(read / 1e9, flops / 1e9) + 1e-5 + 0.1 / 100
    assert op.estimated_cost_s == pytest.approx(want)


def test_sparse_safe_operator_is_costed_at_the_drivers_nonzeros():
    n = 100_000
    S, D = unbound((n, 10), Format.CSR, nnz=n * 10 // 100), unbound((n, 10))
    (op,) = explain_with(C, fm.sum(S * D * D), "fuse_all").operators
    nnz = S.node.meta.nnz
    read = node_bytes(S.node) + n * 10 * 8 * 0.01  # D read once, at the driver's density
    flops = 2 * nnz + 4 * nnz
    want = 8 / 5e8 + max(read / 1e9, flops / 1e9) + 1e-5 + 0.1 / 100
    assert op.cplan.sparse_safe and op.main_input is S.node
    assert op.estimated_cost_s == pytest.approx(want)


def test_outer_operator_is_scaled_by_driver_sparsity():
    W = fm.matrix(sp.random(2000, 1000, density=0.01, format="csr", random_state=0))
    U, V = fm.matrix(np.ones((2000, 8))), fm.matrix(np.ones((1000, 8)))
    (op,) = explain_with(C, fm.sum(W * (U @ V.T)), "fuse_all").operators
    dense_flops = 2 * 2000 * 8 * 1000 + 2000 * 1000 * 0.01 + 4 * 2000 * 1000 * 0.01
    assert op.estimated_cost_s < dense_flops / 1e9 * 0.05  # far below the dense work


def test_unfused_views_cost_only_their_dispatch():
    model = CostModel(C)
    X = fm.matrix(np.ones((1000, 10)))
    assert model.unfused(X.T.node) == pytest.approx(1e-5)
    assert model.unfused(X[:, 2:4].node) == pytest.approx(1e-5)


def test_constants_defaults_file_then_config(tmp_path):
    with fm.config(cache_dir=str(tmp_path)):
        assert current_constants() == CostConstants()
        (tmp_path / "calibration.json").write_text(json.dumps({"flops_per_s": 123.0, "x": 1}))
        assert current_constants().flops_per_s == 123.0
        with fm.config(flops_per_s=7.0):
            assert current_constants().flops_per_s == 7.0
        (tmp_path / "calibration.json").write_text("not json")
        assert current_constants() == CostConstants()  # a corrupt file is ignored
    with pytest.raises(ValueError, match="non-negative"):
        fm.config(dispatch_s=-1.0)


def test_calibrate_measures_and_stores(tmp_path):
    path, values = calibration.calibrate(
        cache_dir=str(tmp_path), size_bytes=1 << 22, repeats=1, measure_compile=False
    )
    assert all(v > 0 for v in values.values())
    with fm.config(cache_dir=str(tmp_path)):
        assert (
            current_constants().read_bandwidth_bytes_per_s == values["read_bandwidth_bytes_per_s"]
        )
    with open(path) as f:
        assert json.load(f).keys() == values.keys()


def test_numpy_runs_on_one_core_blas_and_kernels_on_all():
    constants = CostConstants(
        read_bandwidth_bytes_per_s=4e9, write_bandwidth_bytes_per_s=2e9, flops_per_s=8e9,
        numpy_read_bandwidth_bytes_per_s=1e9, numpy_write_bandwidth_bytes_per_s=5e8,
        numpy_flops_per_s=2e9, dispatch_s=0.0,
    )  # fmt: skip
    model = CostModel(constants)
    n = 100_000
    X = unbound((n, 10))
    bytes_ = n * 10 * 8
    # an elementwise op in numpy: one-core rates
    assert model.unfused((X * 2.0).node) == pytest.approx(bytes_ / 5e8 + bytes_ / 1e9)
    # a dense product in BLAS: all-core rates
    B = fm.matrix(np.ones((10, 3)))
    product = (X @ B).node
    want = n * 3 * 8 / 2e9 + max((bytes_ + 240) / 4e9, 2 * n * 10 * 3 / 8e9)
    assert model.unfused(product) == pytest.approx(want)
    # a CSR product in scipy.sparse: one core
    S = unbound((n, 10), Format.CSR, nnz=n * 10 // 10)
    sparse_product = (S @ B).node
    assert model.unfused(sparse_product) > CostModel(
        dataclasses.replace(constants, numpy_read_bandwidth_bytes_per_s=4e9,
                            numpy_write_bandwidth_bytes_per_s=2e9, numpy_flops_per_s=8e9)
    ).unfused(sparse_product)  # fmt: skip


def test_operators_below_the_serial_threshold_run_on_one_thread():
    small, big = (unbound((m, 10)) for m in (100, 100_000))
    with fm.config(serial_below_s=1e-4):
        assert not fm.explain(fm.sum(small * small * 2.0), fusion="fuse_all").operators[0].parallel
        assert fm.explain(fm.sum(big * big * 2.0), fusion="fuse_all").operators[0].parallel
    with fm.config(serial_below_s=0.0):
        assert fm.explain(fm.sum(small * small * 2.0), fusion="fuse_all").operators[0].parallel


def _compressed(n, distinct, seed=0):
    """A compressed n x 4 matrix whose columns hold ``distinct`` values each."""
    rng = np.random.default_rng(seed)
    return fm.compress(rng.integers(0, distinct, (n, 4)).astype(float), cocode=False)


def _row_and_dictionary_bytes(X):
    rows = sum(a.nbytes for a in (*X.codes, X.sdc_offsets, X.sdc_codes, X.uc))
    return rows, X.nbytes - rows


def test_compressed_leaves_cost_the_bytes_they_hold():
    X = _compressed(50_000, 200)
    leaf = fm.matrix(X).node
    assert node_bytes(leaf) == X.nbytes  # every array it holds, not a per-cell figure
    assert node_bytes(fm.matrix(X).T.node) == X.nbytes  # a lazy transpose reads the same


def test_per_value_operators_read_only_the_dictionaries():
    n = 100_000
    X = _compressed(n, 50)
    rows, dictionaries = _row_and_dictionary_bytes(X)
    assert dictionaries < rows / 100  # the codes are what a row visit would read
    (op,) = explain_with(C, fm.sum(fm.matrix(X) ** 2), "fuse_all").operators
    values = sum(len(g.dictionary) * len(g.cols) for g in X.groups)
    flops = (1 + 4) * values  # x*x and a sum (weight 4) per stored value
    want = 8 / 5e8 + max(dictionaries / 1e9, flops / 1e9) + 1e-5 + 0.1 / 100
    assert op.estimated_cost_s == pytest.approx(want)


def test_compressed_products_cost_their_group_visits():
    n = 100_000
    X = _compressed(n, 50)
    v = unbound((4, 1))
    (op,) = explain_with(C, fm.exp(fm.matrix(X) @ v), "fuse_all").operators
    visits = 1.5 * len(X.groups) * n  # VISIT_CELLS per group and row
    read, flops = X.nbytes + 4 * 8, 2 * visits + 18 * n  # the product, then exp (weight 18)
    want = n * 8 / 5e8 + max(read / 1e9, flops / 1e9) + 1e-5 + 0.1 / 100
    assert op.estimated_cost_s == pytest.approx(want)
