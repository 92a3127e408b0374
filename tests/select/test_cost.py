"""The cost model against hand-computed costs, and where its constants come from."""

import json

import numpy as np
import pytest
import scipy.sparse as sp

import fusedml as fm
from fusedml.select import calibrate as calibration
from fusedml.select.constants import CostConstants, current_constants
from fusedml.select.cost import CostModel, node_bytes

C = CostConstants(
    read_bandwidth_bytes_per_s=1e9, write_bandwidth_bytes_per_s=5e8, flops_per_s=1e9,
    dispatch_s=1e-5, compile_s=0.1, compile_amortization_calls=100,
)  # fmt: skip


def explain_with(constants, expr, fusion):
    with fm.config(**constants.__dict__):
        return fm.explain(expr, fusion=fusion)


def test_cell_operator_cost_is_write_plus_max_read_compute_plus_fixed_terms():
    n = 100_000
    X, Y, Z = (fm.matrix(np.ones((n, 10))) for _ in range(3))
    (op,) = explain_with(C, fm.sum(X * Y * Z), "fuse_all").operators
    read = 3 * n * 10 * 8  # three dense inputs
    flops = 2 * n * 10 + 4 * n * 10  # two multiplies, a sum (weight 4)
    want = 8 / 5e8 + max(read / 1e9, flops / 1e9) + 1e-5 + 0.1 / 100
    assert op.estimated_cost_s == pytest.approx(want)


def test_sparse_safe_operator_is_costed_at_the_drivers_nonzeros():
    n = 100_000
    S = fm.matrix(sp.random(n, 10, density=0.01, format="csr", random_state=0))
    D = fm.matrix(np.ones((n, 10)))
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
