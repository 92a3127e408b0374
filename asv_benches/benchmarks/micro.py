"""The paper's micro-benchmark patterns (one class per pattern: Cell, MAgg, two Row patterns, Outer)
on dense, CSR and compressed data under every fusion mode, beside hand-written numba
(``handwritten.py``), numexpr and numpy/scipy. Data: ``datasets.PATTERNS`` at the profile's rows,
made once per class in ``setup_cache`` with the reference result (``fusion="none"``); every
implementation's result is checked against it in ``setup``, before any timing."""

from __future__ import annotations

import numpy as np
from fusedml.datasets import PATTERNS

import fusedml as fm
from fusedml.reproduce.experiments import MICRO
from fusedml.reproduce.measure import PeakMemory, difference

from .common import FORMATS, MODES, PROFILE, fetch, skip, store
from .handwritten import KERNELS

BASELINES = ("hand-written numba", "numexpr", "numpy/scipy")
IMPLEMENTATIONS = (*MODES, *BASELINES)
EXPRESSIONS = {e.name: e.title for e in MICRO}  # pattern -> datasets.PATTERNS key
_DATA_FORMAT = {"dense": "dense", "csr": "sparse", "compressed": "compressed"}
TOLERANCE = 1e-8  # relative difference to the reference up to which a result agrees


def skip_reason(pattern: str, fmt: str, implementation: str) -> str | None:
    """Why ``implementation`` cannot run ``pattern`` on ``fmt`` data (None: it can)."""
    if implementation in MODES:
        return None
    if fmt == "compressed":
        return {
            "numpy/scipy": "numpy and scipy have no compressed format",
            "numexpr": "numexpr evaluates dense arrays only",
            "hand-written numba": "compressed column groups have one layout per encoding: the "
            "kernels over them are the generated ones",
        }[implementation]
    if implementation == "numexpr":
        if fmt == "csr":
            return "numexpr evaluates dense arrays only"
        if pattern not in ("cell", "magg"):
            return "numexpr has no matrix product"
    return None


def make_data(pattern: str, fmt: str, rows: int) -> dict:
    return PATTERNS[EXPRESSIONS[pattern]].make_data(rows, _DATA_FORMAT[fmt], 42)


def _numexpr(pattern: str, d: dict):
    import numexpr

    if pattern == "cell":
        return lambda: numexpr.evaluate("sum(X * Y * Z)", {k: d[k] for k in "XYZ"})
    names = {"X": d["X"], "Y": d["Y"]}
    return lambda: tuple(numexpr.evaluate(f"sum({e})", names) for e in ("X*X", "X*Y", "Y*Y"))


def _numpy(pattern: str, fmt: str, d: dict):
    """The expression in numpy (dense) or scipy.sparse (CSR) operations, as a user writes it."""
    if fmt == "csr":
        X = d.get("X")
        return {
            "cell": lambda: X.multiply(d["Y"]).multiply(d["Z"]).sum(),
            "magg": lambda: tuple(
                A.multiply(B).sum() for A, B in ((X, X), (X, d["Y"]), (d["Y"], d["Y"]))
            ),
            "outer": lambda: d["W"].multiply((d["U"] @ d["V"].T) ** 2).sum(),
        }.get(pattern) or _numpy(pattern, "dense", d)
    return {
        "cell": lambda: np.sum(d["X"] * d["Y"] * d["Z"]),
        "magg": lambda: (np.sum(d["X"] ** 2), np.sum(d["X"] * d["Y"]), np.sum(d["Y"] ** 2)),
        "row-mmchain": lambda: d["X"].T @ (d["w"] * (d["X"] @ d["v"])),
        "row-mlogreg": lambda: _mlogreg_numpy(d["X"], d["P"], d["V"]),
        "outer": lambda: np.sum(d["W"] * (d["U"] @ d["V"].T) ** 2),
    }[pattern]


def _mlogreg_numpy(X, P, V):
    Q = P * (X @ V)
    return X.T @ (Q - P * Q.sum(axis=1, keepdims=True))


def implementation(pattern: str, fmt: str, name: str, d: dict):
    """A callable computing ``pattern`` on data ``d`` by ``name`` (a fusion mode or baseline)."""
    if name in MODES:
        expr = PATTERNS[EXPRESSIONS[pattern]].build(d)
        return lambda: fm.evaluate(expr, fusion=name)
    if name == "hand-written numba":
        kernel = KERNELS[pattern][fmt]
        return lambda: kernel(d)
    return _numexpr(pattern, d) if name == "numexpr" else _numpy(pattern, fmt, d)


def _input_bytes(d: dict) -> int:
    total = 0
    for v in d.values():
        parts = (v.data, v.indices, v.indptr) if hasattr(v, "indptr") else (v,)
        total += sum(p.nbytes for p in parts)
    return total


class _Pattern:
    """asv: one pattern under every implementation on every format (``time_evaluate``), and the
    memory one call adds at its peak relative to the inputs' size."""

    pattern = ""
    params = (list(FORMATS), list(IMPLEMENTATIONS))
    param_names = ["format", "implementation"]
    timeout = 1200
    repeat = PROFILE.repeat

    def setup_cache(self):
        # asv keys a setup_cache by its source, so every subclass shares this one: it makes the
        # data of every pattern
        files = {}
        for pattern in EXPRESSIONS:
            rows = PROFILE.outer_rows if pattern == "outer" else PROFILE.rows
            for fmt in FORMATS:
                d = make_data(pattern, fmt, rows)
                reference = implementation(pattern, fmt, "none", d)()
                files[pattern, fmt] = store(f"{pattern}-{fmt}", (d, reference))
        return files

    def setup(self, files, fmt, name):
        reason = skip_reason(self.pattern, fmt, name)
        if reason:
            skip(reason)
        d, reference = fetch(files[self.pattern, fmt])
        self.input_bytes = _input_bytes(d)
        self.run = implementation(self.pattern, fmt, name, d)
        diff = difference(self.run(), reference)  # compiles or loads every kernel first
        if not diff <= TOLERANCE:
            raise AssertionError(f"{name} differs from the reference by {diff:.3g} (relative)")

    def time_evaluate(self, files, fmt, name):
        self.run()

    def track_peak_over_inputs(self, files, fmt, name):
        peak = PeakMemory()
        peak.start()
        self.run()
        added = peak.stop()
        return np.nan if added is None else added * 2**20 / self.input_bytes

    track_peak_over_inputs.unit = "x input size"


class Cell(_Pattern):
    """sum(X * Y * Z): the Cell template."""

    pattern = "cell"


class MAgg(_Pattern):
    """sum(X**2), sum(X*Y), sum(Y**2): the MAgg template (one pass, three aggregates)."""

    pattern = "magg"


class RowMMChain(_Pattern):
    """X.T @ (w * (X @ v)): the Row template (the mmchain)."""

    pattern = "row-mmchain"


class RowMLogReg(_Pattern):
    """X.T @ (Q - P * rowsum(Q)), Q = P * (X @ V): MLogReg's Hessian-vector body, a Row template
    with matrix side inputs."""

    pattern = "row-mlogreg"


class Outer(_Pattern):
    """sum(W * (U @ V.T)**2): the Outer template over a 1% non-zero W."""

    pattern = "outer"
