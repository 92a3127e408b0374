"""Time to scikit-learn's solution: each estimator beside its scikit-learn equivalent on the same
objective, timed at the smallest iteration budget that reaches scikit-learn's objective value.

Protocol (per estimator x data set): scikit-learn's estimator is fitted at its defaults (its own
convergence test); its coefficients are scored by the objective written in numpy, in fusedml's
parametrization (regularization converted, reg = 1, no intercept). fusedml's estimator runs with
``tol=0`` at budgets 1, 2, 4, ... and then by bisection, until the smallest budget whose model
scores at most that value plus ``RTOL`` times its magnitude is found (the Poisson objective
without its constant can be negative). Where the two parametrizations differ
(MLogReg: a baseline class against scikit-learn's symmetric one), the target is fusedml's own
optimum instead (its objective fitted to ``tol=1e-12``). Both fits are then timed (medians, in
turns, after a warm-up fit: compilation excluded).
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
import sklearn.cluster
import sklearn.linear_model
import sklearn.svm
from sklearn.datasets import load_digits

import fusedml as fm
from fusedml import datasets
from fusedml._timing import interleaved_median_seconds
from fusedml.algorithms import GLM, L2SVM, KMeans, MLogReg
from fusedml.datasets import estimator_data

RTOL = 1e-6
REG = 1.0
MAX_BUDGET = 4096


def _scores(X, W) -> np.ndarray:
    return np.asarray(X @ W)


def l2svm_objective(X, y, coef) -> float:
    """1/2 sum(max(0, 1 - y * X @ w)**2) + reg/2 ||w||**2."""
    hinge = np.maximum(0.0, 1.0 - y * _scores(X, np.ravel(coef)))
    return 0.5 * float(hinge @ hinge) + 0.5 * REG * float(np.sum(np.square(coef)))


def poisson_objective(X, y, coef) -> float:
    """-loglik (without its constant) + reg/2 ||w||**2: sum(exp(X @ w) - y * X @ w)."""
    eta = _scores(X, np.ravel(coef))
    return float(np.sum(np.exp(eta) - y * eta)) + 0.5 * REG * float(np.sum(np.square(coef)))


def mlogreg_objective(X, y, coef) -> float:
    """-sum(log P(y_i)) + reg/2 ||B||**2 over fusedml's classes (the baseline's row is zero)."""
    S = _scores(X, np.asarray(coef).T)
    top = S.max(axis=1, keepdims=True)
    log_p = S - top - np.log(np.exp(S - top).sum(axis=1, keepdims=True))
    codes = np.searchsorted(np.unique(y), y)
    return -float(log_p[np.arange(len(y)), codes].sum()) + 0.5 * REG * float(np.sum(coef**2))


def kmeans_objective(X, y, centers) -> float:
    """The inertia: every record's squared distance to its nearest center, summed."""
    sq = np.asarray(X.multiply(X).sum(axis=1)).ravel() if sp.issparse(X) else np.sum(X * X, 1)
    D = sq[:, None] - 2.0 * _scores(X, centers.T) + np.sum(centers * centers, axis=1)
    return float(np.sum(np.maximum(D.min(axis=1), 0.0)))


CLUSTERS = 10


def first_centers(X, n_clusters, random_state=None):
    """The same initial centers for both KMeans (scikit-learn's callable ``init`` protocol):
    ``n_clusters`` records drawn with a fixed seed, dense."""
    rows = np.random.default_rng(0).choice(X.shape[0], n_clusters, replace=False)
    C = X[np.sort(rows)]
    return C.toarray() if sp.issparse(C) else np.array(C)


@dataclass(frozen=True)
class Race:
    """One estimator's race: ``ours(solver, max_iter)``, scikit-learn's equivalent and the
    objective of a fitted model's ``attribute`` (its coefficients or centers)."""

    ours: Callable[[str, int], Any]
    sklearn: Callable[[int], Any]  # n_samples -> estimator
    objective: Callable[[Any, Any, Any], float]
    labels: str  # estimator_data's label kind
    solvers: tuple[str, ...]
    own_objective: bool = False
    attribute: str = "coef_"


RACES = {
    "L2SVM": Race(
        lambda s, k: L2SVM(reg=REG, tol=0.0, max_iter=k, solver="cg" if s == "default" else s),
        # 1/2 sum(hinge^2) + reg/2 |w|^2 = reg * LinearSVC's objective at C = 1 / (2 reg)
        lambda n: sklearn.svm.LinearSVC(C=0.5 / REG, fit_intercept=False, dual=False),
        l2svm_objective, "binary", ("default", "newton"),
    ),
    "GLM-poisson": Race(
        lambda s, k: GLM(family="poisson", reg=REG, tol=0.0, max_iter=k,
                         solver="trust_region" if s == "default" else s),
        # sklearn: mean deviance / 2 + alpha/2 |w|^2 = (ours) / n at alpha = reg / n
        lambda n: sklearn.linear_model.PoissonRegressor(alpha=REG / n, fit_intercept=False),
        poisson_objective, "counts", ("default", "lbfgs"),
    ),
    "MLogReg": Race(
        lambda s, k: MLogReg(reg=REG, tol=0.0, max_iter=k,
                             solver="trust_region" if s == "default" else s),
        lambda n: sklearn.linear_model.LogisticRegression(C=1 / REG, fit_intercept=False),
        mlogreg_objective, "multiclass", ("default", "lbfgs"), own_objective=True,
    ),
    # Lloyd from the same centers ("lloyd": scikit-learn's iteration; SystemDS's max_iter counts
    # the evaluated centroids, one more than scikit-learn's updates)
    "KMeans": Race(
        lambda s, k: KMeans(n_clusters=CLUSTERS, init=first_centers, n_init=1, max_iter=k,
                            tol=0.0, algorithm="systemds" if s == "default" else s),
        lambda n: sklearn.cluster.KMeans(CLUSTERS, init=first_centers, n_init=1,
                                         algorithm="lloyd"),
        kmeans_objective, "binary", ("default", "lloyd"), attribute="cluster_centers_",
    ),
}  # fmt: skip


# real data from the registry (fixed sizes: ``scale`` does not apply), and what a pipeline would
# do to it first: flights' columns (minutes, miles, clock times in the thousands) standardized,
# MNIST's pixels divided by 255
REAL = {"flights": "standardize", "mnist5k": "pixels", "randhie": None}


def data(name: str, kind: str, scale: float):
    """(X, y) of a data set: estimator_data's dense/sparse designs, scikit-learn's digits (8x8
    images scaled to [0, 1]; binary: digits below 5 against the rest) or a real data set of the
    registry (ImportError when its package is missing)."""
    if name == "digits":
        X, digit = load_digits(return_X_y=True)
        X = X / 16.0
        if kind == "binary":
            return X, np.where(digit < 5, 1.0, -1.0)
        return X, digit.astype(np.float64)
    if name in REAL:
        X, y = datasets.load(name)
        if REAL[name] == "standardize":
            X = (X - X.mean(axis=0)) / np.where(X.std(axis=0) > 0, X.std(axis=0), 1.0)
        elif REAL[name] == "pixels":
            X = X / 255.0
        return X, y
    X, eta = estimator_data.design(name, scale)
    return X, estimator_data.labels(kind, eta)


def _objective_of(race: Race, X, y, model) -> float:
    return race.objective(X, y, getattr(model, race.attribute))


def fit(make: Callable[[], Any], X, y) -> Any:
    """``make()`` fitted on (X, y), fusedml's kernels compiled before they run: the default
    background compiles would time the unfused plan until every kernel is ready."""
    with warnings.catch_warnings(), fm.config(compile="eager"):
        warnings.simplefilter("ignore")  # fixed budgets and scikit-learn's defaults do not converge
        return make().fit(X, y)


def smallest_budget(race: Race, solver: str, X, y, target: float) -> tuple[int | None, float]:
    """(the smallest budget whose model's objective is at most ``target``, that objective);
    (None, best objective) when ``MAX_BUDGET`` does not reach it."""
    low, k = 0, 1
    value = _objective_of(race, X, y, fit(lambda: race.ours(solver, k), X, y))
    while value > target:
        if k >= MAX_BUDGET:
            return None, value
        low, k = k, 2 * k
        value = _objective_of(race, X, y, fit(lambda k=k: race.ours(solver, k), X, y))
    best = value
    while k - low > 1:  # reached at k, not at low
        mid = (low + k) // 2
        value = _objective_of(race, X, y, fit(lambda m=mid: race.ours(solver, m), X, y))
        if value <= target:
            k, best = mid, value
        else:
            low = mid
    return k, best


def target_of(race: Race, X, y) -> tuple[float, Any]:
    """(the objective value to reach, scikit-learn's fitted estimator)."""
    sk = fit(lambda: race.sklearn(X.shape[0]), X, y)
    if race.own_objective:
        tight = fit(lambda: race.ours("default", 1000).set_params(tol=1e-12), X, y)
        value = _objective_of(race, X, y, tight)
    else:
        value = _objective_of(race, X, y, sk)
    return value + RTOL * abs(value), sk


def run(estimator: str, data_name: str, scale: float, repeat: int) -> list[dict]:
    """Records of one race: one per solver, with the budget found and the medians."""
    race = RACES[estimator]
    X, y = data(data_name, race.labels, scale)
    target, sk = target_of(race, X, y)
    records = []
    for solver in race.solvers:
        budget, value = smallest_budget(race, solver, X, y, target)
        fits = {"sklearn": lambda: fit(lambda: race.sklearn(X.shape[0]), X, y)}
        if budget is not None:
            fits["fusedml"] = lambda b=budget, s=solver: fit(lambda: race.ours(s, b), X, y)
        seconds = interleaved_median_seconds(fits, repeat, settle=True)
        records.append({
            "estimator": estimator, "data": data_name, "solver": solver,
            "shape": X.shape, "sparse": sp.issparse(X), "target": target, "objective": value,
            "budget": budget, "sklearn_iter": int(np.max(sk.n_iter_)),
            "sklearn_s": seconds["sklearn"], "fusedml_s": seconds.get("fusedml"),
            "own_objective": race.own_objective,
        })  # fmt: skip
    return records


CASES = (
    ("L2SVM", "dense"), ("L2SVM", "sparse"), ("L2SVM", "digits"),
    ("MLogReg", "dense"), ("MLogReg", "sparse"), ("MLogReg", "digits"),
    ("GLM-poisson", "dense"), ("GLM-poisson", "sparse"),
    ("KMeans", "dense"), ("KMeans", "sparse"), ("KMeans", "digits"),
    ("L2SVM", "flights"), ("MLogReg", "mnist5k"), ("GLM-poisson", "randhie"), ("KMeans", "flights"),
)  # fmt: skip


def table(scale: float, repeat: int, cases=CASES, out=None) -> list[dict]:
    """Print and return every case's records."""
    out = out or sys.stdout
    print(
        f"Time to scikit-learn's objective (reg {REG}, no intercept; fusedml at the smallest "
        f"budget reaching it to {RTOL:g} relative, tol=0; medians of {repeat} after a warm-up, "
        f"each fit started on an idle process, compile excluded); data scale {scale}; "
        f"* = fusedml's own optimum as the target",
        file=out,
    )
    print(
        f"{'estimator':12} {'data':7} {'solver':8} {'sklearn s':>9} {'(iter)':>6} "
        f"{'budget':>6} {'fusedml s':>9} {'sklearn/fusedml':>15}",
        file=out,
    )
    records = []
    for estimator, data_name in cases:
        try:
            case = run(estimator, data_name, scale, repeat)
        except ImportError as exc:  # a real data set whose package is not installed
            print(f"{estimator:12} {data_name:7} skipped: {exc}", file=out, flush=True)
            continue
        for r in case:
            records.append(r)
            mark = "*" if r["own_objective"] else ""
            ours = r["fusedml_s"]
            ratio = f"{r['sklearn_s'] / ours:15.2f}" if ours else f"{'not reached':>15}"
            budget = r["budget"] if r["budget"] is not None else f">{MAX_BUDGET}"
            ours_text = f"{ours:9.3f}" if ours else f"{'-':>9}"
            print(
                f"{estimator + mark:12} {data_name:7} {r['solver']:8} {r['sklearn_s']:9.3f} "
                f"{r['sklearn_iter']:6} {budget:>6} {ours_text} {ratio}",
                file=out,
                flush=True,
            )
    return records
