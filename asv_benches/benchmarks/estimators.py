"""Every estimator's fit (``fusedml reproduce``'s configurations: fixed iteration budgets, so every
mode does the same work) on dense, CSR and compressed data under every fusion mode, beside
scikit-learn's equivalent: ``time_fit``, ``peakmem_fit`` and ``track_score`` (the estimator's own
``score`` on the training data). One class per estimator; data from the data set registry at the
profile's scale (``experiments.generated_case``), loaded once per class in ``setup_cache``."""

from __future__ import annotations

import warnings

import sklearn.cluster
import sklearn.linear_model
import sklearn.svm

from fusedml.reproduce.experiments import EXPERIMENTS, FITS, generated_case

from .common import FORMATS, MODES, PROFILE, fetch, skip, store

SKLEARN = "sklearn"


def _sklearn(name: str, fusedml_estimator, n_samples: int):
    """scikit-learn's estimator of the same objective (regularization converted), run to its own
    convergence; None where it has none."""
    est = fusedml_estimator
    if name == "L2SVM":  # 1/2 sum(hinge^2) + reg/2 |w|^2 = reg * LinearSVC's objective at C
        return sklearn.svm.LinearSVC(C=0.5 / est.reg, fit_intercept=False, dual=False)
    if name == "MLogReg":
        return sklearn.linear_model.LogisticRegression(C=1 / est.reg, fit_intercept=False)
    if name == "GLM-poisson":  # sklearn scales the deviance by 1/(2n)
        return sklearn.linear_model.PoissonRegressor(alpha=est.reg / n_samples,
                                                     fit_intercept=False)  # fmt: skip
    if name == "KMeans":
        return sklearn.cluster.KMeans(est.n_clusters, n_init=1, max_iter=est.max_iter, tol=0.0,
                                      random_state=0, algorithm="lloyd")  # fmt: skip
    return None


def skip_reason(name: str, fmt: str, mode: str) -> str | None:
    """Why ``mode`` (a fusion mode or "sklearn") cannot fit ``name`` on ``fmt`` data."""
    if mode != SKLEARN:
        return None
    if name == "GLM-probit":
        return "scikit-learn has no probit link"
    if name == "ALS-CG":
        return "scikit-learn has no matrix factorization of observed ratings only"
    if fmt == "compressed":
        return "scikit-learn has no compressed format"
    return None


def _make(name: str, mode: str, data):
    """The estimator of experiment ``name`` under ``mode`` for data (X, y, iterations)."""
    X, _, iterations = data
    experiment = EXPERIMENTS[name]
    if mode == SKLEARN:
        return _sklearn(name, experiment.estimator("cost_based", iterations), X.shape[0])
    return experiment.estimator(mode, iterations)


class _Fit:
    estimator = ""
    params = (list(FORMATS), [*MODES, SKLEARN])
    param_names = ["format", "fusion"]
    timeout = 1800
    number = 1
    repeat = PROFILE.repeat

    def setup_cache(self):
        # asv keys a setup_cache by its source, so every subclass shares this one: it loads the
        # data of every estimator
        files = {}
        for experiment in FITS:
            for fmt in FORMATS:
                case = generated_case(experiment, fmt, PROFILE.preset)
                files[experiment.name, fmt] = store(f"{experiment.name}-{fmt}",
                                                    experiment.inputs(case))  # fmt: skip
        return files

    def setup(self, files, fmt, mode):
        reason = skip_reason(self.estimator, fmt, mode)
        if reason:
            skip(reason)
        data = fetch(files[self.estimator, fmt])
        self.X, self.y = data[:2]
        self.model = _make(self.estimator, mode, data)
        self.fit()  # trace, optimize, compile or load every kernel outside the timing

    def fit(self):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # fixed budgets do not converge, nor may sklearn
            return self.model.fit(self.X, self.y)

    def time_fit(self, files, fmt, mode):
        self.fit()

    def peakmem_fit(self, files, fmt, mode):
        self.fit()

    def track_score(self, files, fmt, mode):
        return float(self.model.score(self.X, self.y))


class L2SVM(_Fit):
    estimator = "L2SVM"


class MLogReg(_Fit):
    estimator = "MLogReg"


class GLMProbit(_Fit):
    estimator = "GLM-probit"


class GLMPoisson(_Fit):
    estimator = "GLM-poisson"


class KMeans(_Fit):
    estimator = "KMeans"


class ALSCG(_Fit):
    estimator = "ALS-CG"
