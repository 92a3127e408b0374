"""Row kernels: the body computes one row at a time, as per-row scalars and short vectors.

Per-row nodes of shape (m, k) are vectors of length k held in per-chunk scratch arrays (scalars
when k == 1); side inputs of one row (or broadcast rows) are read in place, CSR rows are scattered
into a scratch row; matrices multiplied from the right (``X @ B``) are read whole. The skeleton
writes rows (no aggregation, row aggregates), or accumulates per-chunk partials combined in order:
column aggregates, full aggregates, and ``X.T @ Y`` (row i of X times row i of Y).
"""

from __future__ import annotations

from fusedml.codegen.render import Literals, elementwise_source
from fusedml.codegen.skeletons import (
    CHUNKS,
    INIT,
    PRELUDE,
    Kernel,
    Param,
    Source,
    _arguments,
    fold,
)
from fusedml.ir.dag import Dag
from fusedml.ir.node import Node
from fusedml.ir.ops import AGGREGATE, ELEMENTWISE, Op


def whole_matrices(body: Dag) -> set[Node]:
    """Placeholders a row kernel reads whole: the right operands of ``X @ B`` (passed dense)."""
    return {
        n.inputs[1]
        for n in body.nodes
        if n.op is Op.MATMUL and n.inputs[0].op is not Op.TRANSPOSE and n.inputs[1].op is Op.DATA
    }


class _RowBody:
    """Renders body nodes for row i; ``value[node]`` is a scalar expression or a vector name."""

    def __init__(self, params: list[Param], body: Dag, rows: int, literals: Literals) -> None:
        self.rows = rows
        self.main_cols = params[0].node.meta.cols
        self.literals = literals
        self.alloc: list[str] = []  # per-chunk scratch allocations
        self.lines: list[str] = []  # statements computing the nodes
        # scalars: an expression; vectors: an index template over "{q}" (read in place, no views)
        self.value: dict[Node, str] = {}
        self.width: dict[Node, int | None] = {}  # vector length; None for scalars
        self.param = {p.node: p for p in params}
        self.csr_rows: dict[Node, tuple[str, str, int]] = {}  # CSR inputs read per row
        self.scattered: dict[Node, None] = {}  # ordered: kernel sources must be reproducible
        for p in params:
            self._bind(p)

    def _bind(self, p: Param) -> None:
        node, name = p.node, p.name
        if p.scalar:
            self.value[node], self.width[node] = name, None
            return
        # matrices multiplied from the right are read by products through ``self.param``; any
        # other (elementwise) use reads them per row like every other input
        rows, cols = node.shape
        row = "0" if rows == 1 else "i"
        if p.csr:  # scattered into a scratch row only if some elementwise use reads it
            self.csr_rows[node] = (name, row, cols)
            template = f"{name}_buf[{{q}}]"
        else:
            template = p.at("i", "{q}")
        if cols == 1:
            self.value[node], self.width[node] = template.format(q="0"), None
        else:
            self.value[node], self.width[node] = template, cols

    def size(self, k: int) -> str:
        """A loop bound: the main input's width stays a runtime value (LLVM unrolls constant
        trip counts such as 20 fully, which was measured 2x slower), other widths are constants."""
        return "n" if k == self.main_cols else str(k)

    def scratch_rows(self) -> tuple[list[str], list[str]]:
        """(allocations, per-row statements) scattering the CSR rows read elementwise."""
        alloc, per_row = [], []
        for node in self.scattered:
            name, row, cols = self.csr_rows[node]
            alloc.append(f"{name}_buf = np.zeros({cols})")
            per_row.append(
                f"_fill_row({name}_buf, {name}_data, {name}_indices, {name}_indptr, {row})"
            )
        return alloc, per_row

    def nonzeros(self, node: Node) -> list[str] | None:
        """Loop header over the non-zeros (column t, value xv) of a CSR input's row."""
        if node not in self.csr_rows:
            return None
        name, row, _ = self.csr_rows[node]
        return [
            f"for pp in range({name}_indptr[{row}], {name}_indptr[{row} + 1]):",
            f"    t = {name}_indices[pp]",
            f"    xv = {name}_data[pp]",
        ]

    def _at(self, node: Node, q: str) -> str:
        if node.op is Op.CONST:
            return self.literals.name(node)
        if node in self.csr_rows:
            self.scattered[node] = None
        return self.value[node] if self.width[node] is None else self.value[node].format(q=q)

    def _vector(self, node: Node, width: int) -> str:
        name = f"v{len(self.alloc)}"
        self.alloc.append(f"{name} = np.empty({width})")
        self.value[node], self.width[node] = f"{name}[{{q}}]", width
        return name

    def _scalar(self, node: Node, expr: str) -> None:
        name = f"r{len(self.lines)}"
        self.lines.append(f"{name} = {expr}")
        self.value[node], self.width[node] = name, None

    def render(self, node: Node) -> None:
        if node in self.value or node.op is Op.TRANSPOSE:
            return  # placeholders; the transposed main input is read row by row by the skeleton
        if node.op is Op.CONST:
            self.value[node], self.width[node] = self.literals.name(node), None
            return
        width = None if node.meta.is_scalar or node.shape[1] == 1 else node.shape[1]
        if node.op in ELEMENTWISE:
            if width is None:
                self._scalar(
                    node, elementwise_source(node, [self._at(i, "0") for i in node.inputs])
                )
            else:
                v = self._vector(node, width)
                expr = elementwise_source(node, [self._at(i, "q") for i in node.inputs])
                self.lines += [f"for q in range({self.size(width)}):", f"    {v}[q] = {expr}"]
        elif node.op in AGGREGATE and node.attr("axis") == 1:
            self._row_aggregate(node)
        elif node.op is Op.COLS:
            x = node.inputs[0]
            start = node.attr("start")
            if width is None:
                self._scalar(node, self._at(x, str(start)))
            elif width == 0:
                self._vector(node, 0)
            else:
                shifted = self.value[x].format(q=f"({start} + {{q}})")
                self.value[node], self.width[node] = shifted, width
        elif node.op is Op.HSTACK and width is None:  # one column: the only part's value
            (part,) = (i for i in node.inputs if i.shape[1])
            self.value[node], self.width[node] = self._at(part, "0"), None
        elif node.op is Op.HSTACK:
            v = self._vector(node, width)
            offset = 0
            for part in node.inputs:
                k = part.shape[1]
                copy = f"    {v}[{offset} + q] = {self._at(part, 'q')}"
                self.lines += [f"for q in range({k}):", copy]
                offset += k
        elif node.op is Op.MATMUL:
            self._product(node, width)
        else:
            raise NotImplementedError(f"row kernels do not render {node.op}")

    def _row_aggregate(self, node: Node) -> None:
        x = node.inputs[0]
        agg = node.op.value
        if self.width[x] is None:  # a one-column row: the aggregate of one value
            self._scalar(node, self._at(x, "0"))
            return
        acc = f"r{len(self.lines)}"
        self.lines.append(f"{acc} = {INIT[agg]}")
        self.lines += [
            f"for q in range({self.size(self.width[x])}):",
            f"    {fold(agg, acc, self._at(x, 'q'))}",
        ]
        if agg == "mean":
            self.lines.append(f"{acc} = {acc} / {self.width[x]}")
        self.value[node], self.width[node] = acc, None

    def _product(self, node: Node, width: int | None) -> None:
        """Row i of X times the whole matrix B (skinny: few columns)."""
        x, b = node.inputs
        k = x.shape[1]
        if self.nonzeros(x) is not None:
            self._sparse_product(node, x, b, width)
            return
        q = "0" if width is None else "q"
        b_at = self.param[b].at("t", q)
        term = f"{self._at(x, 't')} * {b_at}"
        guards = []
        if x.meta.format.value == "csr":  # zeros of a CSR operand annihilate
            guards.append(f"{self._at(x, 't')} != 0.0")
        if b.meta.format.value == "csr":
            guards.append(f"{b_at} != 0.0")
        add = f"acc += {term}" if not guards else f"if {' and '.join(guards)}: acc += {term}"
        dot = ["acc = 0.0", f"for t in range({self.size(k)}):", f"    {add}"]
        if width is None:
            self.lines += dot
            self._scalar(node, "acc")
        else:
            v = self._vector(node, width)
            self.lines += [f"for q in range({self.size(width)}):"] + [f"    {line}" for line in dot]
            self.lines.append(f"    {v}[q] = acc")

    def _sparse_product(self, node: Node, x: Node, b: Node, width: int | None) -> None:
        """A CSR row times B: only the row's non-zeros (a zero of X annihilates anyway)."""
        bp = self.param[b]
        loop = self.nonzeros(x)
        if width is None:
            b_at = bp.at("t", "0")
            guard = "xv != 0.0" + (f" and {b_at} != 0.0" if b.meta.format.value == "csr" else "")
            self.lines += ["acc = 0.0", *loop, f"    if {guard}: acc += xv * {b_at}"]
            self._scalar(node, "acc")
            return
        v = self._vector(node, width)
        self.lines += [f"for q in range({self.size(width)}):", f"    {v}[q] = 0.0", *loop]
        self.lines += [
            "    if xv != 0.0:",
            f"        for q in range({self.size(width)}):",
        ]
        term = f"xv * {bp.at('t', 'q')}"
        if b.meta.format.value == "csr":
            self.lines.append(f"            if {bp.at('t', 'q')} != 0.0: {v}[q] += {term}")
        else:
            self.lines.append(f"            {v}[q] += {term}")


def row_kernel(params: list[Param], body: Dag, kind: str) -> Kernel:
    main = params[0]
    (root,) = body.roots
    literals = Literals()
    rb = _RowBody(params, body, main.node.shape[0], literals)
    if kind == "col_agg_t":
        x_t, y = root.inputs
        value_nodes = [y]
    elif root.op in AGGREGATE and root.attr("axis") in (None, 0):
        value_nodes = [root.inputs[0]]
    else:
        value_nodes = [root]
    for n in Dag(value_nodes).nodes:
        rb.render(n)
    src = Source()
    src(0, "@numba.njit(**_JIT)")
    src(0, f"def kernel({', '.join(_arguments(params, literals))}):")
    src(1, f"nchunk = min(m, {CHUNKS})")
    value = value_nodes[0]
    width = rb.width[value]
    cols = 1 if width is None else width
    agg = root.op.value if root.op in AGGREGATE else None
    if kind in ("no_agg", "no_agg_b1", "row_agg"):
        src(1, f"out = np.empty((m, {cols}))")
    elif kind == "col_agg":
        src(1, f"partial = np.empty((nchunk, {cols}))")
    elif kind == "full_agg":
        src(1, "partial = np.empty(nchunk)")
    else:  # X.T @ Y: per-chunk partials, updated in place (chunk-local scratch arrays were
        # measured 1.7x slower: numba does not vectorize their updates inside prange)
        nx = x_t.inputs[0].shape[1]
        shape = f"(nchunk, {nx})" if width is None else f"(nchunk, {nx}, {cols})"
        src(1, f"partial = np.zeros({shape})")
    tail = Source()  # what the row loop does with the row's value, after the body
    at = lambda q: rb._at(value, q)  # noqa: E731
    if kind in ("no_agg", "no_agg_b1", "row_agg"):
        tail(3, f"for q in range({rb.size(cols)}):")
        tail(4, f"out[i, q] = {at('q')}")
    elif kind == "col_agg":
        tail(3, f"for q in range({rb.size(cols)}):")
        tail(4, fold(agg, "colacc[q]", at("q")))
    elif kind == "full_agg":
        tail(3, f"for q in range({rb.size(cols)}):")
        tail(4, fold(agg, "acc_full", at("q")))
    else:
        x = x_t.inputs[0]
        sparse_x = rb.nonzeros(x)
        if sparse_x is not None:  # a CSR X: only its row's non-zeros (zeros annihilate)
            for line in sparse_x:
                tail(3, line)
        else:
            tail(3, f"for t in range({rb.size(nx)}):")
            tail(4, f"xv = {rb._at(x, 't')}")
        if x.meta.format.value == "csr":
            tail(4, "if xv == 0.0:")
            tail(5, "continue")
        y_csr = value.meta.format.value == "csr"
        if width is None:
            update = f"partial[c, t] += xv * {at('0')}"
            tail(4, update if not y_csr else f"if {at('0')} != 0.0: {update}")
        else:
            tail(4, f"for q in range({cols}):")
            update = f"partial[c, t, q] += xv * {at('q')}"
            if y_csr:
                tail(5, f"if {at('q')} != 0.0:")
                tail(6, update)
            else:
                tail(5, update)
    scratch_alloc, scratch_fill = rb.scratch_rows()
    src(1, "for c in prange(nchunk):")
    src(2, "lo = c * m // nchunk")
    src(2, "hi = (c + 1) * m // nchunk")
    for line in rb.alloc + scratch_alloc:
        src(2, line)
    if kind == "col_agg":
        src(2, f"colacc = np.full({cols}, {INIT[agg]})")
    if kind == "full_agg":
        src(2, f"acc_full = {INIT[agg]}")
    src(2, "for i in range(lo, hi):")
    for line in scratch_fill + rb.lines:
        src(3, line)
    src.extend(tail.lines)
    if kind == "col_agg":
        src(2, "partial[c, :] = colacc")
        src(1, f"out = np.full({cols}, {INIT[agg]})")
        src(1, "for c in range(nchunk):")
        src(2, f"for q in range({cols}):")
        src(3, fold(agg, "out[q]", "partial[c, q]"))
        src(1, "return out")
    elif kind == "full_agg":
        src(2, "partial[c] = acc_full")
        src(1, f"total = {INIT[agg]}")
        src(1, "for c in range(nchunk):")
        src(2, fold(agg, "total", "partial[c]"))
        src(1, "return np.array([total])")
    elif kind == "col_agg_t":
        src(1, f"out = np.zeros(({nx}, {cols}))")
        src(1, "for c in range(nchunk):")
        src(2, f"for t in range({nx}):")
        src(3, f"for q in range({cols}):")
        src(4, "out[t, q] += partial[c, t]" if width is None else "out[t, q] += partial[c, t, q]")
        src(1, "return out")
    else:
        src(1, "return out")
    return Kernel(PRELUDE + "\n\n" + src.text(), literals.positions(body))
