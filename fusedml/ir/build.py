"""Node constructors: every node of the IR is made here, with its meta inferred by ``meta.py``."""

from __future__ import annotations

from typing import Any

from fusedml.formats import Format
from fusedml.ir.meta import infer_meta
from fusedml.ir.node import Meta, Node, intern
from fusedml.ir.ops import LEAF, Op


def make(op: Op, inputs: tuple[Node, ...] = (), **attrs: Any) -> Node:
    """The unique node ``op(inputs, attrs)``; raises ShapeError if the shapes do not fit."""
    assert op not in LEAF, "use data() or const() for leaves"
    return intern(op, tuple(inputs), attrs, infer_meta)


def rebuild(node: Node, inputs: tuple[Node, ...]) -> Node:
    """``node`` with other inputs (leaves are returned as they are)."""
    if node.op in LEAF or inputs == node.inputs:
        return node
    return make(node.op, inputs, **dict(node.attrs))


def data(
    name: str,
    shape: tuple[int, ...],
    fmt: Format,
    nnz: int | None = None,
    layout: tuple = (),
    blocks: int = 0,
) -> Node:
    """A leaf bound to a value when the plan runs (an input matrix, vector or runtime scalar);
    ``blocks``: the row blocks of a distributed value (a collection's), 0 for a local one."""
    cells = shape[0] * shape[1] if shape else 1
    meta = Meta(tuple(shape), cells if nnz is None else int(nnz), fmt, layout=tuple(layout))
    attrs = {"name": name, "blocks": blocks} if blocks else {"name": name}
    return intern(Op.DATA, (), attrs, infer_meta, meta)


def const(value: float) -> Node:
    value = float(value)
    meta = Meta((), int(value != 0.0), Format.result(sparse=False))
    return intern(Op.CONST, (), {"value": value}, infer_meta, meta)


def placeholder(k: int, meta: Meta) -> Node:
    """The ``k``-th input of an operator's definition body, with the meta of what it stands for."""
    return intern(Op.DATA, (), {"name": f"#{k}"}, infer_meta, meta)
