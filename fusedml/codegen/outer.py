"""The Outer skeleton: ``f(W, U @ V.T)`` evaluated only at a sparse driver W's stored entries (or
at every cell of a dense one, in column blocks), ``U[i] . V[j]`` computed per visited cell and
never materialized; then a full sum, the cell values, ``(...) @ R`` or ``(...).T @ L``.

Rows, columns and the rank run unsigned (``np.uint64``): LLVM then drops numba's negative-index
wrap-around of each read, which made the dense driver's loop 1.2x slower.
"""

from __future__ import annotations

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

OUTER_BLOCK = 256  # columns per block when the driver is dense


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
        root = self.root
        if self.kind is OutputKind.COL_PRODUCT:  # (Y).T @ L: the transpose of the cell values Y
            self.value = root.inputs[0].inputs[0]
        elif self.kind in (OutputKind.FULL_AGG, OutputKind.ROW_PRODUCT):
            self.value = root.inputs[0]
        else:
            self.value = root
        self.other = self.param.get(root.inputs[1]) if root.op is Op.MATMUL else None

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
            head = [f"for j in range(jb, min(jb + np.uint64({OUTER_BLOCK}), np.uint64(n))):"]
            access[main.node] = main.at("i", "j")
        dots = []
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
        loop = Source()  # the i loop; a dense driver's is blocked over columns below
        loop(2, row_loop(self.params))
        loop.extend(loads.lines)
        loop.block(3, head)
        loop.extend(lines)
        self.per_cell(loop, result)
        if self.sparse:
            src.extend(loop.lines)
        else:  # column blocks: the block's rows of V stay in cache while the chunk's rows pass
            src(2, f"for jb in range(np.uint64(0), np.uint64(n), np.uint64({OUTER_BLOCK})):")
            src.extend(["    " + line for line in loop.lines])
        self.combine()
        body = self.spec.cplan.body
        return module(self.params, self.literals, body, self.setup, src, self.finish)


def outer_kernel(spec) -> Kernel:
    """The Outer kernel of a ``KernelSpec``."""
    return _Outer(spec).build()
