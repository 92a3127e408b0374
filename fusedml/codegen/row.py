"""Row kernels: the body computes one row at a time, as per-row scalars and short vectors.

Per-row nodes of shape (m, k) are vectors of length k held in per-chunk scratch arrays (scalars when
k == 1), or, read by one other node only, an expression inside it; inputs are read through their
operands (dense rows in place, sparse rows scattered into a scratch row, or walked over their stored
entries by products); matrices multiplied from the right (``X @ B``) are read whole, a product
narrower than ``AXPY_FROM`` as dot products with B.T's rows (``DOT_BLOCK`` of them per read of the
row), a wider one as axpys over B's rows. The skeleton writes rows (no aggregation, row aggregates),
or accumulates per-chunk partials, updated in place and combined in order: column aggregates, full
aggregates, and ``X.T @ Y`` (row i of X times row i of Y; a zero of a per-row X skips Y's finite
rows, and a one-hot X, held as its index, adds a finite row of Y to that one row of the partial).
Skinny dense bodies (every vector at most 32 wide) are rendered over tiles of rows instead, by
``row_tiles``.
"""

from __future__ import annotations

from fusedml.codegen import row_tiles
from fusedml.codegen.chunking import chunks_source, partial_chunks
from fusedml.codegen.operands import DenseOperand, Param
from fusedml.codegen.render import (
    Literals,
    annihilates,
    elementwise_source,
    single_read_vectors,
)
from fusedml.codegen.source import INIT, Kernel, Source, combine, fold, module, row_loop
from fusedml.cplan.kinds import OutputKind
from fusedml.ir.dag import Dag, row_product_operands
from fusedml.ir.node import Node
from fusedml.ir.ops import AGGREGATE, ELEMENTWISE, Op

AXPY_FROM = 16  # products with at least this many columns are rendered as axpys, narrower as dots
DOT_BLOCK = 4  # dot products computed together per read of a row


def whole_matrices(body: Dag) -> set[Node]:
    """Placeholders a row kernel reads whole: the right operands of ``X @ B`` (passed dense)."""
    return {b for b in row_product_operands(body.nodes) if b.op is Op.DATA}


class _RowBody:
    """Renders body nodes for row i; ``value[node]`` is a scalar expression or a vector name."""

    def __init__(self, params: list[Param], body: Dag, rows: int, literals: Literals) -> None:
        self.rows = rows
        self.main_cols = params[0].node.meta.cols
        self.literals = literals
        self.head: list[str] = []  # setup's statements, once per call (may lower ``nchunk``)
        self.alloc: list[str] = []  # per-chunk scratch allocations
        self.lines: list[str] = []  # statements computing the nodes
        # scalars: an expression; vectors: an index template over "{q}" (read in place, no views)
        self.value: dict[Node, str] = {}
        self.width: dict[Node, int | None] = {}  # vector length; None for scalars
        self.param = {p.node: p for p in params}
        self.loaded: dict[Node, None] = {}  # read per cell: loaded per row; ordered (reproducible)
        # the main input and elementwise results over its columns
        self.main_space: set[Node] = {params[0].node}
        self.inline: set[Node] = set()  # elementwise vectors rendered into their one reader
        self.transposed: dict[Node, str] = {}  # B.T copies of the dot-form products
        self.onehot: dict[Node, str] = {}  # one-hot rows, held as their index (a per-row int)
        # whole matrices passed as 2-D dense arrays (a one-row B is passed flat)
        self.transposable = {
            p.node for p in params if isinstance(p.operand, DenseOperand) and not p.operand.flat(p)
        }
        for p in params:
            self._bind(p)

    def _bind(self, p: Param) -> None:
        node = p.node
        if p.scalar:
            self.value[node], self.width[node] = p.name, None
            return
        # matrices multiplied from the right are read by products through ``self.param``; any
        # other (elementwise) use reads them per row like every other input (a sparse row is
        # loaded into its scratch row only if such a use reads it)
        cols = node.shape[1]
        template = p.at("i", "{q}")
        if cols == 1:
            self.value[node], self.width[node] = template.format(q="0"), None
        else:
            self.value[node], self.width[node] = template, cols

    def inline_single_reads(self, nodes: list[Node], kept: set[Node]) -> None:
        """Elementwise vectors read by exactly one other body node, once per element, become an
        expression inside their reader: no scratch vector and no loop of their own (fewer loops
        per row measured 1.2x faster on the KMeans step). ``kept``: nodes the outputs read."""
        self.inline = single_read_vectors(nodes, kept | set(self.param))

    def size(self, k: int, node: Node) -> str:
        """A loop bound over ``node``'s columns: over the main input's columns it stays a runtime
        value (LLVM unrolls constant trip counts such as 20 fully, which was measured 2x slower);
        any other width, such as a product's K columns, is a constant (a runtime bound there was
        measured 1.3x slower on the KMeans step)."""
        return "n" if k == self.main_cols and node in self.main_space else str(k)

    def scratch_rows(self) -> tuple[list[str], list[str]]:
        """(allocations, per-row statements) of the inputs read per cell (sparse rows are
        scattered into a scratch row)."""
        alloc, per_row = [], []
        for node in self.loaded:
            p = self.param[node]
            alloc += p.operand.buffers(p, str(node.shape[1]))
            per_row += p.operand.load_row(p, "i")
        return alloc, per_row

    def nonzeros(self, node: Node, col: str = "t", value: str = "xv") -> list[str] | None:
        """Loop header over the stored entries (column, value) of an input's row, if its layout
        has them."""
        p = self.param.get(node)
        if p is None or not p.nonzero_layout:
            return None
        return p.operand.nonzeros(p, p.row("i"), col, value, "pp")

    def _at(self, node: Node, q: str) -> str:
        if node.op is Op.CONST:
            return self.literals.name(node)
        if node in self.param and not node.meta.is_scalar:
            self.loaded[node] = None
        return self.value[node] if self.width[node] is None else self.value[node].format(q=q)

    def _vector(self, node: Node, width: int, room: int | None = None) -> str:
        name = f"v{len(self.alloc)}"
        self.alloc.append(f"{name} = np.empty({room or width})")
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
            if width is not None and any(i in self.main_space for i in node.inputs):
                self.main_space.add(node)
            if width is None:
                self._scalar(
                    node, elementwise_source(node, [self._at(i, "0") for i in node.inputs])
                )
            elif node in self.inline:
                expr = elementwise_source(node, [self._at(i, "{q}") for i in node.inputs])
                self.value[node], self.width[node] = f"({expr})", width
            else:
                v = self._vector(node, width)
                expr = elementwise_source(node, [self._at(i, "q") for i in node.inputs])
                self.lines += [f"for q in range({self.size(width, node)}):", f"    {v}[q] = {expr}"]
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
                if x in self.param:  # read through the template, not _at: load it too
                    self.loaded[x] = None
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
        elif node.op is Op.ONEHOT:
            self._onehot(node, width)
        else:
            raise NotImplementedError(f"row kernels do not render {node.op}")

    def _row_aggregate(self, node: Node) -> None:
        x = node.inputs[0]
        agg = node.op.value
        if node.op is Op.ARGMAX:  # the index as a float, as the reference computes it
            idx = self._first_maximum(x, self.width[x])
            self.value[node], self.width[node] = f"float({idx})", None
            return
        if self.width[x] is None:  # a one-column row: the aggregate of one value
            self._scalar(node, self._at(x, "0"))
            return
        acc = f"r{len(self.lines)}"
        self.lines.append(f"{acc} = {INIT[agg]}")
        self.lines += [
            f"for q in range({self.size(self.width[x], x)}):",
            f"    {fold(agg, acc, self._at(x, 'q'))}",
        ]
        if agg == "mean":
            self.lines.append(f"{acc} = f.div({acc}, {float(self.width[x])})")
        self.value[node], self.width[node] = acc, None

    def _first_maximum(self, x: Node, width: int | None) -> str:
        """The name of row i's index of the first maximum of x (a NaN before any larger value,
        as np.argmax)."""
        idx = f"r{len(self.lines)}"
        self.lines.append(f"{idx} = 0")
        if width is None:  # one column: always its only value
            return idx
        best = f"{idx}b"
        self.lines += [
            f"{best} = {self._at(x, '0')}",
            f"for q in range(1, {self.size(width, x)}):",
            f"    xq = {self._at(x, 'q')}",
            f"    if {best} == {best} and (xq > {best} or xq != xq):",
            f"        {idx} = q",
            f"        {best} = xq",
        ]
        return idx

    def _onehot(self, node: Node, width: int | None) -> None:
        """Row i's first maximum as a one-hot row: only its index is computed; each read of a
        column compares with it."""
        idx = self._first_maximum(node.inputs[0], width)
        self.onehot[node] = idx
        if width is None:
            self.value[node], self.width[node] = "1.0", None
        else:
            self.value[node], self.width[node] = f"(1.0 if ({{q}}) == {idx} else 0.0)", width

    def _product(self, node: Node, width: int | None) -> None:
        """Row i of X times the whole matrix B (skinny: few columns)."""
        x, b = node.inputs
        if self.nonzeros(x) is not None:
            self._sparse_product(node, x, b, width)
            return
        if width is None or (width < AXPY_FROM and b in self.transposable):
            self._dot_product(node, x, b, width)
            return
        # as axpys over B's rows: the inner loop runs along a contiguous row of B, a whole
        # number of vector registers wide from 16 columns on; each column still sums over t in
        # increasing order
        q = "q"
        b_at = self.param[b].at("t", q)
        x_zeros, b_zeros = annihilates(x), annihilates(b)
        v = self._vector(node, width)
        self.lines += [f"for q in range({self.size(width, node)}):", f"    {v}[q] = 0.0"]
        k = self.size(x.shape[1], x)
        self.lines += [f"for t in range({k}):", f"    xt = {self._at(x, 't')}"]
        indent = "    "
        if x_zeros:
            self.lines.append("    if xt != 0.0:")
            indent = "        "
        self.lines.append(f"{indent}for q in range({self.size(width, node)}):")
        update = f"{v}[q] += f.mul(xt, {b_at})"
        self.lines.append(f"{indent}    {update if not b_zeros else f'if {b_at} != 0.0: {update}'}")

    def _dot_product(self, node: Node, x: Node, b: Node, width: int | None) -> None:
        """Each column of row i @ B as one dot product along the row and a contiguous row of B.T
        (copied once per call): below 16 columns this was measured 1.2-4x faster than axpys
        over B's rows, whose inner loop is a fraction of a vector register wide."""
        blocked = width is not None and width >= DOT_BLOCK
        blocked = blocked and not annihilates(x) and not annihilates(b)
        padded = -(-(width or 1) // DOT_BLOCK) * DOT_BLOCK
        if width is None:
            b_at = self.param[b].at("t", "0")
        else:
            b_at = f"{self._b_t(b)}[q, t]"
        if blocked:
            v = self._vector(node, width, room=padded)
            self._blocked_dots(x, self.transposed[b], v, padded)
            return
        guards = [f"{self._at(x, 't')} != 0.0"] if annihilates(x) else []  # sparse zeros
        guards += [f"{b_at} != 0.0"] if annihilates(b) else []
        term = f"f.mul({self._at(x, 't')}, {b_at})"
        add = f"acc += {term}" if not guards else f"if {' and '.join(guards)}: acc += {term}"
        dot = ["acc = 0.0", f"for t in range({self.size(x.shape[1], x)}):", f"    {add}"]
        if width is None:
            self.lines += dot
            self._scalar(node, "acc")
            return
        v = self._vector(node, width)
        self.lines += [f"for q in range({width}):", *(f"    {line}" for line in dot)]
        self.lines.append(f"    {v}[q] = acc")

    def _b_t(self, b: Node) -> str:
        """The name of B.T, copied once per call (in setup): zero rows pad it to whole blocks of
        dot products (the same copy serves every product with B, blocked or not)."""
        if b not in self.transposed:
            rows = -(-b.shape[1] // DOT_BLOCK) * DOT_BLOCK
            name = self.transposed[b] = f"{self.param[b].name}_t"
            self.head += [
                f"{name} = np.zeros(({rows}, {b.shape[0]}))",
                f"{name}[:{b.shape[1]}] = {self.param[b].name}.T",
            ]
        return self.transposed[b]

    def _blocked_dots(self, x: Node, b_t: str, v: str, columns: int) -> None:
        """The dot products of ``_dot_product``, DOT_BLOCK at a time: each read of the row serves
        DOT_BLOCK rows of B.T (one accumulator each, summed over t in the same order), where one
        dot at a time read the row again per column (the KMeans step on 1,797 x 64, K = 10: 144
        -> 121 us). Every column of the product takes this path, the last block padded with
        zero rows of B.T: columns computed by two different loops could round differently, and
        equal columns of B (KMeans' duplicated centroids) must give equal values."""
        accs = [f"dot{k}" for k in range(DOT_BLOCK)]
        self.lines += [
            f"for q in range(0, {columns}, {DOT_BLOCK}):",
            *(f"    {a} = 0.0" for a in accs),
            f"    for t in range({self.size(x.shape[1], x)}):",
            f"        xt = {self._at(x, 't')}",
            *(f"        {a} += f.mul(xt, {b_t}[q + {k}, t])" for k, a in enumerate(accs)),
            *(f"    {v}[q + {k}] = {a}" for k, a in enumerate(accs)),
        ]

    def _sparse_product(self, node: Node, x: Node, b: Node, width: int | None) -> None:
        """A sparse row times B: only the row's stored entries (a zero of X annihilates anyway)."""
        bp = self.param[b]
        loop = self.nonzeros(x)
        if width is None:
            b_at = bp.at("t", "0")
            guard = "xv != 0.0" + (f" and {b_at} != 0.0" if annihilates(b) else "")
            self.lines += ["acc = 0.0", *loop, f"    if {guard}: acc += f.mul(xv, {b_at})"]
            self._scalar(node, "acc")
            return
        v = self._vector(node, width)
        self.lines += [f"for q in range({self.size(width, node)}):", f"    {v}[q] = 0.0", *loop]
        self.lines += [
            "    if xv != 0.0:",
            f"        for q in range({self.size(width, node)}):",
        ]
        term = f"f.mul(xv, {bp.at('t', 'q')})"
        if annihilates(b):
            self.lines.append(f"            if {bp.at('t', 'q')} != 0.0: {v}[q] += {term}")
        else:
            self.lines.append(f"            {v}[q] += {term}")


def _transposed_product_tail(
    tail: Source, rb: _RowBody, x: Node, y: Node, nx: int, width: int | None, partial: str
) -> None:
    """X.T @ Y: add row i of X (``nx`` values) times row i of Y into the chunk's partial."""
    x_at, y_at = (lambda q: rb._at(x, q)), (lambda q: rb._at(y, q))
    sparse_x, sparse_y = rb.nonzeros(x), rb.nonzeros(y)
    if x in rb.onehot and sparse_y is None:
        tail = _onehot_scatter(tail, rb.onehot[x], y_at, width, partial)
    if sparse_x is None and sparse_y is not None and width is not None:
        # P.T @ Y with P computed per row and a sparse Y: only Y's entries (zeros annihilate)
        for line in rb.nonzeros(y, "q", "yv"):
            tail(3, line)
        if x in rb.onehot:  # a finite entry adds to its row's group only (0 * yv is 0)
            tail(4, "if yv - yv == 0.0:")
            tail(5, f"{partial}[cu, {rb.onehot[x]}, q] += yv")
            tail(4, "elif yv != 0.0:")
        else:
            tail(4, "if yv != 0.0:")
        tail(5, f"for t in range({rb.size(nx, x)}):")
        tail(6, f"{partial}[cu, t, q] += f.mul({x_at('t')}, yv)")
        return
    # a zero of a per-row result P (KMeans' memberships, hinge-loss gradients) skips its row
    # of updates when Y's row is finite, where 0 * y adds nothing (the partials start at +0.0)
    skip_zeros = width is not None and x not in rb.param and not annihilates(x)
    if skip_zeros:
        tail(3, "yfinite = 0.0")  # 0.0 unless some y is +-inf or NaN
        tail(3, f"for q in range({width}):")
        tail(4, f"yfinite += {y_at('q')} * 0.0")
    if sparse_x is not None:  # a sparse X: only its row's stored entries (zeros annihilate)
        for line in sparse_x:
            tail(3, line)
    else:
        tail(3, f"for t in range({rb.size(nx, x)}):")
        tail(4, f"xv = {x_at('t')}")
    if annihilates(x):
        tail(4, "if xv == 0.0:")
        tail(5, "continue")
    elif skip_zeros:
        tail(4, "if xv == 0.0 and yfinite == 0.0:")
        tail(5, "continue")
    y_zeros = annihilates(y)
    if width is None:
        update = f"{partial}[cu, t] += f.mul(xv, {y_at('0')})"
        tail(4, update if not y_zeros else f"if {y_at('0')} != 0.0: {update}")
    else:
        tail(4, f"for q in range({width}):")
        update = f"{partial}[cu, t, q] += f.mul(xv, {y_at('q')})"
        if y_zeros:
            tail(5, f"if {y_at('q')} != 0.0:")
            tail(6, update)
        else:
            tail(5, update)


def _onehot_scatter(tail: Source, label: str, y_at, width: int | None, partial: str):
    """P.T @ Y for a one-hot P: a finite row of Y is added into its group's row of the partial
    only (elsewhere 0 * y adds nothing); the general update that follows runs for other rows,
    for which the returned ``tail`` indents one level deeper."""
    if width is None:
        tail(3, f"if {y_at('0')} - {y_at('0')} == 0.0:")
        tail(4, f"{partial}[cu, {label}] += {y_at('0')}")
    else:
        tail(3, "yfinite = 0.0")
        tail(3, f"for q in range({width}):")
        tail(4, f"yfinite += {y_at('q')} * 0.0")
        tail(3, "if yfinite == 0.0:")
        tail(4, f"for q in range({width}):")
        tail(5, f"{partial}[cu, {label}, q] += {y_at('q')}")
    tail(3, "else:")
    return lambda depth, text: tail(depth + 1, text)


class _Sink:
    """What the row loop does with one output's per-row value: allocations, per-chunk state,
    the per-row update (``tail``), and combining the chunks' partials in order."""

    def __init__(self, root: Node, kind: OutputKind, k: int) -> None:
        self.kind, self.k = kind, k
        self.agg = root.op.value if root.op in AGGREGATE else None
        self.x = None
        if kind is OutputKind.COL_PRODUCT:
            x_t, self.value = root.inputs
            self.x = x_t.inputs[0]  # a per-row result transposed (P.T @ Y), or an input
        elif root.op in AGGREGATE and root.attr("axis") in (None, 0):
            self.value = root.inputs[0]
        else:
            self.value = root

    def partial_cells(self, rb: _RowBody) -> int:
        """Cells of this output's per-chunk partial (0: written per row, no partial)."""
        width = rb.width[self.value] or 1
        if self.kind is OutputKind.COL_PRODUCT:
            return self.x.shape[1] * width
        return {OutputKind.COL_AGG: width, OutputKind.FULL_AGG: 1}.get(self.kind, 0)

    def nodes(self) -> list[Node]:
        return [self.value] if self.x is None else [self.value, self.x]

    def emit(self, rb: _RowBody, head: Source, chunk: Source, tail: Source, end: Source) -> None:
        """``head``: setup's statements (allocations); ``chunk``, ``tail`` and ``end``: the chunk's
        start, the row loop's end and the chunk's end; ``end.after``: finish's statements."""
        k, kind, agg = self.k, self.kind, self.agg
        width = rb.width[self.value]
        cols = 1 if width is None else width
        at = lambda q: rb._at(self.value, q)  # noqa: E731
        out, partial = f"out{k}", f"partial{k}"
        if kind.per_row:
            head(1, f"{out} = np.empty((m, {cols}))")
            tail(3, f"for q in range({rb.size(cols, self.value)}):")
            tail(4, f"{out}[i, q] = {at('q')}")
        elif kind is OutputKind.COL_AGG:
            # updated in place, as X.T @ Y's partials: a chunk-local accumulator vector was
            # measured 1.7x slower on the KMeans step (numba does not vectorize its updates)
            head(1, f"{partial} = np.full((nchunk, {cols}), {INIT[agg]})")
            tail(3, f"for q in range({rb.size(cols, self.value)}):")
            tail(4, fold(agg, f"{partial}[cu, q]", at("q")))
            end(1, f"{out} = {combine(agg, partial)}", after=True)
        elif kind is OutputKind.FULL_AGG:
            head(1, f"{partial} = np.empty(nchunk)")
            chunk(2, f"acc{k} = {INIT[agg]}")
            tail(3, f"for q in range({rb.size(cols, self.value)}):")
            tail(4, fold(agg, f"acc{k}", at("q")))
            end(2, f"{partial}[cu] = acc{k}")
            end(1, f"{out} = np.array([{combine(agg, partial)}])", after=True)
        else:  # X.T @ Y: per-chunk partials, updated in place (chunk-local scratch arrays were
            # measured 1.7x slower: numba does not vectorize their updates)
            nx = self.x.shape[1]
            shape = f"(nchunk, {nx})" if width is None else f"(nchunk, {nx}, {cols})"
            head(1, f"{partial} = np.zeros({shape})")
            _transposed_product_tail(tail, rb, self.x, self.value, nx, width, partial)
            end(1, f"{out} = {combine('sum', partial)}.reshape(({nx}, {cols}))", after=True)


class _End(Source):
    """Lines at the end of each chunk, and (``after``) after the chunk loop."""

    def __init__(self) -> None:
        super().__init__()
        self.after = Source()

    def __call__(self, depth: int, text: str, after: bool = False) -> None:
        if after:
            self.after(depth, text)
        else:
            super().__call__(depth, text)


def row_kernel(spec, body_type: type = _RowBody, sink_type: type = _Sink) -> Kernel:
    """The Row kernel of a ``KernelSpec``: several outputs over the same rows, each of its kind.
    A format's own Row skeleton passes subclasses rendering its products. Skinny dense bodies
    render over tiles of rows instead (``row_tiles``)."""
    if body_type is _RowBody and sink_type is _Sink and row_tiles.applicable(spec):
        return row_tiles.tile_kernel(spec)
    params: list[Param] = list(spec.params)
    body = spec.cplan.body
    literals = Literals()
    rb = body_type(params, body, params[0].node.shape[0], literals)
    sinks = [
        sink_type(r, kind, k)
        for k, (r, kind) in enumerate(zip(body.roots, spec.cplan.outputs, strict=True))
    ]
    kept = [v for sink in sinks for v in sink.nodes()]
    rendered = Dag(kept).nodes
    rb.inline_single_reads(rendered, set(kept))
    for n in rendered:
        rb.render(n)
    setup, src, chunk, tail, end = Source(), Source(), Source(), Source(), _End()
    setup(1, f"nchunk = {chunks_source(partial_chunks(sum(s.partial_cells(rb) for s in sinks)))}")
    for line in rb.head:
        setup(1, line)
    for sink in sinks:
        sink.emit(rb, setup, chunk, tail, end)
    scratch_alloc, scratch_fill = rb.scratch_rows()
    src(2, "lo = c * m // nchunk")
    src(2, "hi = (c + 1) * m // nchunk")
    # partials are indexed by the unsigned chunk: no wrap-around test in the per-row updates
    # (the KMeans step over CSR 4 % faster)
    src(2, "cu = np.uint64(c)")
    for line in rb.alloc + scratch_alloc:
        src(2, line)
    src.extend(chunk.lines)
    src(2, row_loop(params))
    for line in scratch_fill + rb.lines:
        src(3, line)
    src.extend(tail.lines)
    src.extend(end.lines)
    finish = end.after
    finish(1, f"return {', '.join(f'out{k}' for k in range(len(sinks)))}")
    return module(params, literals, body, setup, src, finish)
