"""The experiments ``fusedml reproduce`` runs: the paper's micro-benchmark patterns (one per
template, reference/paper.md section 3) and its end-to-end fits with the paper's configurations
(section 4.1), each over the formats and data of the data set registry.

An experiment lists its cases per preset (quick or full): a case is one format, one data set and
one size. ``inputs(case)`` makes the data and ``run(inputs, mode)`` computes the result under one
fusion mode (what is timed; its value is what the modes must agree on).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

import fusedml as fm
from fusedml import datasets
from fusedml.algorithms import ALSCG, GLM, L2SVM, KMeans, MLogReg
from fusedml.datasets import PATTERNS
from fusedml.datasets.bodies import ITERATION_BODIES

FORMATS = ("dense", "csr", "compressed")


@dataclass(frozen=True)
class Case:
    """One format, data set and size of an experiment (``size``: rows for micro-benchmarks, the
    data set's scale for fits)."""

    experiment: str
    format: str
    data: str
    size: float
    iterations: int = 0  # a fit's iteration budget when not its configuration's (0)

    @property
    def key(self) -> tuple[str, str, str, float]:
        return (self.experiment, self.format, self.data, self.size)


@dataclass(frozen=True)
class Experiment:
    name: str
    kind: str  # "micro" or "fit"
    title: str  # the expression, or the algorithm and its configuration
    cases: Callable[[str], list[Case]]  # preset -> cases
    inputs: Callable[[Case], Any]  # case -> data (untimed)
    run: Callable[[Any, str], Any]  # (data, fusion mode) -> result (timed)
    body: str | None = None  # the iteration body ``fusedml explain`` shows (ITERATION_BODIES)
    tol: float = 1e-9  # relative difference up to which two modes' results agree
    # (case, mode) -> why that mode cannot run the case (None: it can)
    skip: Callable[[Case, str], str | None] = field(default=lambda case, mode: None)
    label: str | None = None  # a fit's label kind (GENERATED_DATA)
    budgets: dict[str, int] | None = None  # a fit's iteration budget per preset (0: its own)
    estimator: Callable[[str, int], Any] | None = None  # a fit's (mode, iterations) -> estimator


# ---------------------------------------------------------------------------- micro-benchmarks
MICRO_ROWS = {"tiny": (2_000,), "quick": (20_000, 200_000), "full": (20_000, 200_000, 2_000_000)}
# the Outer pattern's unfused plan materializes a dense (rows/10) x (rows/40) product
OUTER_ROWS = {"tiny": (2_000,), "quick": (20_000, 100_000), "full": (20_000, 100_000, 400_000)}
_PATTERN_FORMAT = {"dense": "dense", "csr": "sparse", "compressed": "compressed"}


def _micro(
    name: str, pattern: str, formats: tuple[str, ...], rows=MICRO_ROWS, quick=FORMATS
) -> Experiment:
    """A micro-benchmark of PATTERNS[pattern]; ``quick``: its formats in the quick preset."""

    def cases(preset: str) -> list[Case]:
        keep = quick if preset == "quick" else formats
        return [Case(name, f, "generated", r) for f in formats if f in keep for r in rows[preset]]

    def inputs(case: Case):
        data = PATTERNS[pattern].make_data(int(case.size), _PATTERN_FORMAT[case.format], 42)
        return data.get("X", data.get("W")), PATTERNS[pattern].build(data)

    def run(inputs, mode: str):
        return fm.evaluate(inputs[1], fusion=mode)

    return Experiment(name, "micro", pattern, cases, inputs, run)


MICRO = (
    _micro("cell", "sum(X*Y*Z)", FORMATS),
    _micro("magg", "sum(X**2), sum(X*Y), sum(Y**2)", FORMATS),
    _micro("row-mmchain", "X.T @ (w * (X @ v))", FORMATS),
    # compressed in full only: its two compressed Row kernels take 20 s to compile
    _micro(
        "row-mlogreg", "X.T @ (Q - P * rowsum(Q)), Q = P * (X @ V)", FORMATS, quick=("dense", "csr")
    ),
    _micro("outer", "sum(W * (U @ V.T)**2)", ("csr",), OUTER_ROWS),
)


# ---------------------------------------------------------------------------- end-to-end fits
# data scale per preset and format (scale 1: dense 1M x 10, CSR 200k x 1000 at 1%, the
# Airline78-like table 1M x 28, Netflix-like ratings 12k x 17,770); real data has one size
FIT_SCALES = {
    "tiny": {"dense": 0.002, "csr": 0.01, "compressed": 0.002, "ratings": 0.02},
    "quick": {"dense": 0.1, "csr": 0.1, "compressed": 0.1, "ratings": 0.01},
    "full": {"dense": 1.0, "csr": 1.0, "compressed": 1.0, "ratings": 0.1},
}
# the generated data set standing for each label kind in each format (the asv suite covers them
# all); reproduce runs counts on dense data and ratings on CSR only, their natural formats, and adds
# real data (fixed size) in quick and full when its package is installed
AIRLINE = "airline_like"
GENERATED_DATA = {
    "binary": {"dense": "dense_binary", "csr": "sparse_binary", "compressed": AIRLINE},
    "yes_no": {"dense": "dense_yes_no", "csr": "sparse_binary", "compressed": AIRLINE},
    "multiclass": {"dense": "dense_multiclass", "csr": "sparse_multiclass", "compressed": AIRLINE},
    "none": {"dense": "dense_unlabeled", "csr": "sparse_binary", "compressed": AIRLINE},
    "counts": {"dense": "dense_counts", "csr": "sparse_counts", "compressed": AIRLINE},
    "ratings": dict.fromkeys(FORMATS, "netflix_like"),
}
REPRODUCED_FORMATS = {"counts": ("dense",), "ratings": ("csr",)}
GENERATED = {
    label: tuple((f, data[f]) for f in REPRODUCED_FORMATS.get(label, FORMATS))
    for label, data in GENERATED_DATA.items()
}
# (format, data set, scale, iterations) added in the full preset: Mnist8m-like digits (20k x 784 at
# 25%). Amazon-like ratings are not here: at 8k users x 2.33M books one ALS-CG fit of 2 iterations
# took over 5 minutes (its dense 2.33M x 20 item factors), which no preset can afford
FULL_ONLY = {
    "multiclass": (("csr", "mnist8m_like", 0.2, 0),),
}
REAL = {
    "binary": (("dense", "flights"), ("compressed", "flights")),
    "yes_no": (),
    "multiclass": (("csr", "mnist5k"),),
    "counts": (("dense", "randhie"),),
    "none": (("dense", "flights"), ("compressed", "flights")),
    "ratings": (("csr", "movielens_small"),),
}
# --quick keeps to 5 minutes with a cold kernel cache (a compressed Row kernel compiles in about
# 10 s): real data only for the paper's Airline stand-in, compressed, and the counts of the
# Poisson GLM, compressed fits only for L2SVM and KMeans; --full runs every case
QUICK_REAL = {("L2SVM", "compressed", "flights"), ("GLM-poisson", "dense", "randhie")}
QUICK_COMPRESSED_FITS = {"L2SVM", "KMeans"}


def _in_quick(case: Case) -> bool:
    if datasets.REGISTRY[case.data].package is not None:
        return (case.experiment, case.format, case.data) in QUICK_REAL
    return case.format != "compressed" or case.experiment in QUICK_COMPRESSED_FITS


# what the estimators' labels are made of, from a data set's own label
_LABELS: dict[str, Callable[[np.ndarray | None], np.ndarray | None]] = {
    "binary": lambda y: y,
    "yes_no": lambda y: (y > 0).astype(np.float64) if set(np.unique(y)) == {-1.0, 1.0} else y,
    "multiclass": lambda y: (y > 0) + 1.0 if set(np.unique(y)) == {-1.0, 1.0} else y,
    # a binary label read as 0/1 counts (the Poisson GLM on the Airline-like table)
    "counts": lambda y: (y > 0).astype(np.float64) if set(np.unique(y)) == {-1.0, 1.0} else y,
    "none": lambda y: None,
    "ratings": lambda y: None,
}


def generated_case(experiment: Experiment, fmt: str, preset: str) -> Case:
    """The case of fit ``experiment`` on the generated data set of format ``fmt`` at the scale of
    ``preset`` (tiny, quick or full)."""
    label = experiment.label
    scale = FIT_SCALES[preset]["ratings" if label == "ratings" else fmt]
    budget = (experiment.budgets or {}).get(preset, 0)
    return Case(experiment.name, fmt, GENERATED_DATA[label][fmt], scale, budget)


def _fit_cases(name: str, label: str) -> Callable[[str], list[Case]]:
    def cases(preset: str) -> list[Case]:
        experiment = EXPERIMENTS[name]
        found = [generated_case(experiment, fmt, preset) for fmt, _ in GENERATED[label]]
        budget = (experiment.budgets or {}).get(preset, 0)
        if preset != "tiny":
            found += [
                Case(name, fmt, data, 1.0, budget)
                for fmt, data in REAL[label]
                if datasets.REGISTRY[data].installed
            ]
        if preset == "full":
            found += [Case(name, *spec) for spec in FULL_ONLY.get(label, ())]
        return [c for c in found if _in_quick(c)] if preset == "quick" else found

    return cases


def _standardized(X: Any) -> Any:
    """Columns scaled to mean 0 and standard deviation 1 (a dense matrix's few distinct values per
    column stay as few); CSR data is scaled by its largest value, keeping its zeros."""
    if sp.issparse(X):
        top = np.abs(X.data).max() if X.nnz else 1.0
        return X / top
    sd = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)


def _fit_inputs(label: str) -> Callable[[Case], Any]:
    def inputs(case: Case):
        X, y = datasets.load(case.data, scale=case.size, format="dense" if
                             case.format == "compressed" else case.format)  # fmt: skip
        if label != "ratings":
            X = _standardized(X)
        if case.format == "compressed":
            X = fm.compress(X)
        return X, _LABELS[label](y), case.iterations

    return inputs


def _coefficients(model: Any) -> Any:
    for name in ("coef_", "cluster_centers_"):
        if hasattr(model, name):
            return getattr(model, name)
    return model.user_factors_, model.item_factors_


def _fit(make: Callable[[str, int], Any]) -> Callable[[Any, str], Any]:
    """(data, mode) -> the fitted coefficients; ``make(mode, iterations)`` builds the estimator
    (iterations: the case's budget, 0 for the configuration's)."""

    def run(data, mode: str):
        X, y, iterations = data
        return _coefficients(make(mode, iterations).fit(X, y))

    return run


def _fit_experiment(
    name: str,
    title: str,
    label: str,
    make: Callable[[str, int], Any],
    body: str | None = None,
    budgets: dict[str, int] | None = None,
) -> Experiment:
    """A fit of ``make(mode, iterations)`` on the data sets of ``label``; modes agree to 1e-6."""
    return Experiment(name, "fit", title, _fit_cases(name, label), _fit_inputs(label), _fit(make),
                      body=body, tol=1e-6, label=label, budgets=budgets,
                      estimator=make)  # fmt: skip


def _glm(family: str, link: str):
    return lambda m, _: GLM(family=family, link=link, reg=1e-3, tol=0.0, max_iter=20,
                            max_inner_iter=10, fusion=m)  # fmt: skip


FITS = (
    _fit_experiment(
        "L2SVM", "L2SVM reg=1e-3, 20 iterations (20 line-search steps at most)", "binary",
        lambda m, _: L2SVM(reg=1e-3, tol=0.0, max_iter=20, max_inner_iter=20, fusion=m),
        body="l2svm",
    ),
    _fit_experiment(
        "MLogReg", "MLogReg reg=1e-3, 20 outer / 10 inner iterations", "multiclass",
        lambda m, _: MLogReg(reg=1e-3, tol=0.0, max_iter=20, max_inner_iter=10, fusion=m),
        body="mlogreg",
    ),
    _fit_experiment(
        "GLM-probit", "GLM binomial-probit reg=1e-3, 20 outer / 10 inner iterations", "yes_no",
        _glm("binomial", "probit"), body="glm_binomial_probit",
    ),
    _fit_experiment(
        "GLM-poisson", "GLM Poisson-log reg=1e-3, 20 outer / 10 inner iterations", "counts",
        _glm("poisson", "log"),
    ),
    _fit_experiment(
        "KMeans", "KMeans k=5, 1 run, 20 iterations", "none",
        lambda m, _: KMeans(n_clusters=5, n_init=1, max_iter=20, tol=0.0, random_state=0,
                            fusion=m),
        body="kmeans",
    ),
    _fit_experiment(
        "ALS-CG", "ALS-CG rank 20, weighted L2 reg=1e-3, 20 iterations (quick 1, full 5)",
        "ratings",
        lambda m, it: ALSCG(rank=20, reg=1e-3, reg_type="wL2", max_iter=it or 20, tol=0.0,
                            random_state=0, fusion=m),
        body="alscg", budgets={"tiny": 1, "quick": 1, "full": 5},
    ),
)  # fmt: skip

EXPERIMENTS: dict[str, Experiment] = {e.name: e for e in (*MICRO, *FITS)}


def explain(name: str, fusion: str = "cost_based", rows: int = 100_000) -> fm.Plan:
    """The plan of experiment ``name``: its expression over ``rows`` rows of dense data (the
    micro-benchmarks) or its algorithm's iteration body (the fits)."""
    experiment = EXPERIMENTS[name]
    if experiment.kind == "fit" and experiment.body is None:
        raise ValueError(f"{name} has no iteration body to explain")
    if experiment.body is None:
        fmt = experiment.cases("tiny")[0].format
        _, expr = experiment.inputs(Case(name, fmt, "generated", rows))
        return fm.explain(expr, fusion=fusion)
    fn, make = ITERATION_BODIES[experiment.body]
    return fm.jit(fn).explain(*make(rows), fusion=fusion)
