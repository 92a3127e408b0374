"""How one unfused node runs over partitioned inputs: which inputs split with the blocks, and
whether the blocks' results are stitched together or reduced.

Each rule follows from the node's algebra: elementwise ops, per-row aggregates, transposes,
column ranges, ``hstack`` and one-hot rows are block-local; aggregates over the partitioned axis
and products whose inner dimension is partitioned give partials that are summed (or min/max-ed).
Anything else (an argmax across blocks, a column range of a transpose) has no rule: its inputs
are gathered.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fusedml.ir.build import make, placeholder
from fusedml.ir.node import Meta, Node
from fusedml.ir.ops import AGGREGATE, ELEMENTWISE, Op

WHOLE = None  # an input's role: sent whole to every block


@dataclass(frozen=True)
class Blocked:
    """A node's run over blocks: inputs split along ``roles[k]`` (or whole), blocks computed by
    ``block_op`` and either stitched along ``out_axis`` or reduced (``reduce`` = the combining
    aggregation, ``count`` what a mean divides by)."""

    roles: tuple[int | None, ...]
    chunks: tuple[int, ...]
    out_axis: int | None  # stitched along this axis; None: reduced
    block_op: Op
    reduce: str | None = None
    count: int = 1


def _split(shape: tuple[int, ...], axis: int | None, extent: int) -> tuple[int, ...]:
    if axis is None or not shape:
        return shape
    return (extent, shape[1]) if axis == 0 else (shape[0], extent)


def rule(node: Node, axes: Sequence[int | None], chunks_of: Sequence) -> Blocked | None:
    """How ``node`` runs when its inputs are partitioned along ``axes`` (None: not partitioned);
    ``chunks_of[k]`` are input k's chunks along ``axes[k]``. None: no block rule."""
    ins = node.inputs
    op = node.op
    # the partitioned input the blocks follow: for elementwise ops one that is not broadcast
    p = next(
        (
            k for k, a in enumerate(axes)
            if a is not None and (op not in ELEMENTWISE or ins[k].shape[a] == node.shape[a])
        ),
        None,
    )  # fmt: skip
    if p is None:
        return None
    ax, chunks = axes[p], tuple(chunks_of[p])
    extent = ins[p].shape[ax]
    if op in ELEMENTWISE:
        roles = tuple(ax if not i.meta.is_scalar and i.shape[ax] == extent else WHOLE for i in ins)
        return Blocked(roles, chunks, ax, op)
    if op in AGGREGATE:
        axis = node.attr("axis")
        if axis == 1 - ax:  # the reduced axis is whole in every block
            return Blocked((ax,), chunks, ax, op)
        if op is Op.ARGMAX:
            return None
        count = ins[0].meta.cells if axis is None else extent
        how = "sum" if op in (Op.SUM, Op.MEAN) else op.value
        return Blocked((ax,), chunks, None, Op.SUM if op is Op.MEAN else op, how, count)
    if op is Op.MATMUL:
        if axes[0] == 1 or axes[1] == 0:  # the inner dimension is split: partial products
            k = 0 if axes[0] == 1 else 1
            return Blocked((1, 0), tuple(chunks_of[k]), None, op, "sum")
        if axes[0] == 0:
            return Blocked((0, WHOLE), chunks, 0, op)
        return Blocked((WHOLE, 1), chunks, 1, op)
    if op is Op.TRANSPOSE:
        return Blocked((ax,), chunks, 1 - ax, op)
    if op in (Op.COLS, Op.HSTACK, Op.ONEHOT) and ax == 0:
        return Blocked((0,) * len(ins), chunks, 0, op)
    return None


def block_node(node: Node, blocked: Blocked, i: int) -> Node:
    """The node computing block ``i``: the same op over inputs of the block's shapes (one
    input twice is one placeholder twice: ``X * X`` of a compressed X stays compressed)."""
    inputs = []
    seen: dict[tuple[Node, int | None], Node] = {}
    for k, (x, role) in enumerate(zip(node.inputs, blocked.roles, strict=True)):
        if x.meta.is_scalar:
            inputs.append(x)
            continue
        if (x, role) not in seen:
            meta = x.meta
            if role is not WHOLE:
                shape = _split(x.shape, role, blocked.chunks[i])
                cells = shape[0] * shape[1]
                nnz = min(cells, round(x.meta.nnz * cells / max(x.meta.cells, 1)))
                meta = Meta(shape, nnz, x.meta.format, x.meta.dtype)
            seen[x, role] = placeholder(k, meta)
        inputs.append(seen[x, role])
    return make(blocked.block_op, tuple(inputs), **dict(node.attrs))


def combine(partials: list[np.ndarray], how: str) -> np.ndarray:
    """Partials of consecutive blocks joined: summed, or min/max-ed with NaN winning."""
    stacked = np.asarray(partials, dtype=np.float64)
    if how == "sum":
        out = stacked[0].copy()
        with np.errstate(all="ignore"):  # inf - inf is NaN, silently as in every mode
            for p in stacked[1:]:
                out += p
        return out
    return (np.minimum if how == "min" else np.maximum).reduce(stacked, axis=0)


def finished(value: np.ndarray, node: Node, count: int) -> np.ndarray:
    """The node's (dense) value from its combined partial: a mean divided by its count."""
    if node.op is Op.MEAN:
        with np.errstate(all="ignore"):
            value = value / count  # an empty mean is NaN, as numpy's (silently)
    return value
