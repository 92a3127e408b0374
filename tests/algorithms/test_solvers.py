"""The solvers other than SystemDS's (``solver=``): the same model in every fusion mode and
format, and unknown names refused. Their agreement with scikit-learn and statsmodels is in
``test_versus_sklearn.py``."""

import numpy as np
import pytest
from fusedml.algorithms import GLM, L2SVM, MLogReg

import fusedml as fm
from tests.algorithms.systemds_runs import load, max_rel, runs
from tests.formats import FORMATS

# (estimator, SystemDS run of its data, parameters of a fixed budget)
SOLVERS = {
    "GLM-lbfgs": (GLM, "glm", {"solver": "lbfgs", "max_iter": 6}),
    "MLogReg-lbfgs": (MLogReg, "multiLogReg", {"solver": "lbfgs", "max_iter": 6,
                                               "fit_intercept": True}),
    "L2SVM-newton": (L2SVM, "l2svm", {"solver": "newton", "max_iter": 3, "fit_intercept": True}),
}  # fmt: skip


# A compressed input in every mode but fuse_all: its fuse-all plan compiles 6-7 compressed Row
# kernels per solver (about a minute of CI each solver); fuse_all runs on dense and CSR, and the
# compressed kernels of the other fused modes are the ones users run.
MODES = {
    "dense": fm.FUSION_MODES,
    "csr": fm.FUSION_MODES,
    "compress": tuple(m for m in fm.FUSION_MODES if m != "fuse_all"),
}


@pytest.mark.parametrize("to_format", (*FORMATS, fm.compress), ids=lambda f: f.__name__)
@pytest.mark.parametrize("name", SOLVERS)
def test_every_fusion_mode_and_format_gives_the_same_model(name, to_format):
    estimator, data, params = SOLVERS[name]
    run = runs(data)[0]
    X, y, _ = load(run)
    X = np.round(X * 2) / 2  # few distinct values: a compressed matrix of DDC groups
    kwargs = {**run["estimator"]["kwargs"], **params} if estimator is GLM else params
    kwargs = {**kwargs, "tol": 0.0}
    base = estimator(**kwargs, fusion="none").fit(X, y)
    assert base.n_iter_ == params["max_iter"]
    for mode in MODES[to_format.__name__]:
        model = estimator(**kwargs, fusion=mode).fit(to_format(X), y)
        assert max_rel(model.coef_, base.coef_) <= 1e-9, mode


@pytest.mark.parametrize(("estimator", "wrong"), [(GLM, "newton"), (MLogReg, "newton"),
                                                  (L2SVM, "lbfgs")])  # fmt: skip
def test_unknown_solver_is_refused(estimator, wrong):
    with pytest.raises(ValueError, match="solver must be one of"):
        estimator(solver=wrong).fit(np.eye(3), [0.0, 1.0, 1.0])
