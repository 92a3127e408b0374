"""The Cell and MAgg skeleton: one value per cell of the main input's shape, then no, row, column
or full aggregation (MAgg: several full aggregates over the same cells).

The skeleton owns the loops: the row loop of a chunk, and either every column or, for a
sparse-safe body over a sparse driver, the driver's stored entries only (the operand's non-zero
iteration); inputs are read through their operands. The generated body fills in one cell's value.
``setup`` allocates the outputs and per-chunk partials, ``finish`` combines the partials.
"""

from __future__ import annotations

from fusedml.codegen.chunking import CHUNKS, chunks_source, partial_chunks_source
from fusedml.codegen.operands import Param
from fusedml.codegen.render import Literals, annihilators, render_scalar_body
from fusedml.codegen.source import INIT, Kernel, Source, combine, fold, module, row_loop
from fusedml.cplan.kinds import OutputKind
from fusedml.ir.dag import Dag
from fusedml.ir.node import Node
from fusedml.ir.ops import AGGREGATE, Op


def side_reads(params: list[Param], main: Param | None, src: Source, depth: int) -> dict:
    """Source expression per placeholder at cell (i, j); the operands' per-row loads go to src."""
    access: dict[Node, str] = {}
    for p in params:
        if p is not main:
            src.block(depth, p.operand.load_row(p, "i"))
            access[p.node] = p.at("i", "j")
    return access


def buffers(params: list[Param], src: Source, depth: int) -> None:
    """Per-chunk scratch of every operand read by cell (row widths are the main input's)."""
    for p in params:
        src.block(depth, p.operand.buffers(p, "n"))


class _Cell:
    """One Cell/MAgg kernel under construction."""

    def __init__(self, spec) -> None:
        self.spec = spec
        self.params: list[Param] = list(spec.params)
        self.main = self.params[0]
        body = spec.cplan.body
        self.values = [r.inputs[0] if r.op in AGGREGATE else r for r in body.roots]
        self.aggs = list(spec.cplan.aggregations)
        self.kind = spec.cplan.outputs[0]  # MAgg: every output is a full aggregate
        self.sparse = spec.sparse
        # a sparse driver's implicit zeros take part in min and max: count what is stored
        self.count_stored = self.sparse and any(a in ("min", "max") for a in self.aggs)
        self.literals = Literals()
        self.setup, self.src, self.finish = Source(), Source(), Source()  # src: the chunk
        # inputs read by a cursor over their rows: merged into a sparse driver's visit, or (no
        # sparse driver) whose union of rows the kernel visits
        self.merged_inputs, self.union_inputs = self.merged(), self.union()
        self.cursored = self.merged_inputs or self.union_inputs

    def merged(self) -> list[Param]:
        """Side inputs of the driver's shape read by a cursor over their rows (a sparse driver
        visits its stored entries by increasing column): the three-way merge of a hand-written
        sum(X*Y*Z) over CSR inputs, where scattering Y's and Z's rows cost 2.3x."""
        if not self.sparse:
            return []
        return [p for p in self._cursorable() if p is not self.main]

    def _cursorable(self) -> list[Param]:
        """The inputs of the main input's shape whose rows a cursor can walk by column."""
        shape = self.main.node.shape
        return [p for p in self.params if p.operand.merges and p.node.shape == shape]

    def skippable(self) -> set[Node]:
        """Inputs whose zero makes every output's cell zero, when a zero cell adds nothing (sums):
        a cell where one is zero is skipped, a row ends where one has no more entries (as the
        hand-written three-way merge of sum(X*Y*Z) does: 1.7x faster than visiting each)."""
        if not self.summed():
            return set()
        return set.intersection(*(annihilators(v) for v in self.values))

    @staticmethod
    def union_visit(union: list[Param]) -> list[str]:
        """The lines that start one visit of a row union: the least next column ``j`` of the
        inputs (the row is done when none has an entry left) and each input's value there."""
        lines = ["j = np.uint64(n)"]
        for p in union:
            lines += p.operand.union_next(p, "j")
        lines += ["if j == np.uint64(n):", "    break"]
        for p in union:
            lines += p.operand.union_read(p, "j")
        return lines

    def intersected(self) -> bool:
        """Whether a cell adds nothing unless the driver and every merged input store a value
        there: the rows are then visited by a k-way merge, each cursor moving up to the largest
        of their columns (the hand-written sum(X*Y*Z): 10-15 % faster than a visit led by the
        driver's entries, which tests each other row for every one of them)."""
        if not (self.sparse and self.merged_inputs and self.main.operand.merges):
            return False
        skippable = self.skippable()
        return all(p.node in skippable for p in self.merged_inputs)

    def intersection_visit(self) -> tuple[list[str], list[str]]:
        """(loop header, lines starting one visit) of the k-way merge (``intersected``): ``j``
        the common column, ``av`` the driver's value, ``{name}_v`` the others'."""
        cursors = [self.main, *self.merged_inputs]
        parts = [p.operand.cursor_parts(p) for p in cursors]
        cols = [col for _, col, _, _ in parts]
        lines = [f"j = max({', '.join(cols)})"]
        lines.append("if " + " or ".join(f"{col} != j" for col in cols) + ":")
        lines += [f"    {at} += np.uint64({col} < j)" for _, col, _, at in parts]
        lines.append("    continue")
        names = ["av", *(f"{p.name}_v" for p in self.merged_inputs)]
        lines += [f"{name} = {value}" for name, (_, _, value, _) in zip(names, parts, strict=True)]
        lines += [f"{at} += np.uint64(1)" for _, _, _, at in parts]
        return ["while " + " and ".join(more for more, _, _, _ in parts) + ":"], lines

    def summed(self) -> bool:
        """Whether the outputs are sums (or means) of the cells, which a zero cell leaves as
        they are."""
        summed = self.kind in (OutputKind.FULL_AGG, OutputKind.COL_AGG, OutputKind.ROW_AGG)
        return summed and all(a in ("sum", "mean") for a in self.aggs)

    def union(self) -> list[Param]:
        """Sparse inputs of the main input's shape whose rows, merged by column, hold every cell
        that adds to the outputs (each output's cell is zero where one of them is): a body that
        is not sparse-safe over the main input alone, as sum(X*X), sum(X*Y), sum(Y*Y) over CSR X
        and Y, still visits only stored entries, in one pass over both (scattering the rows cost
        1.5x)."""
        if self.sparse or not self.summed():
            return []
        candidates = {p.node: p for p in self._cursorable()}
        drivers = [annihilators(v) & candidates.keys() for v in self.values]
        if not all(drivers):
            return []
        chosen = set().union(*drivers)
        return [p for node, p in candidates.items() if node in chosen]

    def cell_body(self) -> tuple[Source, list[str], list[str], list[str]]:
        """(per-row loads, the column loop header, per-cell lines, each output's value)."""
        loads = Source()
        cursored = self.cursored
        read = [
            p for p in self.params if not (self.sparse and p is self.main) and p not in cursored
        ]
        access = side_reads(read, None, loads, 3)
        for p in cursored:
            loads.block(3, p.operand.merge_start(p, "i"))
            access[p.node] = f"{p.name}_v"
        intersected = self.intersected()
        if intersected:
            loads.block(3, self.main.operand.merge_start(self.main, "i"))
            head, visit = self.intersection_visit()
        elif self.union_inputs:
            visit = self.union_visit(self.union_inputs)
        else:
            skippable = self.skippable()
            visit = [
                line
                for p in self.merged_inputs
                for line in p.operand.merge_read(p, "j", p.node in skippable)
            ]
        cursors = ["    " * 4 + line for line in visit]
        if intersected:
            access[self.main.node] = "av"
        elif self.sparse:
            head = self.main.operand.nonzeros(self.main, "i", "j", "av", "p")
            access[self.main.node] = "av"
        elif self.union_inputs:
            head = ["while True:"]
        else:
            head = ["for j in range(n):"]
        order = [n for n in Dag(self.values).nodes if n.op is not Op.DATA]
        lines, names = render_scalar_body(order, access, self.literals, "    " * 4)
        results = [names[v] if v.op is not Op.CONST else self.literals.name(v) for v in self.values]
        return loads, head, cursors + lines, results

    def allocate(self) -> None:
        src, k = self.setup, len(self.values)
        if self.kind is OutputKind.NO_AGG:
            size = self.main.operand.stored(self.main) if self.sparse else "(m, n)"
            src(1, f"out = np.empty({size})")
        elif self.kind is OutputKind.FULL_AGG:
            src(1, f"partial = np.empty((nchunk, {k}))")
            if self.count_stored:
                src(1, "stored = np.zeros(nchunk)")
        elif self.kind is OutputKind.ROW_AGG:
            src(1, "out = np.empty(m)")
        else:
            src(1, "partial = np.empty((nchunk, n))")
            if self.count_stored:
                src(1, "counts = np.zeros((nchunk, n))")

    def chunk_start(self) -> None:
        src = self.src
        src(2, "lo = c * m // nchunk")
        src(2, "hi = (c + 1) * m // nchunk")
        scattered = [p for p in self.params if not (self.sparse and p is self.main)]
        buffers([p for p in scattered if p not in self.cursored], src, 2)
        if self.kind is OutputKind.FULL_AGG:
            for r, agg in enumerate(self.aggs):
                src(2, f"acc{r} = {INIT[agg]}")
            if self.count_stored:
                src(2, "seen = 0.0")
        if self.kind is OutputKind.COL_AGG:
            src(2, "colacc = np.empty(n)")
            src(2, "for j in range(n):")
            src(3, f"colacc[j] = {INIT[self.aggs[0]]}")

    def per_cell(self, results: list[str]) -> None:
        src, agg = self.src, self.aggs[0]
        if self.kind is OutputKind.NO_AGG:
            src(4, f"out[p] = {results[0]}" if self.sparse else f"out[i, j] = {results[0]}")
        elif self.kind is OutputKind.FULL_AGG:
            for r, a in enumerate(self.aggs):
                src(4, fold(a, f"acc{r}", results[r]))
            if self.count_stored:
                src(4, "seen += 1.0")
        elif self.kind is OutputKind.ROW_AGG:
            src(4, fold(agg, "racc", results[0]))
            if self.count_stored:
                src(4, "rseen += 1")
        else:
            src(4, fold(agg, "colacc[j]", results[0]))
            if self.count_stored:
                src(4, "counts[c, j] += 1.0")

    def row_end(self) -> None:
        src, agg = self.src, self.aggs[0]
        if self.kind is not OutputKind.ROW_AGG:
            return
        if self.count_stored:  # implicit zeros of the row take part
            src(3, "if rseen < n:")
            src(4, fold(agg, "racc", "0.0"))
        src(3, "out[i] = f.div(racc, np.float64(n))" if agg == "mean" else "out[i] = racc")

    def chunk_end(self) -> None:
        if self.kind is OutputKind.FULL_AGG:
            for r in range(len(self.aggs)):
                self.src(2, f"partial[c, {r}] = acc{r}")
            if self.count_stored:
                self.src(2, "stored[c] = seen")
        elif self.kind is OutputKind.COL_AGG:  # loops, not slices: numba compiles them faster
            self.src(2, "for j in range(n):")
            self.src(3, "partial[c, j] = colacc[j]")

    def combine(self) -> None:
        """The chunks' partials, combined in chunk order; a sparse driver's implicit zeros take
        part in min and max."""
        src = self.finish
        if self.kind in (OutputKind.NO_AGG, OutputKind.ROW_AGG):
            src(1, "return out")
        elif self.kind is OutputKind.FULL_AGG:
            src(1, f"result = np.empty({len(self.aggs)})")
            for r, agg in enumerate(self.aggs):
                src(1, f"result[{r}] = {combine(agg, f'partial[:, {r}]')}")
                if self.count_stored and agg in ("min", "max"):
                    src(1, "if stored.sum() < m * n:")
                    src(2, f"result[{r}] = np.{agg}imum(result[{r}], 0.0)")
            src(1, "return result")
        else:
            agg = self.aggs[0]
            src(1, f"out = {combine(agg, 'partial')}")
            if self.count_stored:
                src(1, f"return np.where(counts.sum(axis=0) < m, np.{agg}imum(out, 0.0), out)")
            else:
                src(1, "return out")

    def build(self) -> Kernel:
        loads, head, lines, results = self.cell_body()  # renders first: literals become args
        src = self.src
        chunks = partial_chunks_source("n") if self.kind is OutputKind.COL_AGG else CHUNKS
        self.setup(1, f"nchunk = {chunks_source(chunks)}")
        self.allocate()
        self.chunk_start()
        src(2, row_loop(self.params))
        src.extend(loads.lines)
        if self.kind is OutputKind.ROW_AGG:
            src(3, f"racc = {INIT[self.aggs[0]]}")
            if self.count_stored:
                src(3, "rseen = 0")
        src.block(3, head)
        src.extend(lines)
        self.per_cell(results)
        self.row_end()
        self.chunk_end()
        self.combine()
        body = self.spec.cplan.body
        return module(self.params, self.literals, body, self.setup, src, self.finish)


def cell_kernel(spec) -> Kernel:
    """The Cell/MAgg kernel of a ``KernelSpec``."""
    return _Cell(spec).build()
