"""Row kernels over tiles of rows: the body of a skinny dense Row operator computed for a tile of
up to 256 rows at once, each value stored column-major (K x rows), so that every loop runs along
the tile's rows.

Why. A row-at-a-time body over K = 2-32 columns is a sequence of loops of K iterations per row: loop
overhead and short vectors, not arithmetic, set its speed. Over a tile the same steps are loops of
up to 256 iterations with unit stride: products ``x_i @ B`` sum a block of columns in registers per
row, vectorized along the tile, row aggregates fold one column at a time into a vector of the tile's
rows, and ``P.T @ Y`` sums dot products along the tile (a one-hot P adds each row to its group's
partial instead). Row inputs are copied into column-major tiles once per tile (read in place, their
strided reads were 2-4x slower at K = 16-64). Measured on 1M x 10 against the row-at-a-time kernels:
the KMeans step at K = 10 32 -> 22 ms, MLogReg's Hessian-vector body at K = 2 17 -> 9 ms and at K =
32 92 -> 58 ms; at K = 64 the row kernels' axpys are long enough and won (Hessian body 82-91 against
137 ms), hence ``MAX_WIDTH``. Tiles of 4096 cells (256 rows of 16 columns) beat 1024, 2048 and
16384.

Each cell's arithmetic is the row kernel's: a product's cell sums ``x[t] * B[t, q]`` over t in
increasing order, a row aggregate folds its row's values in column order. Only sums over rows
(column aggregates, ``X.T @ Y``) are reassociated, per tile. Used when the main input is dense
with 2 to ``MAX_WIDTH`` columns, every input is dense and every vector of the body is at most
``MAX_WIDTH`` wide; other bodies stay row-at-a-time.
"""

from __future__ import annotations

from collections.abc import Collection

from fusedml.codegen.chunking import chunks_source, partial_chunks
from fusedml.codegen.operands import DENSE, SCALAR, Param
from fusedml.codegen.render import Literals, elementwise_source, single_read_vectors
from fusedml.codegen.source import INIT, Kernel, Source, combine, fold, module
from fusedml.cplan.kinds import OutputKind
from fusedml.formats import Format
from fusedml.ir.dag import Dag
from fusedml.ir.node import Node
from fusedml.ir.ops import AGGREGATE, ELEMENTWISE, Op

MAX_WIDTH = 32  # widest per-row vector (and main input) a tiled kernel takes
# Tiles pay for their compile only on operators that run long enough: a tiled kernel compiles in
# 2-3 s (a row-at-a-time one in 0.3-1 s) and saves 30-50 % of a call, 5-10 ms per call on 1M rows
# of KMeans' and MLogReg's bodies, a fraction of a millisecond on 100k. Main inputs of fewer rows
# than this run row by row.
TILE_MIN_ROWS = 500_000
TILE_CELLS = 4096  # cells of one tile buffer (32 KB): tile rows = TILE_CELLS // widest vector
MAX_TILE = 256
# a product's columns computed together, each in a register across the (fully unrolled) sum over
# t, the loop along the tile vectorized: at K = 10 on 1M x 10 13.4 against 15.1 ms per KMeans
# step for the loop over t innermost with each column's tile row updated in memory; a run-time
# bound on t (no unrolling) kept the tile loop scalar, 26 ms
PRODUCT_BLOCK = 4
# Products ``X @ B`` of a row input and a whole matrix of at least ``BLAS_MIN_COLS`` columns and
# ``BLAS_MIN_CELLS`` cells are one BLAS call per tile (B.T times the tile's rows, transposed: the
# K x rows layout of every tile vector), the rest of the body its epilogue on the tile while it is
# in cache. Such bodies take any width and row count from ``BLAS_MIN_ROWS``, their tiles sized by
# ``BLAS_TILE_CELLS`` per vector (256 KB: a tile's product and epilogue stay within L2).
BLAS_MIN_COLS = 8
BLAS_MIN_CELLS = 256
BLAS_MIN_ROWS = 2_048
BLAS_TILE_CELLS = 32_768
WIDE_SCATTER = 64  # rows at least this wide are added into a one-hot sum without banks
# the row of tile row r, unsigned: numba then skips its negative-index wraparound on every access
# (the tile copy of the KMeans step's 1M x 11 input took 12 ms signed, 7 ms unsigned; the whole
# kernel 19.5-20.4 -> 14.8-15.6 ms)
ROW = "np.uint64(i0 + {})".format


def _vector_fold(agg: str, acc: str, value: str) -> str:
    """``fold`` for a row aggregate folded one column at a time along the tile: min and max as
    the selects ``_vmin``/``_vmax``: the values of ``_min``/``_max`` (NaN propagates, the first
    of equal values stays), in a form LLVM vectorizes along the tile."""
    if agg in ("min", "max"):
        return f"{acc} = _v{agg}({acc}, {value})"
    return fold(agg, acc, value)


def _roots_and_kinds(spec) -> list[tuple[Node, OutputKind]]:
    return list(zip(spec.cplan.body.roots, spec.cplan.outputs, strict=True))


def _sink_nodes(root: Node, kind: OutputKind) -> list[Node]:
    if kind is OutputKind.COL_PRODUCT:
        x_t, y = root.inputs
        return [y, x_t.inputs[0]]
    if root.op in AGGREGATE and root.attr("axis") in (None, 0):
        return [root.inputs[0]]
    return [root]


def _width(node: Node) -> int:
    return 1 if node.meta.is_scalar else node.shape[1]


def _one_per_row(node: Node) -> bool:
    """One value per row (or a scalar)."""
    return node.meta.is_scalar or node.shape[1] == 1


def blas_product(node: Node, placeholders: Collection[Node]) -> bool:
    """Whether a body node is a product computed by BLAS over each tile: a dense row input
    times a whole matrix wide and large enough (``BLAS_MIN_COLS``, ``BLAS_MIN_CELLS``)."""
    if node.op is not Op.MATMUL:
        return False
    x, b = node.inputs
    return (
        x in placeholders
        and b in placeholders
        and x.meta.rows > 1
        and x.meta.cols > 1
        and b.meta.cols >= BLAS_MIN_COLS
        and b.meta.rows * b.meta.cols >= BLAS_MIN_CELLS
    )


def _has_blas_product(nodes: list[Node], placeholders: set[Node]) -> bool:
    return any(blas_product(n, placeholders) for n in nodes)


def applicable(spec) -> bool:
    """Whether a Row operator renders over tiles: a dense main input of at least 2 columns,
    every input dense (or a scalar), and a body of elementwise ops, row aggregates and products
    with whole matrices, one of them at least 2 columns wide. Either a product is BLAS's
    (``blas_product``; from ``BLAS_MIN_ROWS`` rows) or the main input and every vector are at
    most ``MAX_WIDTH`` wide (from ``TILE_MIN_ROWS`` rows)."""
    params = spec.params
    main = params[0]
    if main.operand is not DENSE or main.node.meta.format is not Format.DENSE:
        return False
    if main.node.meta.cols < 2:
        return False
    for p in params:
        if p.operand is SCALAR:
            continue
        if p.operand is not DENSE or p.node.meta.format is not Format.DENSE:
            return False
    placeholders = {p.node for p in params}
    kept = [n for root, kind in _roots_and_kinds(spec) for n in _sink_nodes(root, kind)]
    nodes = Dag(kept).nodes
    # only bodies with a product of 2 or more columns: one-column bodies (GLM's, L2SVM's) ran
    # faster row by row (mmchain on 1M x 10: 7.3 against 12 ms tiled), and their tiled
    # kernels took 1.6x longer to compile (a GLM fit's 11 kernels: 10.5 against 6.6 s)
    if not any(n.op is Op.MATMUL and _width(n) >= 2 for n in nodes):
        return False
    if _has_blas_product(nodes, placeholders):
        narrow, least_rows = False, BLAS_MIN_ROWS
    else:
        narrow, least_rows = True, TILE_MIN_ROWS
    if main.node.meta.rows < least_rows or (narrow and main.node.meta.cols > MAX_WIDTH):
        return False
    for node in nodes:
        if node in placeholders or node.op is Op.CONST:
            continue
        if narrow and _width(node) > MAX_WIDTH:
            return False
        if node.op in ELEMENTWISE:
            continue
        if node.op in AGGREGATE and node.attr("axis") == 1:  # sum, mean, min, max, argmax
            continue
        if node.op is Op.ONEHOT:
            continue
        if (
            node.op is Op.MATMUL
            and node.inputs[1] in placeholders
            and node.inputs[0].op is not Op.TRANSPOSE
        ):
            continue
        return False
    return True


class _TileBody:
    """Renders body nodes for the rows ``i0 + r`` of one tile; ``value[node]`` is a source
    template over ``{q}`` (column) and ``{r}`` (row of the tile)."""

    def __init__(self, params: list[Param], literals: Literals, tile: int) -> None:
        self.literals = literals
        self.tile = tile
        self.main = params[0].node
        self.main_cols = self.main.meta.cols
        self.param = {p.node: p for p in params}
        self.alloc: list[str] = []  # per-chunk tile buffers
        self.lines: list[str] = []  # per-tile statements
        self._open: tuple[tuple[str, ...], int] | None = None  # the last elementwise loop
        self.value: dict[Node, str] = {}
        self.width: dict[Node, int | None] = {}  # None: one value per row (or a scalar)
        self.main_space: set[Node] = {self.main}
        self.row_inputs: set[Node] = set()  # 2-D inputs read per row, through a tile copy
        self.tiled: dict[Node, None] = {}  # those the body reads: copied per tile (ordered)
        self.inline: set[Node] = set()  # elementwise vectors rendered into their one reader
        self.onehot: dict[Node, str] = {}  # one-hot rows: the name of their index per tile row
        self.blas = False  # a product is a BLAS call per tile
        for p in params:
            self._bind(p)

    def _bind(self, p: Param) -> None:
        node = p.node
        if p.scalar:
            self.value[node], self.width[node] = p.name, None
        elif node.meta.rows > 1 and node.meta.cols > 1:  # a row input: copied into its tile
            self.row_inputs.add(node)
            self.value[node], self.width[node] = f"{p.name}_t[{{q}}, {{r}}]", node.meta.cols
        else:
            rows = ROW("{r}") if node.meta.rows > 1 else "0"
            template = p.at(rows, "{q}")
            width = None if node.meta.cols == 1 else node.meta.cols
            self.value[node], self.width[node] = template, width

    def inline_single_reads(self, nodes: list[Node], kept: set[Node]) -> None:
        """Elementwise vectors read by exactly one other node, not by a product, become an
        expression inside their reader: one pass over the tile fewer (as in the row kernel).
        A per-row value is inlined only into a per-row reader (into a vector's loop over its
        columns it would be computed once per column): MLogReg's softmax chain of per-row
        values is then one loop, where a loop per value made its kernel 30 loops long."""
        candidates = single_read_vectors(nodes, kept | set(self.param))
        reader = {i: n for n in nodes for i in n.inputs if i in candidates}
        self.inline = {
            n for n in candidates
            if not _one_per_row(n) or (_one_per_row(reader[n]) and reader[n].op in ELEMENTWISE)
        }  # fmt: skip

    def loop(self, width: int, node: Node) -> str:
        """A loop bound over ``node``'s columns: the main input's width stays a run-time value."""
        return "n" if width == self.main_cols and node in self.main_space else str(width)

    def at(self, node: Node, q: str, r: str = "r") -> str:
        if node.op is Op.CONST:
            return self.literals.name(node)
        if node in self.row_inputs:
            self.tiled[node] = None
        return self.value[node].format(q=q, r=r)

    def in_place(self, node: Node, q: str) -> str:
        """``at`` for tile row r, but a row input read in place (its row's columns contiguous)
        rather than from its column-major tile."""
        if node in self.row_inputs:
            return self.param[node].at(ROW("r"), q)
        return self.at(node, q)

    def tile_copies(self) -> tuple[list[str], list[str]]:
        """(allocations, per-tile statements) of the row inputs the body reads: each tile of
        rows copied column-major once, so that every read along the tile has unit stride (reads
        of row i's columns in place were 2-4x slower for K = 16-64)."""
        alloc, copy = [], []
        for node in self.tiled:
            p = self.param[node]
            cols = node.meta.cols  # a constant bound: unrolled, 1.15x faster than a run-time n
            alloc.append(f"{p.name}_t = np.empty(({node.meta.cols}, {self.tile}))")
            copy += [f"for t in range({cols}):", "    for r in range(rows):",
                     f"        {p.name}_t[t, r] = {p.at(ROW('r'), 't')}"]  # fmt: skip
        return alloc, copy

    def _vector(self, node: Node, width: int) -> str:
        name = f"tv{len(self.alloc)}"
        self.alloc.append(f"{name} = np.empty(({width}, {self.tile}))")
        self.value[node], self.width[node] = f"{name}[{{q}}, {{r}}]", width
        return name

    def _per_row(self, node: Node) -> str:
        name = f"tw{len(self.alloc)}"
        self.alloc.append(f"{name} = np.empty({self.tile})")
        self.value[node], self.width[node] = f"{name}[{{r}}]", None
        return name

    def render(self, node: Node) -> None:
        if node in self.value or node.op in (Op.TRANSPOSE, Op.CONST):
            return
        width = None if node.meta.is_scalar or node.shape[1] == 1 else node.shape[1]
        if node.op in ELEMENTWISE:
            if width is not None and any(i in self.main_space for i in node.inputs):
                self.main_space.add(node)
            if width is None and node in self.inline:
                expr = elementwise_source(node, [self.at(i, "0", "{r}") for i in node.inputs])
                self.value[node], self.width[node] = f"({expr})", None
            elif width is None:
                s = self._per_row(node)
                expr = elementwise_source(node, [self.at(i, "0") for i in node.inputs])
                self._elementwise(("for r in range(rows):",), f"{s}[r] = {expr}")
            elif node in self.inline:
                expr = elementwise_source(node, [self.at(i, "{q}", "{r}") for i in node.inputs])
                self.value[node], self.width[node] = f"({expr})", width
            else:
                v = self._vector(node, width)
                expr = elementwise_source(node, [self.at(i, "q") for i in node.inputs])
                loop = (f"for q in range({self.loop(width, node)}):", "    for r in range(rows):")
                self._elementwise(loop, f"{v}[q, r] = {expr}")
        elif node.op in AGGREGATE:
            self._row_aggregate(node)
        elif node.op is Op.ONEHOT:
            self._onehot(node, width)
        else:
            self._product(node, width)

    def _elementwise(self, loop: tuple[str, ...], statement: str) -> None:
        """``statement`` in ``loop``, the loop of the elementwise node rendered just before if it
        has the same bounds: each statement reads its operands at its own cell, computed earlier
        in the same iteration, so one loop serves consecutive nodes (fewer loops: a shorter
        compile, and one pass over the tile)."""
        if self._open is not None and self._open == (loop, len(self.lines)):
            self.lines.append("    " * len(loop) + statement)
        else:
            self.lines += [*loop, "    " * len(loop) + statement]
        self._open = (loop, len(self.lines))

    def _onehot(self, node: Node, width: int | None) -> None:
        """Each row's first maximum as a one-hot row, held as its index."""
        idx = self._first_maximum(node.inputs[0], width)
        self.onehot[node] = idx
        if width is None:  # one column: always its only value
            self.value[node], self.width[node] = "1.0", None
        else:
            self.value[node], self.width[node] = f"(1.0 if ({{q}}) == {idx}[{{r}}] else 0.0)", width

    def _first_maximum(self, x: Node, width: int | None) -> str:
        """The name of the tile's indices of each row's first maximum of x (NaN first, as
        np.argmax): the maxima fold one column at a time along the tile, as row aggregates do."""
        idx = f"ti{len(self.alloc)}"
        self.alloc.append(f"{idx} = np.zeros({self.tile}, np.int64)")
        if width is None:  # one column: always index 0
            return idx
        best = f"tb{len(self.alloc)}"
        self.alloc.append(f"{best} = np.empty({self.tile})")
        self.lines += ["for r in range(rows):", f"    {idx}[r] = 0",
                       f"    {best}[r] = {self.at(x, '0')}",
                       f"for q in range(1, {self.loop(width, x)}):", "    for r in range(rows):",
                       f"        xq = {self.at(x, 'q')}",
                       f"        bq = {best}[r]",
                       "        take = (xq > bq) | ((xq != xq) & (bq == bq))",
                       f"        {idx}[r] = q if take else {idx}[r]",
                       f"        {best}[r] = xq if take else {best}[r]"]  # fmt: skip
        return idx

    def _row_aggregate(self, node: Node) -> None:
        x, agg = node.inputs[0], node.op.value
        if node.op is Op.ARGMAX:  # the index as a float, as the reference computes it
            idx = self._first_maximum(x, self.width[x])
            self.value[node], self.width[node] = f"float({idx}[{{r}}])", None
            return
        if x.op is Op.CONST or self.width[x] is None:  # one value per row: itself
            self.value[node], self.width[node] = self.at(x, "0", "{r}"), None
            return
        s = self._per_row(node)
        self.lines += ["for r in range(rows):", f"    {s}[r] = {INIT[agg]}"]
        loop = f"for q in range({self.loop(self.width[x], x)}):"
        step = _vector_fold(agg, f"{s}[r]", self.at(x, "q"))
        self.lines += [loop, "    for r in range(rows):", f"        {step}"]
        if agg == "mean":
            mean = f"{s}[r] = f.div({s}[r], {float(self.width[x])})"
            self.lines += ["for r in range(rows):", f"    {mean}"]

    def _blas_product(self, node: Node, width: int) -> None:
        """Rows of X times B by BLAS: the tile's K x rows block is B.T @ X[tile rows].T."""
        x, b = node.inputs
        v = f"tp{len(self.alloc)}"
        self.alloc.append(f"{v}_cells = np.empty({width * self.tile})")
        self.lines += [f"{v} = {v}_cells[: {width} * rows].reshape(({width}, rows))",
                       f"np.dot({self.param[b].name}.T, {self.param[x].name}[i0 : i0 + rows].T,"
                       f" {v})"]  # fmt: skip
        self.value[node], self.width[node] = f"{v}[{{q}}, {{r}}]", width
        self.blas = True

    def _product(self, node: Node, width: int | None) -> None:
        """Rows of X times the whole matrix B: each cell sums x[t] * B[t, q] over t in order, as
        the row kernel's dot products do; here ``PRODUCT_BLOCK`` columns at a time, their sums
        in registers, the loop along the tile's rows outermost (and vectorized). Large enough
        products are BLAS's (``blas_product``)."""
        if blas_product(node, self.param.keys()):
            self._blas_product(node, width)
            return
        x, b = node.inputs
        k = self.loop(self.width[x] or 1, x)
        b_at = self.param[b].at("t", "q" if width is not None else "0")
        if width is None:
            s = self._per_row(node)
            self.lines += ["for r in range(rows):", f"    {s}[r] = 0.0",
                           f"for t in range({k}):", f"    bt = {b_at}",
                           "    for r in range(rows):",
                           f"        {s}[r] += f.mul({self.at(x, 't')}, bt)"]  # fmt: skip
            return
        v = self._vector(node, width)
        inner = self.width[x] or 1
        for q0 in range(0, width, PRODUCT_BLOCK):
            block = range(q0, min(q0 + PRODUCT_BLOCK, width))
            self.lines += ["for r in range(rows):", *(f"    p{q} = 0.0" for q in block),
                           f"    for t in range({inner}):", f"        xt = {self.at(x, 't')}",
                           *(f"        p{q} += f.mul(xt, {self.param[b].at('t', str(q))})"
                             for q in block),
                           *(f"    {v}[{q}, r] = p{q}" for q in block)]  # fmt: skip


def _emit_sink(tb: _TileBody, root: Node, kind: OutputKind, k: int, src: dict) -> None:
    """What one output does with the tile's values: rows written, or per-chunk partials updated
    in place and combined in chunk order after the chunks. ``src``: the Sources of setup (head),
    in a chunk before its tiles (chunk), per tile (tail), in a chunk after its tiles (end) and of
    finish (after)."""
    head, chunk, tail, end, after = (src[k] for k in ("head", "chunk", "tail", "end", "after"))
    nodes = _sink_nodes(root, kind)
    value = nodes[0]
    width = tb.width[value]
    cols = 1 if width is None else width
    at = lambda q: tb.at(value, q)  # noqa: E731
    out, partial = f"out{k}", f"partial{k}"
    if kind.per_row:
        head(1, f"{out} = np.empty((m, {cols}))")
        tail(3, f"for q in range({tb.loop(cols, value)}):")
        tail(4, "for r in range(rows):")
        tail(5, f"{out}[{ROW('r')}, q] = {at('q')}")
        return
    agg = root.op.value if root.op in AGGREGATE else None
    if kind is OutputKind.COL_AGG:
        after(1, f"{out} = {combine(agg, partial)}")
        head(1, f"{partial} = np.full((nchunk, {cols}), {INIT[agg]})")
        if _counts(value, agg, tb):  # exact integers, in two banks as _onehot_scatter's sums
            _banks(chunk, end, f"bank{k}", {"q": cols}, f"{partial}[c, q]")
            tail(3, "for r in range(rows):")
            tail(4, f"bank{k}[r & 1, {tb.onehot[value]}[r]] += 1.0")
        else:
            tail(3, f"for q in range({tb.loop(cols, value)}):")
            tail(4, f"acc = {INIT[agg]}")
            tail(4, "for r in range(rows):")
            tail(5, fold(agg, "acc", at("q")))
            tail(4, fold(agg, f"{partial}[c, q]", "acc"))
    elif kind is OutputKind.FULL_AGG:  # row by row, in the row kernel's order
        head(1, f"{partial} = np.empty(nchunk)")
        chunk(2, f"acc{k} = {INIT[agg]}")
        tail(3, "for r in range(rows):")
        tail(4, f"for q in range({tb.loop(cols, value)}):")
        tail(5, fold(agg, f"acc{k}", at("q")))
        end(2, f"{partial}[c] = acc{k}")
        after(1, f"{out} = np.array([{combine(agg, partial)}])")
    else:  # X.T @ Y: one dot product along the tile per cell
        x = nodes[1]
        nx = x.shape[1]
        shape = f"(nchunk, {nx})" if width is None else f"(nchunk, {nx}, {cols})"
        head(1, f"{partial} = np.zeros({shape})")
        cell = f"{partial}[c, t]" if width is None else f"{partial}[c, t, q]"
        if x in tb.onehot and cols >= WIDE_SCATTER:  # straight into the chunk's partial
            into = lambda t, q: f"{partial}[c, {t}, {q}]"  # noqa: E731
            _onehot_scatter(tb, tail, tb.onehot[x], x, value, into)
        elif x in tb.onehot:
            _banks(chunk, end, f"bank{k}", {"t": nx, "q": cols}, cell)
            into = lambda t, q: f"bank{k}[r & 1, {t}, {q}]"  # noqa: E731
            _onehot_scatter(tb, tail, tb.onehot[x], x, value, into)
        else:
            _dots(tb, tail, x, value, width, cell)
        after(1, f"{out} = {combine('sum', partial)}.reshape(({nx}, {cols}))")


def _banks(chunk: Source, end: Source, bank: str, dims: dict[str, int], cell: str) -> None:
    """Two per-chunk banks of sums over ``dims`` (loop variable -> extent), for even and odd
    rows, added into ``cell`` (over the same loop variables) after the chunk's tiles."""
    chunk(2, f"{bank} = np.zeros((2, {', '.join(map(str, dims.values()))}))")
    for depth, (var, extent) in enumerate(dims.items(), start=2):
        end(depth, f"for {var} in range({extent}):")
    at = ", ".join(dims)
    end(2 + len(dims), f"{cell} = {bank}[0, {at}] + {bank}[1, {at}]")


def _counts(value: Node, agg: str | None, tb: _TileBody) -> bool:
    """Whether a column sum counts a one-hot row's hot cells."""
    return agg == "sum" and value in tb.onehot and tb.width[value] is not None


def _dots(tb: _TileBody, tail: Source, x: Node, y: Node, width: int | None, cell: str) -> None:
    """X.T @ Y over a tile: one dot product along the tile per cell of the partial."""
    tail(3, f"for t in range({tb.loop(x.shape[1], x)}):")
    tail(4, f"for q in range({tb.loop(width or 1, y)}):")
    tail(5, "acc = 0.0")
    tail(5, "for r in range(rows):")
    tail(6, f"acc += f.mul({tb.at(x, 't')}, {tb.at(y, 'q')})")
    tail(5, f"{cell} += acc")


def _onehot_scatter(tb: _TileBody, tail: Source, idx: str, x: Node, y: Node, cell) -> None:
    """P.T @ Y for a one-hot P: each row of Y is added into its group's row of the partial
    (1 * y); other groups get 0 * y, which adds nothing unless the row holds inf or NaN (then
    its sum is not finite; a finite sum that overflows only adds zeros, which change no partial:
    one is never -0.0). Even and odd rows go to two banks (groups x Y's columns), so that a row's
    update does not wait for the previous row's to the same group (KMeans step on 1M x 10: 10.8
    -> 10.0 ms, with the counts banked alike); rows of ``WIDE_SCATTER`` or more columns are
    independent adds enough, and go straight into the chunk's partial (no banks to zero and add:
    51 MB a call at 256 groups x 784 columns). Y's rows are read in place (contiguous).
    ``cell(t, q)``: the sum of group t, column q."""
    cols = tb.width[y] or 1
    tail(3, "for r in range(rows):")
    tail(4, f"g = {idx}[r]")
    tail(4, "ysum = 0.0")
    tail(4, f"for q in range({cols}):")
    tail(5, f"v = {tb.in_place(y, 'q')}")
    tail(5, f"{cell('g', 'q')} += v")
    tail(5, "ysum += v")
    tail(4, "if ysum - ysum != 0.0:")
    tail(5, f"for t in range({x.shape[1]}):")
    tail(6, "if t != g:")
    tail(7, f"for q in range({cols}):")
    tail(8, f"{cell('t', 'q')} += f.mul(0.0, {tb.in_place(y, 'q')})")


def _partial_cells(root: Node, kind: OutputKind, tb: _TileBody) -> int:
    value = _sink_nodes(root, kind)[0]
    width = tb.width[value] or 1
    if kind is OutputKind.COL_PRODUCT:
        return _sink_nodes(root, kind)[1].shape[1] * width
    return {OutputKind.COL_AGG: width, OutputKind.FULL_AGG: 1}.get(kind, 0)


def tile_kernel(spec) -> Kernel:
    """The tiled Row kernel of a ``KernelSpec`` that is ``applicable``."""
    params: list[Param] = list(spec.params)
    outputs = _roots_and_kinds(spec)
    kept = [n for root, kind in outputs for n in _sink_nodes(root, kind)]
    nodes = Dag(kept).nodes
    placeholders = {p.node for p in params}
    if _has_blas_product(nodes, placeholders):  # tiles sized by the body's own vectors
        widest = max(_width(n) for n in nodes if not n.meta.is_scalar and n not in placeholders)
        tile = max(64, min(MAX_TILE, BLAS_TILE_CELLS // widest))
    else:
        widest = max(_width(n) for n in nodes if not n.meta.is_scalar)
        tile = max(16, min(MAX_TILE, TILE_CELLS // widest))
    literals = Literals()
    tb = _TileBody(params, literals, tile)
    tb.inline_single_reads(nodes, set(kept))
    for node in nodes:
        tb.render(node)
    src = Source()
    parts = {name: Source() for name in ("head", "chunk", "tail", "end", "after")}
    cells = sum(_partial_cells(root, kind, tb) for root, kind in outputs)
    parts["head"](1, f"nchunk = {chunks_source(partial_chunks(cells))}")
    for k, (root, kind) in enumerate(outputs):
        _emit_sink(tb, root, kind, k, parts)
    src(2, "lo = c * m // nchunk")
    src(2, "hi = (c + 1) * m // nchunk")
    copies_alloc, copies = tb.tile_copies()
    buffers = tb.alloc + copies_alloc
    # a BLAS body's tile buffers are noalias arguments of its chunk body (``Kernel.scratch``)
    scratch = buffers if tb.blas else []
    for line in [] if tb.blas else buffers:
        src(2, line)
    src.extend(parts["chunk"].lines)
    src(2, f"for i0 in range(lo, hi, {tile}):")
    src(3, f"rows = min(hi - i0, {tile})")
    for line in copies + tb.lines:
        src(3, line)
    src.extend(parts["tail"].lines)
    src.extend(parts["end"].lines)
    finish = parts["after"]
    finish(1, f"return {', '.join(f'out{k}' for k in range(len(outputs)))}")
    return module(
        params, literals, spec.cplan.body, parts["head"], src, finish, blas=tb.blas,
        scratch=scratch,
    )  # fmt: skip
