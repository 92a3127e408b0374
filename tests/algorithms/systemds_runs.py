"""SystemDS 3.4.0 reference runs (``systemds/``): data, the estimator arguments and outputs."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import numpy as np
import scipy.sparse as sp

HERE = Path(__file__).parent / "systemds"


@cache
def index() -> dict:
    return json.loads((HERE / "index.json").read_text())


def runs(builtin: str) -> list[dict]:
    return [r for r in index()["runs"] if r["builtin"] == builtin]


@cache
def data_file(name: str) -> dict:
    """The arrays of one data file (a CSR matrix's parts joined into ``X``, ``R`` for ratings)."""
    z = np.load(HERE / name)
    d = {k: z[k] for k in z.files}
    if "indptr" in d:
        key = "R" if "ratings" in name else "X"
        d[key] = sp.csr_array(
            (d.pop("data"), d.pop("indices"), d.pop("indptr")), shape=tuple(d.pop("shape"))
        )
    return d


def load(run: dict) -> tuple:
    """(X, y, outputs) of one run; y is None for unsupervised runs."""
    d = data_file(run["data_file"])
    y = d[run["y_key"]] if run.get("y_key") else None
    out = np.load(HERE / run["files"]["npz"])
    return d[run["x_key"]], y, {k: out[k] for k in out.files}


def max_rel(a, b) -> float:
    """max |a - b| / max |b| (the reference README's metric)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))
