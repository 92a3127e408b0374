"""Same objective -> same solution: our estimators beside scikit-learn's and statsmodels' on the
bundled data sets (the SystemDS reference data), each run to tight convergence."""

import numpy as np
import pytest
import sklearn.linear_model as lm
import statsmodels.api as smapi
from fusedml.algorithms import GLM, L2SVM, MLogReg
from sklearn.svm import LinearSVC

from tests.algorithms.systemds_runs import data_file, max_rel
from tests.formats import FORMATS, csr

DENSE = "data/dense.npz"
# L-BFGS stops where the objective's decrease is lost in its rounding, ~1e-6 from the optimum
# (its coefficients' accuracy); the Newton-type default gets within 1e-6
SOLVERS = ("trust_region", "lbfgs")
RTOL = {"trust_region": 1e-6, "lbfgs": 1e-5}


@pytest.mark.parametrize("solver", ["cg", "newton"])
def test_l2svm_equals_linearsvc_squared_hinge(solver):
    d = data_file(DENSE)
    X, y = d["X"], d["y_l2svm"]
    reg = 1.0  # ours: 1/2 sum(hinge^2) + reg/2 ||w||^2  ==  LinearSVC with C = 1 / (2 reg), / reg
    ours = L2SVM(reg=reg, tol=1e-14, max_iter=2000, max_inner_iter=100, solver=solver).fit(X, y)
    ref = LinearSVC(C=1 / (2 * reg), loss="squared_hinge", fit_intercept=False, tol=1e-12,
                    max_iter=100_000, dual=False).fit(X, y)  # fmt: skip
    assert max_rel(ours.coef_, ref.coef_) <= 1e-4
    assert np.mean(ours.predict(X) == ref.predict(X)) >= 0.999


@pytest.mark.parametrize("solver", SOLVERS)
def test_mlogreg_unpenalized_equals_logistic_regression(solver):
    # with a penalty the two parametrizations differ (baseline class vs symmetric); unpenalized
    # both reach the maximum-likelihood probabilities
    d = data_file(DENSE)
    X, y = d["X"], d["y_mlogreg"]
    tol, max_iter = (1e-12, 200) if solver == "trust_region" else (1e-10, 5000)  # ill-conditioned
    ours = MLogReg(reg=0.0, fit_intercept=True, tol=tol, max_iter=max_iter, max_inner_iter=0,
                   solver=solver).fit(X, y)  # fmt: skip
    ref = lm.LogisticRegression(C=np.inf, solver="newton-cg", tol=1e-12, max_iter=1000).fit(X, y)
    assert max_rel(ours.predict_proba(X), ref.predict_proba(X)) <= 1e-5


@pytest.mark.parametrize(
    "family, label, sk",
    [
        ("poisson", "y_poisson", lambda a: lm.PoissonRegressor(alpha=a)),
        ("gamma", "y_gamma", lambda a: lm.GammaRegressor(alpha=a)),
        ("tweedie", "y_poisson", lambda a: lm.TweedieRegressor(power=1.5, alpha=a, link="log")),
    ],
)
@pytest.mark.parametrize("solver", SOLVERS)
def test_glm_equals_sklearn_glms(family, label, sk, solver):
    d = data_file(DENSE)
    X, y = d["X"], d[label]
    reg = 5.0  # ours: -loglik + reg/2 ||b||^2  ==  sklearn's mean deviance/2 + alpha/2 ||b||^2, x n
    ours = GLM(family=family, link="log", var_power=1.5, reg=reg, fit_intercept=True, tol=1e-14,
               max_iter=500, solver=solver).fit(X, y)  # fmt: skip
    ref = sk(reg / len(y)).set_params(solver="newton-cholesky", tol=1e-12, max_iter=1000).fit(X, y)
    assert max_rel(ours.coef_, ref.coef_) <= RTOL[solver]
    assert ours.intercept_ == pytest.approx(ref.intercept_, rel=RTOL[solver])
    assert ours.score(X, y) == pytest.approx(ref.score(X, y), rel=RTOL[solver])


@pytest.mark.parametrize(
    "family, link, label, sm_family",
    [
        ("binomial", "logit", "y_binomial", smapi.families.Binomial()),
        ("binomial", "cloglog", "y_binomial",
         smapi.families.Binomial(smapi.families.links.CLogLog())),
        ("poisson", "log", "y_poisson", smapi.families.Poisson()),
        ("gaussian", "identity", "y_poisson", smapi.families.Gaussian()),
        ("inverse_gaussian", "log", "y_gamma",
         smapi.families.InverseGaussian(smapi.families.links.Log())),
    ],
)  # fmt: skip
@pytest.mark.parametrize("solver", SOLVERS)
def test_glm_equals_statsmodels(family, link, label, sm_family, solver):
    d = data_file(DENSE)
    X, y = d["X"], d[label]
    ours = GLM(family=family, link=link, fit_intercept=True, tol=1e-14, max_iter=500, solver=solver)
    ours.fit(X, y)
    ref = smapi.GLM(y, np.column_stack([X, np.ones(len(y))]), family=sm_family).fit(tol=1e-14)
    assert max_rel(np.append(ours.coef_, ours.intercept_), ref.params) <= RTOL[solver]


def _weights(n):
    return np.random.default_rng(7).choice([0.0, 0.5, 1.0, 3.0], size=n)


@pytest.mark.parametrize("solver", ["cg", "newton"])
def test_weighted_l2svm_equals_weighted_linearsvc(solver):
    d = data_file(DENSE)
    X, y = d["X"], d["y_l2svm"]
    sw = _weights(len(y))
    ours = L2SVM(reg=1.0, tol=1e-14, max_iter=2000, max_inner_iter=100, solver=solver)
    ours.fit(X, y, sample_weight=sw)
    ref = LinearSVC(C=0.5, fit_intercept=False, tol=1e-12, max_iter=100_000, dual=False)
    ref.fit(X, y, sample_weight=sw)
    assert max_rel(ours.coef_, ref.coef_) <= 1e-4


def test_weighted_mlogreg_equals_weighted_logistic_regression():
    d = data_file(DENSE)
    X, y = d["X"], d["y_mlogreg"]
    sw = _weights(len(y))
    ours = MLogReg(reg=0.0, fit_intercept=True, tol=1e-12, max_iter=200, max_inner_iter=0)
    ours.fit(X, y, sample_weight=sw)
    ref = lm.LogisticRegression(C=np.inf, solver="newton-cg", tol=1e-12, max_iter=1000)
    ref.fit(X, y, sample_weight=sw)
    assert max_rel(ours.predict_proba(X), ref.predict_proba(X)) <= 1e-5


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("to_format", FORMATS)
def test_weighted_glm_equals_weighted_statsmodels_and_sklearn(to_format, solver):
    d = data_file(DENSE)
    X, y = d["X"], d["y_poisson"]
    sw = _weights(len(y))
    Xd = np.where(np.abs(X) > 0.5, X, 0.0) if to_format is csr else X  # zeros for CSR to skip
    Xf = to_format(Xd)
    ours = GLM(family="poisson", fit_intercept=True, tol=1e-14, max_iter=500, solver=solver)
    ours.fit(Xf, y, sample_weight=sw)
    ref = smapi.GLM(y, np.column_stack([Xd, np.ones(len(y))]), family=smapi.families.Poisson(),
                    freq_weights=sw).fit(tol=1e-14)  # fmt: skip
    assert max_rel(np.append(ours.coef_, ours.intercept_), ref.params) <= RTOL[solver]
    sk = lm.PoissonRegressor(alpha=0.0, solver="newton-cholesky", tol=1e-12, max_iter=1000)
    sk.fit(Xd, y, sample_weight=sw)
    assert ours.score(Xf, y, sample_weight=sw) == pytest.approx(
        sk.score(Xd, y, sample_weight=sw), rel=RTOL[solver]
    )
