"""The Outer skeleton: ``f(W, U @ V.T)`` evaluated only at a sparse driver W's stored entries (or
at every cell of a dense one), ``U[i] . V[j]`` computed per visited cell and
never materialized; then a full sum, the cell values, ``(...) @ R`` or ``(...).T @ L``.

A dense driver's zero cells are skipped too when they provably add nothing: the summed value is
``W * h`` and setup bounds ``h`` (and ``R`` or ``L``) as finite for this call (``bounds.py``);
when W is mostly zero each row's non-zero columns are gathered first, then visited.

Rows, columns and the rank run unsigned (``np.uint64``): LLVM then drops numba's negative-index
wrap-around of each read, which made the dense driver's loop 1.2x slower.
"""

from __future__ import annotations

from fusedml.codegen import bounds
from fusedml.codegen.cell import buffers, side_reads
from fusedml.codegen.chunking import CHUNKS, chunks_source, partial_chunks_source
from fusedml.codegen.operands import DenseOperand, Param
from fusedml.codegen.render import Literals, render_scalar_body
from fusedml.codegen.source import Kernel, Source, combine, module, row_loop
from fusedml.cplan.kinds import OutputKind
from fusedml.fusion.templates import outer_product
from fusedml.ir.dag import Dag
from fusedml.ir.node import Node
from fusedml.ir.ops import Op

# Gathering a row's non-zero columns costs a pass over the row (0.65 ns a cell here against
# 2.9 ns for a rank-10 dot product): a driver more than half non-zero is visited cell by cell.
_MOSTLY_ZERO = '''\
def _mostly_zero(a):
    """Whether at most half the cells of up to 64 evenly spaced rows of a are non-zero."""
    rows = a[:: max(1, a.shape[0] // 64)]
    return 2 * np.count_nonzero(rows) <= rows.size
'''


def outer_factors(node: Node) -> tuple[Node, Node, bool]:
    """(U, V, transposed) of an outer product U @ V.T (or U @ Vt with a materialized Vt)."""
    left, right = node.inputs
    if right.op is Op.TRANSPOSE:
        return left, right.inputs[0], True
    return left, right, False


def _ncols(p: Param) -> str:
    assert isinstance(p.operand, DenseOperand), "factors and product operands are read whole"
    return p.operand.ncols(p)


class _Outer:
    def __init__(self, spec) -> None:
        self.spec = spec
        self.params: list[Param] = list(spec.params)
        self.main = self.params[0]
        self.param = {p.node: p for p in self.params}
        (self.root,) = spec.cplan.body.roots
        self.kind = spec.cplan.outputs[0]
        self.sparse = spec.sparse
        self.literals = Literals()
        self.setup, self.src, self.finish = Source(), Source(), Source()  # src: the chunk
        self.helpers: list[str] = []  # module-level source setup calls
        root = self.root
        if self.kind is OutputKind.COL_PRODUCT:  # (Y).T @ L: the transpose of the cell values Y
            self.value = root.inputs[0].inputs[0]
        elif self.kind in (OutputKind.FULL_AGG, OutputKind.ROW_PRODUCT):
            self.value = root.inputs[0]
        else:
            self.value = root
        self.other = self.param.get(root.inputs[1]) if root.op is Op.MATMUL else None
        self.gathers = False  # a dense driver's non-zero columns are gathered per row

    def cell_body(self) -> tuple[Source, list[str], list[str], str]:
        """(per-row loads, the column loop header, per-cell lines, the cell value)."""
        loads = Source()
        main, param = self.main, self.param
        access = side_reads(self.params, main, loads, 3)
        if self.sparse:
            head = main.operand.nonzeros(main, "i", "j", "av", "p")
            access[main.node] = "av"
        else:
            loads.block(3, main.operand.load_row(main, "i"))
            head = self.dense_columns(loads)
            access[main.node] = "av"
        dots = [] if self.sparse else [f"av = {main.at('i', 'j')}"]
        for k, n in enumerate(x for x in Dag([self.value]).nodes if outer_product(x)):
            u, v, transposed = outer_factors(n)
            v_at = param[v].at("j", "r") if transposed else param[v].at("r", "j")
            dots += [f"uv{k} = 0.0", f"for r in range(np.uint64({_ncols(param[u])})):",
                     f"    uv{k} += f.mul({param[u].at('i', 'r')}, {v_at})"]  # fmt: skip
            access[n] = f"uv{k}"
            if transposed:
                access[n.inputs[1]] = "None"  # the transpose is read in place, never computed
        order = [n for n in Dag([self.value]).nodes if n.op is not Op.DATA and n not in access]
        lines, names = render_scalar_body(order, access, self.literals, "    " * 4)
        return loads, head, ["    " * 4 + d for d in dots] + lines, names[self.value]

    def dense_columns(self, loads: Source) -> list[str]:
        """The column loop over a dense driver's row i. When setup can bound the rest of the
        summed product as finite and finds the driver mostly zero (then ``skip_zeros`` is set
        per call), the row's non-zero columns are first gathered without a branch, then visited
        in order: a test and branch per cell took 1.75x as long on a 1% dense driver."""
        bound = self.skip_bound()
        if bound is None:
            return ["for j in range(np.uint64(n)):"]
        self.setup(
            1,
            f"skip_zeros = int({bound} < {bounds.SKIP_BELOW!r} and _mostly_zero({self.main.name}))",
        )
        self.helpers += [bounds.HELPERS, _MOSTLY_ZERO]
        self.gathers = True
        loads.block(3, [
            "nz = np.uint64(n)",
            "if skip_zeros:",
            "    nz = np.uint64(0)",
            "    for j in range(np.uint64(n)):",
            "        cols[nz] = j",
            f"        nz += np.uint64({self.main.at('i', 'j')} != 0.0)",
        ])  # fmt: skip
        return ["for q in range(nz):", "    j = cols[q] if skip_zeros else q"]

    def skip_bound(self) -> str | None:
        """Setup source bounding what multiplies the driver W in a summed ``W * h`` (and the R or
        L a ±0 cell is then multiplied with); None when the value has another form, is not
        summed, or has no bound. Each input's bound is assigned once in setup."""
        value, main, kind = self.value, self.main.node, self.kind
        summed = kind in (OutputKind.ROW_PRODUCT, OutputKind.COL_PRODUCT) or (
            kind is OutputKind.FULL_AGG and self.root.op is Op.SUM
        )
        if not summed or value.op is not Op.MUL or main not in value.inputs:
            return None
        h = value.inputs[1] if value.inputs[0] is main else value.inputs[0]
        nodes, sides = Dag([h]).nodes, self.params[1:]
        if main in nodes or not all(p.scalar or self.dense(p) for p in sides):
            return None
        for k, p in enumerate(sides):
            self.setup(1, f"bound{k} = _absmax({p.name})")
        of = {p.node: f"bound{k}" for k, p in enumerate(sides)}
        leaves = {}
        for n in nodes:
            if outer_product(n):
                u, v, _ = outer_factors(n)
                rank = f"float({_ncols(self.param[u])})"
                leaves[n] = f"_bmul(_bmul({rank}, {of[u]}), {of[v]})"
            elif n in of:
                leaves[n] = of[n]
        found = bounds.bound_source(h, leaves, self.literals.name)
        if found is not None and self.other is not None:  # a ±0 cell times R or L
            found = f"_bmul({found}, {of[self.other.node]})"
        return found

    @staticmethod
    def dense(p: Param) -> bool:
        return isinstance(p.operand, DenseOperand)

    def allocate(self) -> None:
        src, kind = self.setup, self.kind
        if kind is OutputKind.COL_PRODUCT:  # n x k partials per chunk: fewer chunks when n is large
            src(1, f"nchunk = {chunks_source(partial_chunks_source(f'n * {_ncols(self.other)}'))}")
        else:
            src(1, f"nchunk = {chunks_source(CHUNKS)}")
        if kind is OutputKind.FULL_AGG:
            src(1, "partial = np.zeros(nchunk)")
        elif kind is OutputKind.NO_AGG:
            size = self.main.operand.stored(self.main) if self.sparse else "(m, n)"
            src(1, f"out = np.empty({size})")
        elif kind is OutputKind.ROW_PRODUCT:
            src(1, f"out = np.empty((m, {_ncols(self.other)}))")
        else:
            src(1, f"partial = np.zeros((nchunk, n, {_ncols(self.other)}))")

    def per_cell(self, loop: Source, result: str) -> None:
        kind, other = self.kind, self.other
        if kind is OutputKind.FULL_AGG:
            loop(4, f"acc += {result}")
        elif kind is OutputKind.NO_AGG:
            loop(4, f"out[p] = {result}" if self.sparse else f"out[i, j] = {result}")
        elif kind is OutputKind.ROW_PRODUCT:
            loop(4, f"for r in range(np.uint64({_ncols(other)})):")
            loop(5, f"out[i, r] += f.mul({result}, {other.at('j', 'r')})")
        else:
            loop(4, f"for r in range(np.uint64({_ncols(other)})):")
            loop(5, f"partial[c, j, r] += f.mul({result}, {other.at('i', 'r')})")

    def combine(self) -> None:
        if self.kind is OutputKind.FULL_AGG:
            self.src(2, "partial[c] = acc")
            self.finish(1, f"return np.array([{combine('sum', 'partial')}])")
        elif self.kind is OutputKind.COL_PRODUCT:
            self.finish(1, f"return {combine('sum', 'partial')}")
        else:
            self.finish(1, "return out")

    def build(self) -> Kernel:
        loads, head, lines, result = self.cell_body()  # renders first: literals become args
        src = self.src
        self.allocate()
        src(2, "lo = c * m // nchunk")
        src(2, "hi = (c + 1) * m // nchunk")
        buffers([p for p in self.params if p is not self.main], src, 2)
        if self.kind is OutputKind.ROW_PRODUCT:  # each chunk zeroes its rows: first touch here
            src(2, row_loop(self.params))
            src(3, f"for r in range(np.uint64({_ncols(self.other)})):")
            src(4, "out[i, r] = 0.0")
        src(2, "acc = 0.0")
        if self.gathers:
            src(2, "cols = np.empty(n if skip_zeros else 0, np.uint64)")
        # a dense driver is read row after row: blocking its columns (to keep V's block in
        # cache) measured 4-15% slower here, V of 0.4-8 MB, the driver dense or 1% non-zero
        src(2, row_loop(self.params))
        src.extend(loads.lines)
        src.block(3, head)
        src.extend(lines)
        self.per_cell(src, result)
        self.combine()
        body = self.spec.cplan.body
        # the gathered columns go to a vector of the chunk's own; told that no array overlaps
        # another, LLVM compiled the dense driver's loop 1.1x faster (each cell visited or not)
        return module(self.params, self.literals, body, self.setup, src, self.finish,
                      self.helpers, noalias=self.gathers)  # fmt: skip


def outer_kernel(spec) -> Kernel:
    """The Outer kernel of a ``KernelSpec``."""
    return _Outer(spec).build()
