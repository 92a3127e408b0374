"""The Row skeleton over a compressed main input that is only multiplied: products per group.

When a Row operator uses its compressed main input X only in products ``X @ B`` (B read whole)
and ``X.T @ Y`` (an output, Y computed per row), no row of X is ever decoded:

- ``X @ B``: each tuple's product with B's rows at its columns is computed once per call
  (``cla.premultiply``); a chunk's rows' products are the sums of their tuples' products
  (``cla.lookup_block``, before the chunk's row loop), plus uncompressed columns times B;
- ``X.T @ Y``: the chunk's rows of Y are kept; after its row loop each row's Y is added into an
  accumulator row per tuple it holds (``cla.scatter_block``); groups with very many tuples
  instead get one accumulator, filled from all of Y after the chunks, a group per thread
  (``cla.scatter_groups``); each tuple's values times its summed Y give the output
  (``cla.finish``; tuples with inf or NaN use the signs of the Y values instead, so the result is
  the dense product's).

Any other use of X (elementwise, row aggregates) decodes rows through ``CompressedOperand``.
"""

from __future__ import annotations

from fusedml.codegen.chunking import partial_chunks_source
from fusedml.codegen.operands import Param
from fusedml.codegen.row import _RowBody, _Sink, whole_matrices
from fusedml.codegen.source import Source
from fusedml.cplan.kinds import OutputKind
from fusedml.formats.compressed_kernels import BIG, NAMES
from fusedml.ir.node import Node
from fusedml.ir.ops import Op


def only_multiplied(cplan) -> bool:
    """Whether a Row operator's main input is used only in ``X @ B`` with B read whole and in
    ``X.T @ Y`` outputs. A B whose zeros annihilate (CSR) is not: premultiplied tuples would
    meet its zeros (0 * inf), so such a product reads X's decoded rows instead."""
    body, x = cplan.body, cplan.params[0]
    whole = whole_matrices(body)
    products = {
        r for r, kind in zip(body.roots, cplan.outputs, strict=True)
        if kind is OutputKind.COL_PRODUCT
    }  # fmt: skip
    if x in body.roots:
        return False
    for user in body.consumers.get(x, ()):
        b = user.inputs[1] if user.op is Op.MATMUL else None
        if user.inputs[0] is x and b in whole and not b.meta.format.zeros_annihilate:
            continue
        if user.op is Op.TRANSPOSE and all(
            u in products and u.inputs[0] is user for u in body.consumers.get(user, ())
        ):
            continue
        return False
    return True


def _args(p: Param) -> str:
    """The packed arrays of a compressed input, as ``cla``'s functions take them."""
    return ", ".join(f"{p.name}_{a}" for a in NAMES)


def _array(name: str, dims: int) -> str:
    """An array as a native call's arguments: its address and its first ``dims`` sizes."""
    return ", ".join([f"{name}.ctypes.data", *(f"{name}.shape[{d}]" for d in range(dims))])


class GroupedRowBody(_RowBody):
    """Renders ``X @ B`` of the compressed main input from its tuples' products."""

    def __init__(self, params, body, rows, literals) -> None:
        super().__init__(params, body, rows, literals)
        self.main = params[0]
        n = self.main.name
        widest = max((r.shape[1] for r in body.roots if not r.meta.is_scalar), default=1)
        cells = f"{n}_fin.shape[0] * {widest}"
        self.head += [
            f"{n}_fin = cla.accumulator_rows({_args(self.main)})",
            f"nchunk = min(nchunk, {partial_chunks_source(cells)})",
        ]

    def _product(self, node: Node, width: int | None) -> None:
        x, b = node.inputs
        if x is not self.main.node:
            super()._product(node, width)
            return
        bp, n, k = self.param[b], self.main.name, node.shape[1]
        tag = len(self.head)
        flat = bp.operand.flat(bp) if hasattr(bp.operand, "flat") else False
        b2 = f"{bp.name}.reshape(({b.shape[0]}, {k}))" if flat else bp.name
        pre = f"{n}_pre{tag}"
        b_copy = f"{n}_b{tag}"
        self.head += [
            f"{b_copy} = np.ascontiguousarray({b2})",
            f"{pre}, {pre}_arrays = cla.premultiplied_words("
            f"cla.premultiply({b_copy}, {_args(self.main)}))",
            f"{n}_lookup = cla.native('lookup_block')",
        ]
        block = f"{n}_blk{tag}"
        self.alloc += [
            f"{block} = np.empty((hi - lo, {k}))",
            f"native.call({n}_lookup, ({_array(block, 2)}, lo, hi, {pre}.ctypes.data, "
            f"{_array(b_copy, 1)}, {n}_words.ctypes.data))",
        ]
        if width is None:
            self.value[node], self.width[node] = f"{block}[i - lo, 0]", None
        else:
            self.value[node], self.width[node] = f"{block}[i - lo, {{q}}]", width


class GroupedSink(_Sink):
    """``X.T @ Y`` of the compressed main input through per-tuple accumulators."""

    def partial_cells(self, rb) -> int:
        return 0 if self._grouped(rb) else super().partial_cells(rb)

    def _grouped(self, rb) -> bool:
        return self.kind is OutputKind.COL_PRODUCT and self.x is rb.main.node

    def emit(self, rb, head: Source, chunk: Source, tail: Source, end) -> None:
        if not self._grouped(rb):
            super().emit(rb, head, chunk, tail, end)
            return
        k, n, main = self.k, rb.main.name, rb.main
        width = rb.width[self.value]
        cols = 1 if width is None else width
        acc, flags, ucacc, y = f"acc{k}", f"flags{k}", f"ucacc{k}", f"y{k}"
        big, accbig, flagsbig, yall = f"big{k}", f"accbig{k}", f"flagsbig{k}", f"yall{k}"
        args = _args(main)
        head(1, f"{big} = cla.big_groups({args})")
        head(1, f"{n}_clear = cla.native('clear_rows')")
        head(1, f"{n}_scatter = cla.native('scatter_block')")
        head(1, f"{acc} = np.empty((nchunk, {n}_fin.shape[0], {cols}))")  # see cla.clear_rows
        head(1, f"{flags} = np.zeros((nchunk, cla.flag_rows({n}_fin), {cols}), dtype=np.uint8)")
        head(1, f"{ucacc} = np.zeros((nchunk, {n}_ucols.shape[0], {cols}))")
        # groups too big for an accumulator per chunk: all of Y is kept for them
        head(1, f"{accbig} = np.zeros(({n}_fin.shape[0] if {big}.size else 0, {cols}))")
        head(1, f"{flagsbig} = np.zeros((cla.flag_rows({n}_fin) if {big}.size else 0, {cols}), "
                "dtype=np.uint8)")  # fmt: skip
        head(1, f"{yall} = np.empty((m if {big}.size else 0, {cols}))")
        clear = f"{_array(f'{acc}[c]', 2)}, {BIG}, {n}_words.ctypes.data"
        chunk(2, f"native.call({n}_clear, ({clear}))")
        chunk(2, f"{y} = np.empty((hi - lo, {cols}))")
        for q in range(cols) if cols <= 4 else ():
            tail(3, f"{y}[i - lo, {q}] = {rb._at(self.value, str(q))}")
        if cols > 4:
            tail(3, f"for q in range({cols}):")
            tail(4, f"{y}[i - lo, q] = {rb._at(self.value, 'q')}")
        arrays = [_array(y, 2), "lo, hi", _array(f"{acc}[c]", 1), _array(f"{flags}[c]", 1),
                  _array(f"{n}_fin", 1), _array(f"{ucacc}[c]", 1), str(BIG)]  # fmt: skip
        end(2, f"native.call({n}_scatter, ({', '.join(arrays)}, {n}_words.ctypes.data))")
        end(2, f"if {big}.size:")  # loops, not a slice: numba compiles them faster
        end(3, "for i in range(hi - lo):")
        end(4, f"for q in range({cols}):")
        end(5, f"{yall}[lo + i, q] = {y}[i, q]")
        end(1, f"cla.scatter_groups({yall}, {big}, {accbig}, {flagsbig}, {n}_fin, {args})",
            after=True)  # fmt: skip
        end(1, f"out{k} = cla.finish({acc}, {flags}, {ucacc}, {accbig}, {flagsbig}, {big}, m, "
               f"{args})", after=True)  # fmt: skip
