"""The estimators inside Pipeline, GridSearchCV and cross_val_score, in parallel (n_jobs=2, loky
worker processes) and serially: the same scores."""

import numpy as np
import pytest
from fusedml.algorithms import ALSCG, GLM, L2SVM, KMeans, MLogReg
from fusedml.datasets import estimator_data
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from tests.algorithms.systemds_runs import data_file

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

CASES = {
    "L2SVM": (L2SVM(max_iter=20), "y_l2svm", {"l2svm__reg": [0.1, 1.0]}),
    "MLogReg": (MLogReg(max_iter=10), "y_mlogreg", {"mlogreg__reg": [0.1, 1.0]}),
    "GLM": (GLM(fit_intercept=True, max_iter=20), "y_poisson", {"glm__reg": [0.0, 10.0]}),
    "KMeans": (KMeans(n_clusters=5, n_init=2, random_state=0), None,
               {"kmeans__n_clusters": [4, 5]}),
    # folds split the users; each test user is folded in from its ratings (score: -RMSE)
    "ALSCG": (ALSCG(rank=3, max_iter=5, random_state=0), "ratings",
              {"alscg__reg": [0.1, 1.0]}),
}  # fmt: skip


@pytest.mark.parametrize("name", list(CASES))
def test_parallel_and_serial_scores_agree(name):
    estimator, label, grid = CASES[name]
    if label == "ratings":
        X, y = estimator_data.ratings(0.05), None  # 600 users x 17770 items
        pipe = make_pipeline(estimator)
    else:
        d = data_file("data/dense.npz")
        X = d["X"][:600]
        y = d[label][:600] if label else None
        pipe = make_pipeline(StandardScaler(), estimator)
    serial = cross_val_score(pipe, X, y, cv=3, n_jobs=1)
    parallel = cross_val_score(pipe, X, y, cv=3, n_jobs=2)
    np.testing.assert_allclose(parallel, serial, rtol=1e-9)
    search = GridSearchCV(pipe, grid, cv=3, n_jobs=2).fit(X, y)
    serial_search = GridSearchCV(pipe, grid, cv=3, n_jobs=1).fit(X, y)
    np.testing.assert_allclose(
        search.cv_results_["mean_test_score"], serial_search.cv_results_["mean_test_score"],
        rtol=1e-9,
    )  # fmt: skip
    assert search.best_params_ == serial_search.best_params_
