"""GLM against SystemDS's glm (16 runs: Poisson/Gamma log, binomial logit/probit; dense and
sparse; fixed budget and converged), and under every fusion mode."""

import numpy as np
import pytest
import scipy.sparse as sp
from fusedml.algorithms import GLM

import fusedml as fm
from tests.algorithms.systemds_runs import load, max_rel, runs


@pytest.mark.parametrize("run", runs("glm"), ids=lambda r: r["name"])
def test_matches_systemds(run):
    X, y, out = load(run)
    model = GLM(**run["estimator"]["kwargs"]).fit(X, y)
    beta = np.append(model.coef_, model.intercept_) if model.fit_intercept else model.coef_
    assert model.n_iter_ == run["trace"]["n_iter"]
    assert max_rel(beta, out["B"]) <= 1e-6
    mean = out["mean"][:, 0] if out["mean"].ndim == 2 else out["mean"]
    assert max_rel(model.predict(X), mean) <= 1e-6
    assert model.deviance_ == pytest.approx(run["trace"]["deviance_unscaled"], rel=1e-6)


@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_every_fusion_mode_gives_the_same_model(fmt):
    run = runs("glm")[0]
    X, y, _ = load(run)
    if fmt == "csr":
        X = sp.csr_array(np.where(np.abs(X) > 3, X, 0.0))
    kwargs = {**run["estimator"]["kwargs"], "max_iter": 3}
    base = GLM(**kwargs, fusion="none").fit(X, y)
    for mode in fm.FUSION_MODES[1:]:
        model = GLM(**kwargs, fusion=mode).fit(X, y)
        assert max_rel(model.coef_, base.coef_) <= 1e-6, mode
