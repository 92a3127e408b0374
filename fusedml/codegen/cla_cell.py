"""The Cell/MAgg skeleton over a compressed main input's stored values (compressed linear algebra).

When a cell's value depends only on the main input's value at (i, j), scalars and inputs indexed
by the column alone (row vectors), it is the same for every row holding the same tuple: the
kernel evaluates the body once per stored value and weights it by the number of rows holding it:

- a dictionary entry (DDC or SDC tuple t, column j) by the tuple's count;
- an SDC default by the rows holding no other tuple, a constant column's value by every row;
- an uncompressed cell by one (these rows run in parallel chunks).

Sums add ``count * value`` (only for counts above zero: an unused tuple's 0 * inf never shows),
minima and maxima fold each value once. Without aggregation the kernel returns the body applied to
every stored value: a compressed result with the input's codes. Other bodies decode rows (the
generic skeleton through ``CompressedOperand``).
"""

from __future__ import annotations

from fusedml.codegen.chunking import CHUNKS, chunks_source
from fusedml.codegen.operands import DenseOperand, Param, ScalarOperand
from fusedml.codegen.render import Literals, render_scalar_body
from fusedml.codegen.source import INIT, Kernel, Source, combine, fold, module
from fusedml.cplan.kinds import OutputKind
from fusedml.fusion.templates import TemplateType
from fusedml.ir.dag import Dag
from fusedml.ir.node import Node
from fusedml.ir.ops import AGGREGATE, Op

_KINDS = (OutputKind.FULL_AGG, OutputKind.COL_AGG, OutputKind.NO_AGG)


def per_value(cplan, params: tuple[Param, ...], fmt) -> bool:
    """Whether a Cell/MAgg operator over a compressed main input can run once per stored value:
    full or column aggregates, or no aggregation with a compressed result, of a body that reads
    the other inputs by column only."""
    if cplan.template not in (TemplateType.CELL, TemplateType.MAGG):
        return False
    if any(k not in _KINDS for k in cplan.outputs):
        return False
    if OutputKind.NO_AGG in cplan.outputs and cplan.body.roots[0].meta.format is not fmt:
        return False
    rest = params[1:]
    return all(
        isinstance(p.operand, ScalarOperand)
        or (isinstance(p.operand, DenseOperand) and p.node.meta.rows == 1)
        for p in rest
    )


class _PerValue:
    def __init__(self, spec) -> None:
        self.spec = spec
        self.params: list[Param] = list(spec.params)
        self.main = self.params[0]
        cplan = spec.cplan
        self.values = [r.inputs[0] if r.op in AGGREGATE else r for r in cplan.body.roots]
        self.aggs = list(cplan.aggregations)
        self.kind = cplan.outputs[0]
        self.literals = Literals()
        self.setup, self.src, self.finish = Source(), Source(), Source()  # src: the chunk

    def cell_function(self) -> str:
        """``_cell(av, j, <column inputs>, <literals>)``: the outputs' values at one stored value
        ``av`` of column j (rendered first: its literals become the kernel's arguments)."""
        access: dict[Node, str] = {self.main.node: "av"}
        for p in self.params[1:]:
            access[p.node] = p.at("0", "j")
        order = [n for n in Dag(self.values).nodes if n.op is not Op.DATA]
        lines, names = render_scalar_body(order, access, self.literals, "    ")
        results = [names[v] if v.op is not Op.CONST else self.literals.name(v) for v in self.values]
        head = f"def _cell(av, j, {', '.join(self.context())}):"
        ret = f"    return {', '.join(results)}" + ("," if len(results) > 1 else "")
        if len(results) == 1:
            ret = f"    return {results[0]}"
        return "\n".join(["@numba.njit(error_model='numpy')", head, *lines, ret])

    def context(self) -> list[str]:
        names: list[str] = []
        for p in self.params[1:]:
            names += p.args()
        return names + [f"c{k}" for k in range(len(self.literals.nodes))]

    def call(self, value: str, col: str) -> str:
        return f"_cell({value}, {col}, {', '.join(self.context())})"

    def fold_into(self, depth: int, value: str, col: str, weight: str | None) -> None:
        """Fold the outputs' values at one stored value into their accumulators."""
        src = self.src
        k = len(self.values)
        src(depth, f"r = {self.call(value, col)}")
        for r, agg in enumerate(self.aggs):
            v = "r" if k == 1 else f"r[{r}]"
            if agg in ("sum", "mean") and weight is not None:
                v = f"f.mul(np.float64({weight}), {v})"
            acc = f"acc[{r}]" if self.kind is OutputKind.FULL_AGG else f"acc[{col}]"
            src(depth, fold(agg, acc, v))

    def dictionaries(self, depth: int, kind: str) -> None:
        """Every used tuple entry of the DDC ('d') or SDC ('s') groups."""
        a = f"{self.main.name}_{kind}"
        src = self.src
        src(depth, f"for g in range({a}colptr.shape[0] - 1):")
        src(depth + 1, f"lo = {a}colptr[g]")
        src(depth + 1, f"width = {a}colptr[g + 1] - lo")
        src(depth + 1, f"for t in range({a}tupptr[g + 1] - {a}tupptr[g]):")
        src(depth + 2, f"cnt = {a}counts[{a}tupptr[g] + t]")
        src(depth + 2, "if cnt > 0:")
        src(depth + 3, "for q in range(width):")
        src(depth + 4, f"j = {a}cols[lo + q]")
        src(depth + 4, f"av = {a}vals[{a}valptr[g] + t * width + q]")
        self.fold_into(depth + 4, "av", "j", "cnt")

    def aggregate(self) -> None:
        """Chunks of the uncompressed columns' rows, and one more chunk (the last) for every
        dictionary value, each into its own row of partials, combined in chunk order."""
        src, a = self.src, self.main.name
        size = len(self.values) if self.kind is OutputKind.FULL_AGG else "n"
        inits = [INIT[agg] for agg in self.aggs]
        self.setup(1, f"nchunk = {chunks_source(CHUNKS)} + 1")
        self.setup(1, f"partial = np.empty((nchunk, {size}))")
        self.init_acc(2, size, inits)
        src(2, "if c < nchunk - 1:")
        src(3, "lo = c * m // (nchunk - 1)")
        src(3, "hi = (c + 1) * m // (nchunk - 1)")
        src(3, "for i in range(lo, hi):")
        src(4, f"for q in range({a}_ucols.shape[0]):")
        src(5, f"j = {a}_ucols[q]")
        self.fold_into(5, f"{a}_uc[i, q]", "j", None)
        src(2, "else:")
        src(3, "if m > 0:")
        src(4, f"for q in range({a}_ccols.shape[0]):")
        src(5, f"j = {a}_ccols[q]")
        self.fold_into(5, f"{a}_base[j]", "j", "m")
        src(3, f"for s in range({a}_scolptr.shape[0] - 1):")
        src(4, "rest = m")
        src(4, f"for t in range({a}_stupptr[s], {a}_stupptr[s + 1]):")
        src(5, f"rest -= {a}_scounts[t]")
        src(4, "if rest > 0:")
        src(5, f"for q in range({a}_scolptr[s], {a}_scolptr[s + 1]):")
        src(6, f"j = {a}_scols[q]")
        self.fold_into(6, f"{a}_base[j]", "j", "rest")
        self.dictionaries(3, "d")
        self.dictionaries(3, "s")
        src(2, f"for u in range({size}):")  # loops, not slices: numba compiles them faster
        src(3, "partial[c, u] = acc[u]")
        fin = self.finish
        if self.kind is OutputKind.FULL_AGG:
            fin(1, f"acc = np.empty({size})")
            for r, agg in enumerate(self.aggs):
                fin(1, f"acc[{r}] = {combine(agg, f'partial[:, {r}]')}")
            fin(1, "return acc")
        else:
            fin(1, f"return {combine(self.aggs[0], 'partial')}")

    def init_acc(self, depth: int, size, inits: list[str]) -> None:
        if self.kind is OutputKind.FULL_AGG:
            self.src(depth, f"acc = np.empty({size})")
            for r, init in enumerate(inits):
                self.src(depth, f"acc[{r}] = {init}")
        else:
            self.src(depth, "acc = np.empty(n)")
            self.src(depth, "for j in range(n):")
            self.src(depth + 1, f"acc[j] = {inits[0]}")

    def map_values(self) -> None:
        """The body at every stored value: chunks of the uncompressed columns' rows, and one more
        chunk (the last) for the base row and the DDC and SDC values."""
        src, a = self.src, self.main.name
        self.setup(1, f"nchunk = {chunks_source(CHUNKS)} + 1")
        self.setup(1, f"base = np.empty_like({a}_base)")
        for kind in ("d", "s"):
            self.setup(1, f"{kind}vals = np.empty_like({a}_{kind}vals)")
        self.setup(1, f"uc = np.empty_like({a}_uc)")
        src(2, "if c < nchunk - 1:")
        src(3, "for i in range(c * m // (nchunk - 1), (c + 1) * m // (nchunk - 1)):")
        src(4, f"for q in range({a}_ucols.shape[0]):")
        src(5, f"uc[i, q] = {self.call(f'{a}_uc[i, q]', f'{a}_ucols[q]')}")
        src(2, "else:")
        src(3, "for j in range(n):")
        src(4, f"base[j] = {self.call(f'{a}_base[j]', 'j')}")
        for kind in ("d", "s"):
            p = f"{a}_{kind}"
            src(3, f"for g in range({p}colptr.shape[0] - 1):")
            src(4, f"lo = {p}colptr[g]")
            src(4, f"width = {p}colptr[g + 1] - lo")
            src(4, f"for e in range({p}valptr[g], {p}valptr[g + 1]):")
            src(5, f"j = {p}cols[lo + (e - {p}valptr[g]) % width]")
            src(5, f"{kind}vals[e] = {self.call(f'{p}vals[e]', 'j')}")
        self.finish(1, "return base, dvals, svals, uc")

    def build(self) -> Kernel:
        cell = self.cell_function()
        if self.kind is OutputKind.NO_AGG:
            self.map_values()
        else:
            self.aggregate()
        body = self.spec.cplan.body
        return module(
            self.params, self.literals, body, self.setup, self.src, self.finish, helpers=[cell]
        )


def per_value_kernel(spec) -> Kernel:
    """The per-stored-value kernel of a ``KernelSpec`` whose ``sparse`` flag says it applies."""
    return _PerValue(spec).build()
