"""Frozen, hash-consed IR nodes.

``make(op, inputs, **attrs)`` returns the one live node with that structure, so structurally equal
subexpressions are the same object (CSE for free) and nodes compare and hash by identity. Shapes
are always 2-D ``(rows, cols)`` or ``()`` for scalars; the front end maps numpy's 1-D vectors to
column vectors (see ``frontend.py``).
"""

from __future__ import annotations

import itertools
import struct
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fusedml.formats import Format
from fusedml.ir.ops import Op


@dataclass(frozen=True, slots=True)
class Meta:
    shape: tuple[int, ...]  # () for a scalar, else (rows, cols)
    nnz: int  # estimated non-zeros (an upper-bound flavoured estimate; exact for leaves)
    format: Format
    dtype: str = "float64"
    # what the format measured of the value beyond its shape (``Format.layout``; compressed:
    # bytes read per row and of dictionaries, groups per row); () for dense and sparse layouts
    layout: tuple = ()

    @property
    def is_scalar(self) -> bool:
        return self.shape == ()

    @property
    def rows(self) -> int:
        return self.shape[0] if self.shape else 1

    @property
    def cols(self) -> int:
        return self.shape[1] if self.shape else 1

    @property
    def cells(self) -> int:
        return self.rows * self.cols

    @property
    def sparsity(self) -> float:
        return self.nnz / self.cells if self.cells else 0.0

    def describe(self) -> str:
        if self.is_scalar:
            return "scalar"
        text = f"{self.rows}x{self.cols} {self.format.name}"
        if self.format.iterates_nonzeros:
            text += f" nnz~{self.nnz}"
        if self.layout:
            text += f" {self.format.nbytes(self) / 1e6:.3g} MB"
        if self.dtype != "float64":
            text += f" {self.dtype}"
        return text


@dataclass(frozen=True, slots=True, eq=False, weakref_slot=True)
class Node:
    op: Op
    inputs: tuple[Node, ...]
    attrs: tuple[tuple[str, Any], ...]
    meta: Meta
    id: int

    def attr(self, name: str, default: Any = None) -> Any:
        for key, value in self.attrs:
            if key == name:
                return value
        return default

    @property
    def shape(self) -> tuple[int, ...]:
        return self.meta.shape

    def __repr__(self) -> str:
        args = ", ".join(f"%{i.id}" for i in self.inputs)
        extra = ", ".join(f"{k}={v!r}" for k, v in self.attrs)
        return f"%{self.id}={self.op.value}({', '.join(filter(None, (args, extra)))})"


def _canonical(value: Any) -> Any:
    # 0.0 == -0.0 and NaN != NaN, but they are different literals: key floats by their bits.
    if isinstance(value, float):
        return ("f", struct.pack("<d", value))
    if isinstance(value, Meta):
        return ("meta", value.shape, value.nnz, value.format, value.dtype)
    return value


_lock = threading.Lock()
_ids = itertools.count()
_interned: weakref.WeakValueDictionary[tuple, Node] = weakref.WeakValueDictionary()


def intern(
    op: Op,
    inputs: tuple[Node, ...],
    attrs: dict[str, Any],
    infer: Callable[[Op, tuple[Node, ...], dict[str, Any]], Meta],
    meta: Meta | None = None,
) -> Node:
    """The unique live node ``op(inputs, attrs)``; ``infer`` derives its meta on first creation
    (leaves pass ``meta`` instead, and it is part of their identity)."""
    items = tuple(sorted(attrs.items()))
    key = (op, inputs, tuple((k, _canonical(v)) for k, v in items), _canonical(meta))
    with _lock:
        node = _interned.get(key)
    if node is not None:
        return node
    if meta is None:
        meta = infer(op, inputs, dict(items))
    with _lock:
        node = _interned.get(key)
        if node is None:
            node = Node(op, inputs, items, meta, next(_ids))
            _interned[key] = node
    return node
