"""The paper's micro-benchmark patterns (reference/paper.md section 3), one per fusion template.

Each pattern makes its data for a size and format and builds its expression with the public API,
so the demo, the benchmarks and the tests all run the same expressions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fusedml.datasets.generators import coded_matrix, dense_matrix, sparse_matrix

import fusedml as fm


@dataclass(frozen=True)
class Pattern:
    name: str
    template: str  # the template the optimizer should pick under cost_based
    formats: tuple[str, ...]  # the demo's: "dense" and/or "sparse" (make_data also: "compressed")
    make_data: Callable[[int, str, int], dict[str, Any]]  # (rows, format, seed) -> inputs
    build_from: Callable[[dict[str, Any]], Any]  # fm.matrix leaves -> fm expression(s)

    def build(self, data: dict[str, Any]) -> Any:
        """The expression over ``data``, one leaf per input (shared by every use of it)."""
        return self.build_from({k: fm.matrix(v) for k, v in data.items()})


def _matrix(rows: int, cols: int, fmt: str, seed: int, density: float = 0.1):
    if fmt == "sparse":
        return sparse_matrix(rows, cols, density, seed)
    if fmt == "compressed":  # columns of few distinct values, as CLA's tables have
        return fm.compress(coded_matrix(rows, cols, seed))
    return dense_matrix(rows, cols, seed)


def _cell_data(rows, fmt, seed):
    return {k: _matrix(rows, 20, fmt, seed + i) for i, k in enumerate("XYZ")}


def _mmchain_data(rows, fmt, seed):
    return {
        "X": _matrix(rows, 20, fmt, seed),
        "w": dense_matrix(rows, 1, seed + 1).ravel(),
        "v": dense_matrix(20, 1, seed + 2).ravel(),
    }


def _outer_data(rows, fmt, seed):
    # unfused evaluation materializes the dense m x n product U @ V.T: keep it at rows**2 / 400
    # cells (25M for 100k rows), a 10th of the rows by a 40th
    m, n, rank = max(rows // 10, 1), max(rows // 40, 1), 10
    W = sparse_matrix(m, n, 0.01, seed)
    if fmt != "sparse":  # the same ratings-like W, stored dense or compressed
        W = W.toarray() if fmt == "dense" else fm.compress(W.toarray())
    return {
        "W": W,
        "U": dense_matrix(m, rank, seed + 1),
        "V": dense_matrix(n, rank, seed + 2),
    }


def _mlogreg_data(rows, fmt, seed):
    return {
        "X": _matrix(rows, 20, fmt, seed),
        "P": dense_matrix(rows, 3, seed + 1, 0.0, 1.0),
        "V": dense_matrix(20, 3, seed + 2),
    }


def _mlogreg_hv(d):
    X, P, V = d["X"], d["P"], d["V"]
    Q = P * (X @ V)
    return X.T @ (Q - P * fm.sum(Q, axis=1, keepdims=True))


PATTERNS: dict[str, Pattern] = {
    p.name: p
    for p in (
        Pattern(
            "sum(X*Y*Z)", "cell", ("dense", "sparse"), _cell_data,
            lambda d: fm.sum(d["X"] * d["Y"] * d["Z"]),
        ),
        Pattern(
            "sum(X**2), sum(X*Y), sum(Y**2)", "magg", ("dense", "sparse"), _cell_data,
            lambda d: (fm.sum(d["X"] ** 2), fm.sum(d["X"] * d["Y"]), fm.sum(d["Y"] ** 2)),
        ),
        Pattern(
            "X.T @ (w * (X @ v))", "row", ("dense", "sparse"), _mmchain_data,
            lambda d: d["X"].T @ (d["w"] * (d["X"] @ d["v"])),
        ),
        Pattern(
            "sum(W * (U @ V.T)**2)", "outer", ("sparse",), _outer_data,
            lambda d: fm.sum(d["W"] * (d["U"] @ d["V"].T) ** 2),
        ),
        Pattern(
            "X.T @ (Q - P * rowsum(Q)), Q = P * (X @ V)", "row", ("dense", "sparse"),
            _mlogreg_data, _mlogreg_hv,
        ),
    )
}  # fmt: skip
