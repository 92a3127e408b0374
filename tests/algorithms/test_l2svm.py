"""L2SVM against SystemDS's l2svm (same data, same parameters), sklearn's LinearSVC, and itself
under every fusion mode."""

import numpy as np
import pytest
from fusedml.algorithms import L2SVM

import fusedml as fm
from tests.algorithms.systemds_runs import load, max_rel, runs
from tests.formats import FORMATS, csr


@pytest.mark.parametrize("run", runs("l2svm"), ids=lambda r: r["name"])
def test_matches_systemds(run):
    X, y, out = load(run)
    model = L2SVM(**run["estimator"]["kwargs"]).fit(X, y)
    w = np.append(model.coef_.ravel(), model.intercept_) if model.fit_intercept else model.coef_
    trace = run["trace"]
    # fixed-budget runs replay SystemDS's iterations; converged ones stop where it stopped
    assert model.n_iter_ == trace["n_iter"]
    assert max_rel(model.decision_function(X), out["scores"]) <= 1e-6
    assert max_rel(np.ravel(w), out["w"]) <= 1e-6


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("to_format", FORMATS)
def test_every_fusion_mode_gives_the_same_model(to_format, weighted):
    X, y, _ = load(runs("l2svm")[0])
    if to_format is csr:  # zeros for CSR to skip
        X = np.where(np.abs(X) > 3, X, 0.0)
    X = to_format(X)
    sw = np.random.default_rng(3).choice([0.0, 0.5, 2.0], size=len(y)) if weighted else None
    base = L2SVM(max_iter=15, tol=0.0, fusion="none").fit(X, y, sample_weight=sw)
    for mode in fm.FUSION_MODES[1:]:
        model = L2SVM(max_iter=15, tol=0.0, fusion=mode).fit(X, y, sample_weight=sw)
        assert max_rel(model.coef_, base.coef_) <= 1e-6, mode
