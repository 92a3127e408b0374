"""Hand-written kernel skeletons (as source templates) for the Cell, MAgg and Outer templates.

A skeleton owns the loops: ``prange`` over a fixed number of row chunks (so results do not depend
on the thread count), sparse iteration, side-input access and aggregation with per-chunk partials
combined in chunk order afterwards (deterministic). The generated body fills in one cell's value.
Row skeletons live in ``row.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

from fusedml.codegen.cellops import SOURCE_DIGEST
from fusedml.codegen.chunking import CHUNKS, JIT, partial_chunks_source
from fusedml.codegen.render import Literals, render_scalar_body
from fusedml.formats import Format
from fusedml.fusion.templates import outer_product
from fusedml.ir.dag import Dag
from fusedml.ir.node import Node
from fusedml.ir.ops import AGGREGATE, Op

OUTER_BLOCK = 256  # columns per block when an Outer operator's driver is dense

# the numba flags are written into each kernel's source: a change of them is a new kernel
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


@numba.njit(inline="always")
def _fill_row(buf, data, indices, indptr, row):
    buf[:] = 0.0
    for p in range(np.uint64(indptr[row]), np.uint64(indptr[row + 1])):
        buf[np.uint64(indices[p])] = data[p]
"""

INIT = {"sum": "0.0", "mean": "0.0", "min": "np.inf", "max": "-np.inf"}
# A CSR row's non-zero positions. Unsigned positions and column indices (np.uint64(indices[p]))
# let LLVM drop numba's negative-index wrap-around: a sparse dot product ran 2.7x faster (with
# reassoc fastmath the signed version was 14 ms, the unsigned one 5 ms on 2M non-zeros).
CSR_ROW = "range(np.uint64({name}_indptr[{row}]), np.uint64({name}_indptr[{row} + 1]))"


def fold(agg: str, acc: str, value: str) -> str:
    if agg in ("sum", "mean"):
        return f"{acc} += {value}"
    return f"{acc} = _{agg}({acc}, {value})"


@dataclass(frozen=True)
class Param:
    """One kernel input: a placeholder of the CPlan body. ``dense`` passes a CSR input densified
    (matrices read whole, such as ``B`` in ``X @ B`` or the factors of ``U @ V.T``); the body still
    applies the CSR rules, which follow the placeholder's format."""

    node: Node
    name: str
    dense: bool = False

    @property
    def scalar(self) -> bool:
        return self.node.meta.is_scalar

    @property
    def csr(self) -> bool:
        return self.node.meta.format is Format.CSR and not self.dense

    def args(self) -> list[str]:
        if self.csr:
            return [f"{self.name}_data", f"{self.name}_indices", f"{self.name}_indptr"]
        return [self.name]

    def row(self, i: str) -> str:
        return "0" if self.node.meta.rows == 1 else i

    def col(self, j: str) -> str:
        return "0" if self.node.meta.cols == 1 else j

    @property
    def flat(self) -> bool:
        """A dense vector (one row or one column) is passed 1-D: contiguous, vectorizable reads."""
        meta = self.node.meta
        return not self.scalar and not self.csr and (meta.rows == 1 or meta.cols == 1)

    def at(self, i: str, j: str) -> str:
        """Dense element (i, j), broadcasting a dimension of size one."""
        meta = self.node.meta
        if not self.flat:
            return f"{self.name}[{self.row(i)}, {self.col(j)}]"
        if meta.rows == 1 and meta.cols == 1:
            return f"{self.name}[0]"
        return f"{self.name}[{i if meta.cols == 1 else j}]"

    def ncols(self) -> str:
        return "1" if self.flat and self.node.meta.cols == 1 else (
            f"{self.name}.shape[0]" if self.flat else f"{self.name}.shape[1]"
        )  # fmt: skip


class Source:
    """Accumulates indented lines."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    def extend(self, lines: list[str]) -> None:
        self.lines.extend(lines)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def _side_access(params: list[Param], main: Param, i: str, j: str, src: Source, depth: int):
    """Source expression per placeholder at cell (i, j); fills CSR side rows into buffers."""
    access: dict[Node, str] = {}
    for p in params:
        if p is main:
            continue
        if p.scalar:
            access[p.node] = p.name
        elif p.csr:
            src(depth, f"_fill_row({p.name}_buf, {p.name}_data, {p.name}_indices, "
                       f"{p.name}_indptr, {p.row(i)})")  # fmt: skip
            access[p.node] = f"{p.name}_buf[{p.col(j)}]"
        else:
            access[p.node] = p.at(i, j)
    return access


def _buffers(params: list[Param], main: Param, src: Source, depth: int) -> None:
    for p in params:
        if p.csr and p is not main:
            src(depth, f"{p.name}_buf = np.zeros({'1' if p.node.meta.cols == 1 else 'n'})")


def _arguments(params: list[Param], literals: Literals) -> list[str]:
    args = ["m", "n"]
    for p in params:
        args += p.args()
    return args + [f"c{k}" for k in range(len(literals.nodes))]


@dataclass
class Kernel:
    source: str  # the module's source (prelude + one kernel function ``kernel``)
    literal_positions: list[int]  # body.nodes index of the literal passed as c0, c1, ...


def cell_kernel(
    params: list[Param], body: Dag, aggs: list[str | None], axis, sparse: bool
) -> Kernel:
    """Cell and MAgg: one value per cell of the main input's shape, then no / row / column / full
    aggregation (MAgg: several full aggregates). ``sparse``: iterate only the main input's
    non-zeros (its body maps a zero to zero)."""
    main = params[0]
    values = [r.inputs[0] if r.op in AGGREGATE else r for r in body.roots]
    order = [n for n in Dag(values).nodes if n.op is not Op.DATA]
    literals = Literals()
    src = Source()
    src(0, "@numba.njit(**_JIT)")
    # the literal list is complete only after rendering: render first, then write the signature
    body_src = Source()
    if aggs[0] is None:
        kinds = "none"
    else:
        kinds = {None: "full", 1: "row", 0: "col"}[axis]
    depth = 4
    access = _side_access(params, main, "i", "j", body_src, 3)
    main_value = "a_data[p]" if sparse else (
        "a_buf[j]" if main.csr else main.at("i", "j")
    )  # fmt: skip
    access[main.node] = main_value
    lines, names = render_scalar_body(order, access, literals, "    " * depth)
    results = [names[v] if v.op is not Op.CONST else literals.name(v) for v in values]

    src(0, f"def kernel({', '.join(_arguments(params, literals))}):")
    chunks = partial_chunks_source("n") if kinds == "col" else CHUNKS
    src(1, f"nchunk = min(m, {chunks})")
    k = len(values)
    if kinds == "none":
        src(1, "out = np.empty(a_data.shape[0])" if sparse else "out = np.empty((m, n))")
        src(1, "f.huge_pages(out)")
    elif kinds == "full":
        src(1, f"partial = np.empty((nchunk, {k}))")
    elif kinds == "row":
        src(1, "out = np.empty(m)")
        src(1, "f.huge_pages(out)")
    else:
        src(1, "partial = np.empty((nchunk, n))")
        src(1, "counts = np.zeros((nchunk, n))")
    src(1, "for c in prange(nchunk):")
    src(2, "lo = c * m // nchunk")
    src(2, "hi = (c + 1) * m // nchunk")
    _buffers(params, main, src, 2)
    if main.csr and not sparse:
        src(2, "a_buf = np.zeros(n)")
    if kinds == "full":
        for r, agg in enumerate(aggs):
            src(2, f"acc{r} = {INIT[agg]}")
    if kinds == "col":
        src(2, f"colacc = np.full(n, {INIT[aggs[0]]})")
    if any(p.csr for p in params):
        src(2, "for i in range(lo, hi):")
    else:
        # An unsigned row index lets LLVM drop numba's negative-index wrap-around and vectorize
        # the loop over a column vector (n == 1): 6x on 1M rows. Only here: CSR code computes
        # i + 1, and uint64 + int64 is a float in numba.
        src(2, "for i in range(np.uint64(lo), np.uint64(hi)):")
    if main.csr and not sparse:
        src(3, "_fill_row(a_buf, a_data, a_indices, a_indptr, i)")
    src.extend(body_src.lines)
    if kinds == "row":
        src(3, f"racc = {INIT[aggs[0]]}")
    if sparse:
        src(3, f"for p in {CSR_ROW.format(name='a', row='i')}:")
        src(4, "j = np.uint64(a_indices[p])")
    else:
        src(3, "for j in range(n):")
    src.extend(lines)
    if kinds == "none":
        src(4, f"out[p] = {results[0]}" if sparse else f"out[i, j] = {results[0]}")
    elif kinds == "full":
        for r, agg in enumerate(aggs):
            src(4, fold(agg, f"acc{r}", results[r]))
    elif kinds == "row":
        src(4, fold(aggs[0], "racc", results[0]))
    else:
        src(4, fold(aggs[0], "colacc[j]", results[0]))
        if sparse:
            src(4, "counts[c, j] += 1.0")
    if kinds == "row":
        if sparse and aggs[0] in ("min", "max"):  # implicit zeros of the row take part
            src(3, "if a_indptr[i + 1] - a_indptr[i] < n:")
            src(4, fold(aggs[0], "racc", "0.0"))
        src(3, "out[i] = racc")
    if kinds == "full":
        for r in range(k):
            src(2, f"partial[c, {r}] = acc{r}")
    if kinds == "col":
        src(2, "partial[c, :] = colacc")
    if kinds == "none" or kinds == "row":
        src(1, "return out")
    elif kinds == "full":
        src(1, f"result = np.empty({k})")
        for r, agg in enumerate(aggs):
            src(1, f"acc = {INIT[agg]}")
            src(1, "for c in range(nchunk):")
            src(2, fold(agg, "acc", f"partial[c, {r}]"))
            if sparse and agg in ("min", "max"):
                src(1, "if a_indptr[m] < m * n:")
                src(2, fold(agg, "acc", "0.0"))
            src(1, f"result[{r}] = acc")
        src(1, "return result")
    else:
        src(1, f"out = np.full(n, {INIT[aggs[0]]})")
        src(1, "for c in range(nchunk):")
        src(2, "for j in range(n):")
        src(3, fold(aggs[0], "out[j]", "partial[c, j]"))
        if sparse and aggs[0] in ("min", "max"):
            src(1, "seen = counts.sum(axis=0)")
            src(1, "for j in range(n):")
            src(2, "if seen[j] < m:")
            src(3, fold(aggs[0], "out[j]", "0.0"))
        src(1, "return out")
    return Kernel(PRELUDE + "\n\n" + src.text(), literals.positions(body))


def _outer_factors(node: Node) -> tuple[Node, Node, bool]:
    """(U, V, transposed) of an outer product U @ V.T (or U @ Vt with a materialized Vt)."""
    left, right = node.inputs
    if right.op is Op.TRANSPOSE:
        return left, right.inputs[0], True
    return left, right, False


def outer_kernel(params: list[Param], body: Dag, kind: str, sparse: bool) -> Kernel:
    """Outer: ``f(W, U @ V.T)`` evaluated only at the driver W's non-zeros (``sparse``) or at every
    cell, ``U[i] . V[j]`` computed per visited cell; then a full sum (``agg``), the cell values
    (``cellwise``), ``(...) @ R`` (``right``) or ``(...).T @ L`` (``left``)."""
    main = params[0]
    param = {p.node: p for p in params}
    (root,) = body.roots
    value = root.inputs[0] if kind in ("agg", "right") else root
    if kind == "left":
        value = root.inputs[0].inputs[0]  # (Y).T @ L: the transpose of the cell values Y
    outer_nodes = [n for n in Dag([value]).nodes if outer_product(n)]
    literals = Literals()
    prep = Source()
    access = _side_access(params, main, "i", "j", prep, 3)
    access[main.node] = "a_data[p]" if sparse else main.at("i", "j")
    dots = []
    for k, n in enumerate(outer_nodes):
        u, v, transposed = _outer_factors(n)
        v_at = param[v].at("j", "r") if transposed else param[v].at("r", "j")
        dots += [f"uv{k} = 0.0", f"for r in range({param[u].ncols()}):",
                 f"    uv{k} += f.mul({param[u].at('i', 'r')}, {v_at})"]  # fmt: skip
        access[n] = f"uv{k}"
        if transposed:
            access[n.inputs[1]] = "None"  # the transpose is read in place, never computed
    order = [n for n in Dag([value]).nodes if n.op is not Op.DATA and n not in access]
    lines, names = render_scalar_body(order, access, literals, "    " * 4)
    result = names[value]
    src = Source()
    src(0, "@numba.njit(**_JIT)")
    src(0, f"def kernel({', '.join(_arguments(params, literals))}):")
    if kind == "left":  # n x k partials per chunk: fewer chunks when n is large (ALS' items)
        k = param[root.inputs[1]].ncols()
        src(1, f"nchunk = min(m, {partial_chunks_source(f'n * {k}')})")
    else:
        src(1, f"nchunk = min(m, {CHUNKS})")
    if kind == "agg":
        src(1, "partial = np.zeros(nchunk)")
    elif kind == "cellwise":
        src(1, "out = np.empty(a_data.shape[0])" if sparse else "out = np.empty((m, n))")
        src(1, "f.huge_pages(out)")
    elif kind == "right":
        rmat = param[root.inputs[1]]
        src(1, f"out = np.empty((m, {rmat.ncols()}))")
        src(1, "f.huge_pages(out)")
    else:
        lmat = param[root.inputs[1]]
        src(1, f"partial = np.zeros((nchunk, n, {lmat.ncols()}))")
    src(1, "for c in prange(nchunk):")
    src(2, "lo = c * m // nchunk")
    src(2, "hi = (c + 1) * m // nchunk")
    _buffers(params, main, src, 2)
    if kind == "right":  # each chunk zeroes its own rows: first touch in parallel
        src(2, "out[lo:hi, :] = 0.0")
    src(2, "acc = 0.0")
    loop = Source()  # the i loop; a dense driver's is blocked over columns below
    loop(2, "for i in range(lo, hi):")
    loop.extend(prep.lines)
    if sparse:
        loop(3, f"for p in {CSR_ROW.format(name='a', row='i')}:")
        loop(4, "j = np.uint64(a_indices[p])")
    else:
        loop(3, f"for j in range(jb, min(jb + {OUTER_BLOCK}, n)):")
    for line in dots:
        loop(4, line)
    loop.extend(lines)
    if kind == "agg":
        loop(4, f"acc += {result}")
    elif kind == "cellwise":
        loop(4, f"out[p] = {result}" if sparse else f"out[i, j] = {result}")
    elif kind == "right":
        loop(4, f"for r in range({rmat.ncols()}):")
        loop(5, f"out[i, r] += f.mul({result}, {rmat.at('j', 'r')})")
    else:
        loop(4, f"for r in range({lmat.ncols()}):")
        loop(5, f"partial[c, j, r] += f.mul({result}, {lmat.at('i', 'r')})")
    if sparse:
        src.extend(loop.lines)
    else:  # column blocks: the block's rows of V stay in cache while the chunk's rows pass
        src(2, f"for jb in range(0, n, {OUTER_BLOCK}):")
        src.extend(["    " + line for line in loop.lines])
    if kind == "agg":
        src(2, "partial[c] = acc")
        src(1, "total = 0.0")
        src(1, "for c in range(nchunk):")
        src(2, "total += partial[c]")
        src(1, "return np.array([total])")
    elif kind == "left":
        src(1, f"out = np.zeros((n, {lmat.ncols()}))")
        src(1, "for c in range(nchunk):")
        src(2, "for j in range(n):")
        src(3, f"for r in range({lmat.ncols()}):")
        src(4, "out[j, r] += partial[c, j, r]")
        src(1, "return out")
    else:
        src(1, "return out")
    return Kernel(PRELUDE + "\n\n" + src.text(), literals.positions(body))
