"""``fusedml warmup``: fill the kernel disk cache with the kernels of the estimators' fits, so
that a later process (a notebook, a joblib worker, a container built with the cache in it) loads
them in milliseconds instead of compiling or running its first fits unfused.

A kernel is keyed by the structure of its fused operator and its inputs' formats; Row kernels
(matrix-vector products inside a row) also by the column counts, and plan selection by the data's
size. So the cache serves fits on data of the shapes warmed here: pass your data's shapes.
"""

from __future__ import annotations

import sys
import time
import warnings
from collections.abc import Iterable

import numpy as np

import fusedml as fm
from fusedml.datasets import estimator_data
from fusedml.datasets.generators import dense_matrix, sparse_matrix
from fusedml.estimator_bench import SPECS

DENSE_SHAPES = ((200_000, 10),)
SPARSE_SHAPES = ((200_000, 1_000),)
DENSITY = 0.01


def parse_shapes(text: str) -> tuple[tuple[int, int], ...]:
    """``"200000x10,1000000x10"`` -> ((200000, 10), (1000000, 10))."""
    shapes = []
    for item in filter(None, text.split(",")):
        rows, _, cols = item.lower().partition("x")
        if not (rows.isdigit() and cols.isdigit()) or int(rows) < 2 or int(cols) < 1:
            raise ValueError(f"shape {item!r} is not ROWSxCOLS (e.g. 200000x10)")
        shapes.append((int(rows), int(cols)))
    return tuple(shapes)


def _data(fmt: str, rows: int, cols: int, kind: str | None):
    X = sparse_matrix(rows, cols, DENSITY, 0) if fmt == "csr" else dense_matrix(rows, cols, 0)
    eta = np.asarray(X @ np.random.default_rng(1).standard_normal(cols)).ravel()
    eta = (eta - eta.mean()) / (eta.std() or 1.0)
    return X, (estimator_data.labels(kind, eta) if kind else None)


def _cases(estimators, dense_shapes, sparse_shapes):
    for name in estimators:
        if name == "ALSCG":  # a ratings matrix, not a design
            yield name, "csr", estimator_data.ratings(0.1), None
            continue
        for fmt, shapes in (("dense", dense_shapes), ("csr", sparse_shapes)):
            for rows, cols in shapes:
                yield name, fmt, *_data(fmt, rows, cols, SPECS[name].labels)


def warmup(
    estimators: Iterable[str] = tuple(SPECS),
    dense_shapes=DENSE_SHAPES,
    sparse_shapes=SPARSE_SHAPES,
    weights: bool = True,
    out=None,
) -> list[dict]:
    """Fit each estimator (cost_based, a short fixed budget) on generated data of each shape,
    with and without sample weights, compiling in this process; print and return what each fit
    compiled or loaded."""
    out = out or sys.stdout
    unknown = sorted(set(estimators) - set(SPECS))
    if unknown:
        raise ValueError(f"unknown estimator(s) {unknown}; known: {', '.join(SPECS)}")
    print(f"kernel cache: {fm.get_config().cache_dir}", file=out)
    print(f"{'estimator':10} {'data':6} {'shape':>14} {'weights':7} {'compiled':>8} "
          f"{'loaded':>6} {'seconds':>8}", file=out)  # fmt: skip
    records = []
    for name, fmt, X, y in _cases(estimators, dense_shapes, sparse_shapes):
        for weighted in (False, True) if weights and name != "ALSCG" else (False,):
            w = np.random.default_rng(2).uniform(0.5, 1.5, X.shape[0]) if weighted else None
            records.append(_fit(name, fmt, X, y, w))
            r = records[-1]
            print(f"{name:10} {fmt:6} {'x'.join(map(str, X.shape)):>14} {weighted!s:7} "
                  f"{r['compiled']:8d} {r['loaded']:6d} {r['seconds']:8.2f}", file=out,
                  flush=True)  # fmt: skip
    return records


def _fit(name: str, fmt: str, X, y, w) -> dict:
    before = fm.stats()
    start = time.perf_counter()
    estimator = SPECS[name].make("cost_based")
    kwargs = {} if w is None else {"sample_weight": w}
    with fm.config(compile="eager"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fixed budgets do not converge
        estimator.fit(X, y, **kwargs) if y is not None else estimator.fit(X, **kwargs)
    after = fm.stats()
    return {
        "estimator": name, "data": fmt, "shape": X.shape, "weights": w is not None,
        "compiled": after.get("kernels_compiled", 0) - before.get("kernels_compiled", 0),
        "loaded": after.get("kernels_loaded_from_disk", 0)
        - before.get("kernels_loaded_from_disk", 0),
        "seconds": time.perf_counter() - start,
    }  # fmt: skip
