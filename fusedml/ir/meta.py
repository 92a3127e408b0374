"""Per-op derivation of ``Meta``: output shape, format, nnz estimate and dtype.

Format rules: a *sparse* operand is one whose format's zeros annihilate
(``Format.zeros_annihilate``, CSR's); they define when results stay sparse, and a sparse result
takes ``Format.result(True)``:
- unary on a sparse operand stays sparse iff f(0) == 0;
- MUL is sparse if any operand is, DIV if its numerator is (a sparse zero annihilates, even
  inf/NaN);
- other binary ops are sparse iff their sparse operands meet zeros/constants c with f(0, c) == 0;
- an elementwise op whose only matrix operand has an ``elementwise_closed`` format (with
  scalars) keeps that format;
- MATMUL is sparse iff both operands are; TRANSPOSE gives the operand format's ``transposed``
  (its canonical one, or a lazy transpose), COLS keeps the operand's (canonical) format;
  HSTACK is sparse iff all inputs are; WHERE and aggregates are dense.
"""

from __future__ import annotations

import math
from typing import Any

from fusedml._errors import ShapeError
from fusedml.formats import Format
from fusedml.ir.node import Meta, Node
from fusedml.ir.ops import (
    AGGREGATE,
    ANNIHILATING_OPERANDS,
    BINARY,
    TERNARY,
    UNARY,
    Op,
    zero_preserving,
)

SPARSE, DENSE = Format.result(sparse=True), Format.result(sparse=False)


def _sparse(node: Node) -> bool:
    return node.meta.format.zeros_annihilate


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """numpy broadcasting of IR shapes (each ``()`` or 2-D); raises ShapeError."""
    matrices = [s for s in shapes if s]
    if not matrices:
        return ()
    out = []
    for dim in range(2):
        sizes = {s[dim] for s in matrices} - {1}
        if len(sizes) > 1:
            raise ShapeError(f"cannot broadcast shapes {' and '.join(map(str, shapes))}")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def _cells(shape: tuple[int, ...]) -> int:
    return shape[0] * shape[1] if shape else 1


def _scaled_nnz(node: Node, out_cells: int) -> int:
    # a broadcast operand repeats its non-zeros
    return min(out_cells, node.meta.nnz * (out_cells // max(node.meta.cells, 1)))


def _elementwise(op: Op, inputs: tuple[Node, ...]) -> Meta:
    shape = broadcast_shapes(*(i.shape for i in inputs))
    cells = _cells(shape)
    sparse = [i for i in inputs if _sparse(i)]
    fmt, nnz = DENSE, cells
    if sparse and shape:
        if op in UNARY:
            if zero_preserving(op):
                fmt, nnz = SPARSE, inputs[0].meta.nnz
        elif op in ANNIHILATING_OPERANDS:
            drivers = [inputs[k] for k in ANNIHILATING_OPERANDS[op] if inputs[k] in sparse]
            if drivers:
                fmt, nnz = SPARSE, min(_scaled_nnz(d, cells) for d in drivers)
        elif op in BINARY:
            fmt, nnz = _binary_sparse_rule(op, inputs, cells)
    matrices = {i for i in inputs if not i.meta.is_scalar}
    if len(matrices) == 1:
        (x,) = matrices
        if x.meta.format.elementwise_closed and x.shape == shape:
            return Meta(shape, cells, x.meta.format, layout=x.meta.layout)  # x's codes, new values
    return Meta(shape, nnz, fmt)


def _binary_sparse_rule(op: Op, inputs: tuple[Node, ...], cells: int) -> tuple[Format, int]:
    a, b = inputs
    if _sparse(a) and _sparse(b):
        if zero_preserving(op):
            return SPARSE, min(cells, _scaled_nnz(a, cells) + _scaled_nnz(b, cells))
        return DENSE, cells
    sparse, other, pos = (a, b, 0) if _sparse(a) else (b, a, 1)
    if other.op is Op.CONST and zero_preserving(op, other.attr("value"), zero_position=pos):
        return SPARSE, _scaled_nnz(sparse, cells)
    return DENSE, cells


def _aggregate(op: Op, x: Node, axis: Any) -> Meta:
    if x.meta.is_scalar:
        raise ShapeError(f"{op.value}: the IR aggregates matrices, got a scalar")
    rows, cols = x.shape
    if axis is None:
        shape, reduced = (), rows * cols
    elif axis == 0:
        shape, reduced = (1, cols), rows
    elif axis == 1:
        shape, reduced = (rows, 1), cols
    else:
        raise ShapeError(f"{op.value}: axis must be None, 0 or 1, got {axis!r}")
    if op is Op.ARGMAX and axis != 1:
        raise ShapeError("argmax: the IR supports row-wise argmax (axis=1) only")
    if op in (Op.MIN, Op.MAX, Op.ARGMAX) and reduced == 0:  # numpy raises, even for empty outputs
        raise ShapeError(
            f"zero-size array to reduction operation {op.value} which has no identity "
            f"(input shape {x.shape}, axis={axis})"
        )
    return Meta(shape, _cells(shape), DENSE, "int64" if op is Op.ARGMAX else "float64")


def _matmul(a: Node, b: Node) -> Meta:
    if a.meta.is_scalar or b.meta.is_scalar:
        raise ShapeError("matmul: scalar operands are not allowed")
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2:
        raise ShapeError(f"matmul: shapes {a.shape} and {b.shape} do not align ({k} != {k2})")
    cells = m * n
    if _sparse(a) and _sparse(b):
        # average case: a cell is non-zero unless all k products are zero
        p = 1.0 - (1.0 - a.meta.sparsity * b.meta.sparsity) ** k if k else 0.0
        return Meta((m, n), min(cells, math.ceil(cells * p)), SPARSE)
    return Meta((m, n), cells, DENSE)


def infer_meta(op: Op, inputs: tuple[Node, ...], attrs: dict[str, Any]) -> Meta:
    arity = {**dict.fromkeys(UNARY, 1), **dict.fromkeys(BINARY, 2), **dict.fromkeys(TERNARY, 3)}
    if op in arity and len(inputs) != arity[op]:
        raise ShapeError(f"{op.value} takes {arity[op]} inputs, got {len(inputs)}")
    if op in arity:
        return _elementwise(op, inputs)
    if op in AGGREGATE:
        (x,) = inputs
        return _aggregate(op, x, attrs.get("axis"))
    if op is Op.MATMUL:
        return _matmul(*inputs)
    if op is Op.TRANSPOSE:
        (x,) = inputs
        if x.meta.is_scalar:
            raise ShapeError("transpose: the IR transposes matrices, got a scalar")
        m = x.meta
        layout = m.layout if m.format.transposed is not m.format.canonical else ()
        return Meta((m.cols, m.rows), m.nnz, m.format.transposed, m.dtype, layout)
    if op is Op.COLS:
        (x,) = inputs
        start, stop = attrs["start"], attrs["stop"]
        if x.meta.is_scalar or not 0 <= start <= stop <= x.meta.cols:
            raise ShapeError(f"cols: range [{start}, {stop}) outside a {x.shape} matrix")
        m, width = x.meta, stop - start
        fmt = m.format.canonical
        nnz = math.ceil(m.nnz * width / max(m.cols, 1)) if _sparse(x) else m.rows * width
        return Meta((m.rows, width), nnz, fmt, m.dtype)
    if op is Op.ONEHOT:
        (x,) = inputs
        if x.meta.is_scalar or x.meta.cols == 0:
            raise ShapeError(f"onehot: needs a matrix with columns, got {x.shape}")
        return Meta(x.shape, x.meta.rows, DENSE)
    if op is Op.HSTACK:
        if not inputs or any(i.meta.is_scalar for i in inputs):
            raise ShapeError("hstack: needs one or more matrix inputs")
        rows = {i.meta.rows for i in inputs}
        if len(rows) != 1:
            shapes = ", ".join(str(i.shape) for i in inputs)
            raise ShapeError(f"hstack: all inputs need the same number of rows, got {shapes}")
        sparse = all(_sparse(i) for i in inputs)
        fmt = SPARSE if sparse else DENSE
        dtype = "int64" if all(i.meta.dtype == "int64" for i in inputs) else "float64"
        cols = sum(i.meta.cols for i in inputs)
        nnz = sum(i.meta.nnz for i in inputs) if sparse else rows.pop() * cols
        return Meta((inputs[0].meta.rows, cols), nnz, fmt, dtype)
    if op is Op.HAND:
        params, definition = attrs["params"], attrs["definition"]
        if [p.meta for p in params] != [i.meta for i in inputs]:
            raise ShapeError(f"hand operator {attrs['name']}: inputs do not fit its definition")
        return definition.meta
    raise ShapeError(f"no meta rule for {op!r}")  # DATA/CONST carry their meta
