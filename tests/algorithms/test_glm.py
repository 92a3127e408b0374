"""GLM against SystemDS's glm (16 runs: Poisson/Gamma log, binomial logit/probit; dense and
sparse; fixed budget and converged), and under every fusion mode."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from fusedml.algorithms import GLM
from sklearn.exceptions import ConvergenceWarning

import fusedml as fm
from tests.algorithms.systemds_runs import data_file, load, max_rel, runs
from tests.formats import FORMATS, csr


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


@pytest.mark.parametrize("to_format", FORMATS)
def test_every_fusion_mode_gives_the_same_model(to_format):
    run = runs("glm")[0]
    X, y, _ = load(run)
    if to_format is csr:  # zeros for CSR to skip
        X = np.where(np.abs(X) > 3, X, 0.0)
    X = to_format(X)
    kwargs = {**run["estimator"]["kwargs"], "max_iter": 3}
    sw = np.random.default_rng(3).choice([0.0, 0.5, 2.0], size=len(y))
    for weights in (None, sw):
        base = GLM(**kwargs, fusion="none").fit(X, y, sample_weight=weights)
        for mode in fm.FUSION_MODES[1:]:
            model = GLM(**kwargs, fusion=mode).fit(X, y, sample_weight=weights)
            assert max_rel(model.coef_, base.coef_) <= 1e-6, mode


# one run per family and link: the others repeat the same kernels (compile time is CI time)
@pytest.mark.parametrize(
    "run", [r for r in runs("glm") if r["name"].endswith("dense_fixed")], ids=lambda r: r["name"]
)
def test_every_family_and_link_fuses_to_the_reference_model(run):
    """The family/link arithmetic is traced into the fused bodies: with fusion forced on (no
    compile cost in the model), fuse_all's and cost_based's kernels give the reference's model,
    dense and CSR."""
    X, y, _ = load(run)
    kwargs = {**run["estimator"]["kwargs"], "max_iter": 3, "tol": 0.0}
    dense = X.toarray() if sp.issparse(X) else X
    for Xf in (dense, sp.csr_array(np.where(np.abs(dense) > 1, dense, 0.0))):
        base = GLM(**kwargs, fusion="none").fit(Xf, y)
        with fm.config(compile_s=0.0), warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            fm.reset_stats()
            for mode in ("fuse_all", "cost_based"):
                model = GLM(**kwargs, fusion=mode).fit(Xf, y)
                assert max_rel(model.coef_, base.coef_) <= 1e-6, mode
            assert fm.stats().get("kernels_executed", 0) > 0


@pytest.mark.parametrize(
    "kwargs, label",
    [
        (dict(family="gaussian", link="identity"), "y_poisson"),
        (dict(family="gaussian", link="log"), "y_poisson"),
        (dict(family="poisson", link="sqrt"), "y_poisson"),
        (dict(family="poisson", link="identity"), "y_poisson"),
        (dict(family="gamma", link="inverse"), "y_gamma"),
        (dict(family="gamma", link="identity"), "y_gamma"),
        (dict(family="inverse_gaussian", link="log"), "y_gamma"),
        (dict(family="tweedie", var_power=1.5, link="log"), "y_poisson"),
        (dict(family="tweedie", var_power=1.5, link="power", link_power=0.25), "y_poisson"),
        (dict(family="binomial", link="cloglog"), "y_binomial"),
        (dict(family="binomial", link="cauchit"), "y_binomial"),
        (dict(family="binomial", link="log"), "y_binomial"),
        (dict(family="binomial", link="sqrt"), "y_binomial"),
    ],
    ids=lambda v: "-".join(str(x) for x in v.values()) if isinstance(v, dict) else v,
)
def test_other_families_and_links_fuse_to_the_reference_model(kwargs, label):
    d = data_file("data/dense.npz")
    X, y = d["X"], d[label]
    params = {**kwargs, "fit_intercept": True, "max_iter": 3, "tol": 0.0}
    base = GLM(**params, fusion="none").fit(X, y)
    with fm.config(compile_s=0.0), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for mode in ("fuse_all", "cost_based"):
            model = GLM(**params, fusion=mode).fit(X, y)
            np.testing.assert_allclose(model.coef_, base.coef_, rtol=1e-6, atol=1e-12)
            assert model.n_iter_ == base.n_iter_
