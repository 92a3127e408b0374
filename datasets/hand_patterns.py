"""The patterns of SystemML's hand-coded fused operators (reference/paper.md section 2), each with
the hand operator ``fusion="hand"`` must select for it, and benchmark-sized data.

Leaves: X, Y, Z, W are m x n; U is m x k and V is n x k (a low-rank ``U @ V.T``); v is an
n-vector, w and y are m-vectors; s is a runtime scalar. The tests build the same expressions over
small random data; the asv suite over the data made here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fusedml.datasets.generators import dense_matrix, sparse_matrix

import fusedml as fm


@dataclass(frozen=True)
class HandPattern:
    name: str
    expected: tuple[str, ...]  # hand operators (``name[variant]``) fusion="hand" selects
    build_from: Callable[[dict[str, Any]], Any]  # fm leaves -> expression
    data: str = "cell"  # "cell": m x n matrices; "wide": X is n x m; "low_rank": W/X with U, V

    def build(self, data: dict[str, Any]) -> Any:
        return self.build_from({k: fm.matrix(v) for k, v in data.items()})


def _uv(d):
    return d["U"] @ d["V"].T


_PATTERNS = (
    HandPattern("sum(X*Y*Z)", ("tak+*[full]",), lambda d: fm.sum(d["X"] * d["Y"] * d["Z"])),
    HandPattern(
        "colsum(X*Y*Z)", ("tak+*[col]",), lambda d: fm.sum(d["X"] * d["Y"] * d["Z"], axis=0)
    ),
    HandPattern("sum(X**2)", ("uasqk+[full]",), lambda d: fm.sum(d["X"] ** 2)),
    HandPattern("rowsum(X*X)", ("uasqk+[row]",), lambda d: fm.sum(d["X"] * d["X"], axis=1)),
    HandPattern("colsum(X**2)", ("uasqk+[col]",), lambda d: fm.sum(d["X"] ** 2, axis=0)),
    HandPattern("X.T@(X@v)", ("mmchain[XtXv]",), lambda d: d["X"].T @ (d["X"] @ d["v"])),
    HandPattern(
        "X.T@(w*(X@v))", ("mmchain[XtwXv]",), lambda d: d["X"].T @ (d["w"] * (d["X"] @ d["v"]))
    ),
    HandPattern(
        "X.T@(X@v-y)", ("mmchain[XtXv-y]",), lambda d: d["X"].T @ ((d["X"] @ d["v"]) - d["y"])
    ),
    HandPattern("X.T@X", ("tsmm[left]",), lambda d: d["X"].T @ d["X"]),
    HandPattern("X@X.T", ("tsmm[right]",), lambda d: d["X"] @ d["X"].T, "wide"),
    HandPattern(
        "sum(W*(X-U@V.T)**2)", ("wsloss[post]",),
        lambda d: fm.sum(d["W"] * (d["X"] - _uv(d)) ** 2), "low_rank",
    ),
    HandPattern(
        "sum((X!=0)*(X-U@V.T)**2)", ("wsloss[post_nz]",),
        lambda d: fm.sum((d["X"] != 0) * (d["X"] - _uv(d)) ** 2), "low_rank",
    ),
    HandPattern(
        "sum((U@V.T-X)**2)", ("wsloss[none]",), lambda d: fm.sum((_uv(d) - d["X"]) ** 2),
        "low_rank",
    ),
    HandPattern(
        "W*sigmoid(U@V.T)", ("wsigmoid[basic]",), lambda d: d["W"] * fm.sigmoid(_uv(d)),
        "low_rank",
    ),
    HandPattern(
        "W*log(sigmoid(-U@V.T))", ("wsigmoid[log_minus]",),
        lambda d: d["W"] * fm.log(fm.sigmoid(-_uv(d))), "low_rank",
    ),
    HandPattern(
        "(W*(U@V.T))@V", ("wdivmm[mult_right]",), lambda d: (d["W"] * _uv(d)) @ d["V"],
        "low_rank",
    ),
    HandPattern(
        "(W/(U@V.T))@V", ("wdivmm[div_right]",), lambda d: (d["W"] / _uv(d)) @ d["V"],
        "low_rank",
    ),
    HandPattern(
        "(W*(U@V.T)).T@U", ("wdivmm[mult_left]",), lambda d: (d["W"] * _uv(d)).T @ d["U"],
        "low_rank",
    ),
    HandPattern(
        "U.T@(W/(U@V.T))", ("wdivmm[div_left_t]",), lambda d: d["U"].T @ (d["W"] / _uv(d)),
        "low_rank",
    ),
    HandPattern(
        "((X!=0)*(U@V.T-X))@V", ("wdivmm[mult_minus_right]",),
        lambda d: ((d["X"] != 0) * (_uv(d) - d["X"])) @ d["V"], "low_rank",
    ),
    HandPattern(
        "(W*(U@V.T-X)).T@U", ("wdivmm[mult_minus_left]",),
        lambda d: (d["W"] * (_uv(d) - d["X"])).T @ d["U"], "low_rank",
    ),
    HandPattern(
        "sum(X*log(U@V.T+s))", ("wcemm[eps]",),
        lambda d: fm.sum(d["X"] * fm.log(_uv(d) + d["s"])), "low_rank",
    ),
    HandPattern(
        "sum(X*log(U@V.T))", ("wcemm[basic]",), lambda d: fm.sum(d["X"] * fm.log(_uv(d))),
        "low_rank",
    ),
    HandPattern(
        "X*exp(U@V.T)", ("wumm[mult_exp]",), lambda d: d["X"] * fm.exp(_uv(d)), "low_rank"
    ),
    HandPattern(
        "X/abs(U@V.T)", ("wumm[div_abs]",), lambda d: d["X"] / fm.abs(_uv(d)), "low_rank"
    ),
    HandPattern(
        "X*(U@V.T)**2", ("wumm[mult_pow2]",), lambda d: d["X"] * _uv(d) ** 2, "low_rank"
    ),
    HandPattern("X+s*Y", ("axpy[plus]",), lambda d: d["X"] + d["s"] * d["Y"]),
    HandPattern("X-Y*s", ("axpy[minus]",), lambda d: d["X"] - d["Y"] * d["s"]),
    HandPattern("1-X*Y", ("1-*[basic]",), lambda d: 1 - d["X"] * d["Y"]),
    HandPattern("X*(1-X)", ("sprop[basic]",), lambda d: d["X"] * (1 - d["X"])),
    HandPattern("sigmoid(X)", ("sigmoid[basic]",), lambda d: fm.sigmoid(d["X"])),
)  # fmt: skip
HAND_PATTERNS: dict[str, HandPattern] = {p.name: p for p in _PATTERNS}

# benchmark sizes: (rows, cols, density) per format; low-rank data has rank RANK
CELL = {"dense": (1_000_000, 20, 1.0), "sparse": (200_000, 1_000, 0.01)}
LOW_RANK = {"dense": (4_000, 1_000, 1.0), "sparse": (20_000, 5_000, 0.01)}
RANK = 10


def hand_data(pattern: HandPattern, fmt: str, seed: int = 0, scale: float = 1.0) -> dict[str, Any]:
    """Inputs of ``pattern`` in ``fmt`` ("dense" or "sparse"), rows scaled by ``scale``.

    Sparse data makes the matrices X, Y, Z and W CSR (U and V stay dense); the scalar s and the
    factors are positive, so logs and divisions stay finite.
    """
    m, n, density = (LOW_RANK if pattern.data == "low_rank" else CELL)[fmt]
    m = max(int(m * scale), 1)

    def matrix(rows, cols, k):
        if fmt == "sparse":
            return sparse_matrix(rows, cols, density, seed + k)
        return dense_matrix(rows, cols, seed + k)

    shape = (n, m) if pattern.data == "wide" else (m, n)
    data: dict[str, Any] = {k: matrix(*shape, i) for i, k in enumerate("XYZW")}
    data["v"] = dense_matrix(n, 1, seed + 4).ravel()
    data["w"] = dense_matrix(m, 1, seed + 5).ravel()
    data["y"] = dense_matrix(m, 1, seed + 6).ravel()
    data["U"] = dense_matrix(m, RANK, seed + 7, 0.1, 1.0)
    data["V"] = dense_matrix(n, RANK, seed + 8, 0.1, 1.0)
    data["s"] = 1e-3
    return data
