"""Fit time of every estimator under every fusion mode, beside scikit-learn's equivalent, on the
benchmark data of ``fusedml.datasets.estimator_data`` (used by ``fusedml demo`` and asv).

Our fits run a fixed iteration budget (tolerances 0), so every mode does the same work; sklearn's
estimators run to their own default convergence (their solvers differ, so no budget is comparable).
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sklearn.cluster
import sklearn.linear_model
import sklearn.svm

import fusedml as fm
from fusedml._timing import interleaved_median_seconds
from fusedml.algorithms import ALSCG, GLM, L2SVM, KMeans, MLogReg
from fusedml.datasets import estimator_data


@dataclass(frozen=True)
class Spec:
    make: Callable[[str], Any]  # fusion mode -> estimator with a fixed budget
    labels: str | None  # label kind (estimator_data.labels), None: unsupervised
    sklearn: Callable[[], Any] | None  # the equivalent sklearn estimator


SPECS = {
    "L2SVM": Spec(
        lambda m: L2SVM(reg=1.0, tol=0.0, max_iter=10, max_inner_iter=5, fusion=m), "binary",
        lambda: sklearn.svm.LinearSVC(C=0.5, fit_intercept=False, dual=False),
    ),
    "MLogReg": Spec(
        lambda m: MLogReg(reg=1.0, tol=0.0, max_iter=5, max_inner_iter=5, fusion=m), "multiclass",
        lambda: sklearn.linear_model.LogisticRegression(fit_intercept=False),
    ),
    "GLM": Spec(
        lambda m: GLM(family="poisson", link="log", tol=0.0, max_iter=5, max_inner_iter=5,
                      fusion=m),
        "counts", lambda: sklearn.linear_model.PoissonRegressor(fit_intercept=False, alpha=0.0),
    ),
    # the paper's GLM configuration: binomial with the probit link (a long cellwise chain)
    "GLM-probit": Spec(
        lambda m: GLM(family="binomial", link="probit", tol=0.0, max_iter=5, max_inner_iter=5,
                      fusion=m),
        "yes_no", None,
    ),
    "KMeans": Spec(
        lambda m: KMeans(n_clusters=10, n_init=1, max_iter=10, tol=0.0, random_state=0,
                         fusion=m),
        None, lambda: sklearn.cluster.KMeans(n_clusters=10, n_init=1, random_state=0),
    ),
    "ALSCG": Spec(
        lambda m: ALSCG(rank=10, reg=0.1, max_iter=2, tol=0.0, random_state=0, fusion=m),
        None, None,
    ),
}  # fmt: skip


def data_sets(name: str) -> tuple[str, ...]:
    return ("ratings",) if name == "ALSCG" else ("dense", "sparse")


def case(name: str, data: str, scale: float) -> tuple:
    """(X, y) of one estimator's benchmark data set (y None when unsupervised)."""
    if data == "ratings":
        return estimator_data.ratings(scale), None
    X, eta = estimator_data.design(data, scale)
    kind = SPECS[name].labels
    return X, estimator_data.labels(kind, eta) if kind else None


def cases(scale: float, estimators: tuple[str, ...] = tuple(SPECS)):
    """(estimator, data label, X, y) for each of ``estimators`` and its data sets."""
    for name in estimators:
        for data in data_sets(name):
            yield name, data, *case(name, data, scale)


def mode_seconds(
    name: str, X, y, repeat: int, modes: tuple[str, ...] = fm.FUSION_MODES
) -> dict[str, float | None]:
    """Fit seconds of each fusion mode and of sklearn's equivalent (None if it has none): medians
    after a warm-up fit each, the fits timed in turns, each started on an idle process."""
    estimators = {m: SPECS[name].make(m) for m in modes}
    fits = {m: (lambda e=e: e.fit(X, y)) for m, e in estimators.items()}
    make = SPECS[name].sklearn
    if make is not None:
        fits["sklearn"] = lambda: make().fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fixed budgets do not converge
        seconds: dict[str, float | None] = dict(
            interleaved_median_seconds(fits, repeat, settle=True)
        )
    seconds.setdefault("sklearn", None)
    return seconds


def table(
    scale: float,
    repeat: int,
    out=None,
    modes: tuple[str, ...] = fm.FUSION_MODES,
    estimators: tuple[str, ...] = tuple(SPECS),
) -> list[dict]:
    """Print and return fit seconds per estimator, data set and mode; ``modes`` must hold "none"
    and "cost_based" (the ratios' terms)."""
    out = out or sys.stdout
    print(
        f"Estimator fit times (s, median of {repeat} after a warm-up fit, modes timed in turns), "
        f"data scale {scale}: "
        "dense 1M x 10, sparse 200k x 1000 at 1 %, ratings 12k x 17770 at 1.2 % (x scale);\n"
        "fixed iteration budgets. 'none/gen' = speed-up of cost_based over operator-at-a-time; "
        "'gen/best' = cost_based over the fastest other mode; sklearn runs to convergence.",
        file=out,
    )
    head = f"{'estimator':10} {'data':7} " + " ".join(f"{m[:12]:>12}" for m in modes)
    head += f" {'none/gen':>9} {'gen/best':>9} {'sklearn':>9}"
    print(head, file=out)
    records = []
    for name, fmt, X, y in cases(scale, estimators):
        seconds = mode_seconds(name, X, y, repeat, modes)
        sk = seconds.pop("sklearn")
        gen = seconds["cost_based"]
        best = min((s for m, s in seconds.items() if m not in ("cost_based", "none")), default=None)
        record = {"estimator": name, "data": fmt, **seconds, "sklearn": sk}
        records.append(record)
        sk_text = f"{sk:9.3f}" if sk is not None else f"{'-':>9}"
        best_text = f"{gen / best:9.2f}" if best is not None else f"{'-':>9}"
        print(
            f"{name:10} {fmt:7} " + " ".join(f"{seconds[m]:12.3f}" for m in modes)
            + f" {seconds['none'] / gen:9.2f} {best_text} {sk_text}",
            file=out,
            flush=True,
        )  # fmt: skip
    return records
