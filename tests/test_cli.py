"""The CLI's demo: every pattern under every mode, with checksums computed independently."""

import numpy as np
import scipy.sparse as sp
from fusedml.datasets import PATTERNS

import fusedml as fm
from fusedml import cli


def numpy_value(name, d):
    dense = {k: (v.toarray() if sp.issparse(v) else v) for k, v in d.items()}
    X = dense.get("X")
    if name == "sum(X*Y*Z)":
        return np.sum(X * dense["Y"] * dense["Z"])
    if name == "sum(X**2), sum(X*Y), sum(Y**2)":
        return np.sum(X**2) + np.sum(X * dense["Y"]) + np.sum(dense["Y"] ** 2)
    if name == "X.T @ (w * (X @ v))":
        return np.sum(X.T @ (dense["w"] * (X @ dense["v"])))
    if name == "sum(W * (U @ V.T)**2)":
        return np.sum(dense["W"] * (dense["U"] @ dense["V"].T) ** 2)
    Q = dense["P"] * (X @ dense["V"])
    return np.sum(X.T @ (Q - dense["P"] * Q.sum(axis=1, keepdims=True)))


def test_demo_table_covers_patterns_modes_and_matches_numpy(capsys):
    records = cli.demo("tiny", repeat=1)
    out = capsys.readouterr().out
    assert "fusion" in out and "checksum" in out
    expected_rows = sum(len(p.formats) for p in PATTERNS.values()) * len(fm.FUSION_MODES)
    assert len(records) == expected_rows
    for r in records:
        pattern = PATTERNS[r["pattern"]]
        want = numpy_value(pattern.name, pattern.make_data(cli.SIZES["tiny"], r["data"], 42))
        assert np.isclose(r["checksum"], want, rtol=1e-9), r


def test_main_explain(capsys):
    assert cli.main(["explain", "sum(X*Y*Z)", "--fusion", "none"]) == 0
    assert "Plan(fusion='none'" in capsys.readouterr().out


def test_estimator_table_smoke(capsys):
    """The demo's estimator table runs: a row per estimator and data set with a time per mode.
    Two modes and two estimators on tiny data: fit times are asv's (asv_benches/), and every
    estimator's model under every mode is tested in tests/algorithms."""
    from fusedml import estimator_bench

    modes, estimators = ("none", "cost_based"), ("L2SVM", "KMeans")
    records = estimator_bench.table(0.002, repeat=1, modes=modes, estimators=estimators)
    assert [(r["estimator"], r["data"]) for r in records] == [
        (name, fmt) for name in estimators for fmt in ("dense", "sparse")
    ]
    for r in records:
        assert set(r) == {"estimator", "data", *modes, "sklearn"}
        assert all(r[m] > 0 for m in (*modes, "sklearn"))
    assert "none/gen" in capsys.readouterr().out
    for name, spec in estimator_bench.SPECS.items():  # the rows not run here can be built
        assert all(spec.make(m).fusion == m for m in fm.FUSION_MODES), name
