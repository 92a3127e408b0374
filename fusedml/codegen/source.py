"""Pieces every kernel module shares: the prelude, indented source lines, aggregation folds.

A kernel module is the prelude (imports, numba flags, min/max folds), the helpers of the operands
it reads (``operands.py``), and one function ``kernel(m, n, <operand args>, c0, c1, ...)``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from fusedml.codegen.cellops import SOURCE_DIGEST
from fusedml.codegen.chunking import JIT
from fusedml.codegen.operands import Param
from fusedml.codegen.render import Literals

# the numba flags are written into each kernel's source: a change of them is a new kernel, and
# cellops' digest too (numba's cache does not notice a change of a module a kernel inlines)
PRELUDE = f"""\
import numba
import numpy as np
from numba import prange

import fusedml.codegen.cellops as f  # cellops {SOURCE_DIGEST}

_JIT = {JIT!r}


@numba.njit(inline="always", error_model="numpy")
def _min(acc, v):
    return v if (acc == acc and not (acc <= v)) else acc


@numba.njit(inline="always", error_model="numpy")
def _max(acc, v):
    return v if (acc == acc and not (acc >= v)) else acc


# _min and _max as one select each (same values): faster folded along a tile of rows, slower
# (measured) in the row kernels' per-row loops
@numba.njit(inline="always", error_model="numpy")
def _vmin(acc, v):
    return v if (v < acc or v != v) else acc


@numba.njit(inline="always", error_model="numpy")
def _vmax(acc, v):
    return v if (v > acc or v != v) else acc
"""

INIT = {"sum": "0.0", "mean": "0.0", "min": "np.inf", "max": "-np.inf"}


def fold(agg: str, acc: str, value: str) -> str:
    """Source adding ``value`` into the accumulator ``acc`` (a mean accumulates its sum)."""
    if agg in ("sum", "mean"):
        return f"{acc} += {value}"
    return f"{acc} = _{agg}({acc}, {value})"


class Source:
    """Accumulates indented lines."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    def block(self, depth: int, lines: Iterable[str]) -> None:
        for line in lines:
            self(depth, line)

    def extend(self, lines: list[str]) -> None:
        self.lines.extend(lines)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


@dataclass
class Kernel:
    source: str  # the module's source (prelude, helpers, one kernel function ``kernel``)
    literal_positions: list[int]  # body.nodes index of the literal passed as c0, c1, ...


def signature(params: list[Param], literals: Literals) -> str:
    """``def kernel(...)``: the row and column counts, the operands' arguments, the literals."""
    args = ["m", "n"]
    for p in params:
        args += p.args()
    args += [f"c{k}" for k in range(len(literals.nodes))]
    return f"def kernel({', '.join(args)}):"


def module(params: list[Param], function: Source, literals: Literals, body) -> Kernel:
    """The kernel module: prelude, each operand's helpers once, the kernel function."""
    helpers = list(dict.fromkeys(p.operand.helpers for p in params if p.operand.helpers))
    parts = [PRELUDE, *helpers, "@numba.njit(**_JIT)\n" + function.text()]
    return Kernel("\n\n".join(parts), literals.positions(body))


def row_loop(params: list[Param]) -> str:
    """The row loop of a chunk. An unsigned row index lets LLVM drop numba's negative-index
    wrap-around and vectorize a loop over a column vector (6x on 1M rows), unless an operand
    needs signed row arithmetic."""
    if any(p.operand.signed_rows for p in params):
        return "for i in range(lo, hi):"
    return "for i in range(np.uint64(lo), np.uint64(hi)):"
