"""Building a step's Dask graph: one task per row (or column) block, blocks stitched back into a
partitioned array, or partials tree-reduced with ``dask.array.reduction``.

A *partitioned* value is a Dask array split along one axis (rows for data, columns for its
transpose) with the other axis whole; every other value of a step is *whole*: sent once per call
(a local array becomes one key of the graph, a lazy Dask result its single block).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

import dask
import dask.array as da
import numpy as np
import scipy.sparse as sp

from fusedml.formats import Format

SPLIT_EVERY = 8  # partials combined per task of the reduction tree


def is_dask(value: Any) -> bool:
    return isinstance(value, da.Array)


def aligned(value: Any, axis: int, chunks: tuple[int, ...]) -> da.Array:
    """``value`` (2-D) split along ``axis`` into ``chunks``, whole along the other axis."""
    want = (chunks, (value.shape[1],)) if axis == 0 else ((value.shape[0],), chunks)
    if not is_dask(value):
        return da.from_array(value, chunks=want, asarray=not sp.issparse(value))
    if value.chunks == want:
        return value
    return value.rechunk(want)


def block(value: da.Array, axis: int, i: int) -> Any:
    """The Delayed of block ``i`` of an ``aligned`` value."""
    blocks = value.to_delayed(optimize_graph=False)
    return blocks[i, 0] if axis == 0 else blocks[0, i]


def whole(value: Any) -> Any:
    """A step's whole input as one graph key (a Delayed), or a float as itself."""
    if isinstance(value, float | int):
        return value
    if is_dask(value):
        if value.ndim and value.npartitions > 1:
            value = value.rechunk(value.shape)
        return np.asarray(value.to_delayed(optimize_graph=False)).ravel()[0]
    return dask.delayed(value, pure=True)  # keyed by its content: one copy per call


def tasks(fn: Callable[..., Any], nout: int, per_block: Sequence[Sequence[Any]]) -> list[tuple]:
    """``fn(*args)`` for each block's arguments: per block, a tuple of ``nout`` Delayed."""
    name = f"fusedml-{getattr(fn, '__name__', 'block')}-{uuid.uuid4().hex[:12]}"
    call = dask.delayed(fn, pure=False, nout=nout)
    out = []
    for i, args in enumerate(per_block):
        result = call(*args, dask_key_name=(name, i))
        out.append(tuple(result) if nout > 1 else (result,))
    return out


def empty_like(fmt: Format, ndim: int = 2, dtype: str = "float64") -> Any:
    """The ``meta`` of a Dask array of ``fmt`` blocks."""
    if fmt.zeros_annihilate and ndim == 2:
        return sp.csr_array((0, 0), dtype=dtype)
    return np.empty((0,) * ndim, dtype=dtype)


def stitched(
    parts: Sequence[Any], axis: int, chunks: Sequence[int], other: int, fmt: Format
) -> da.Array:
    """Blocks (Delayed values of ``fmt``) as one array partitioned along ``axis``."""
    arrays = [
        da.from_delayed(
            p, shape=(c, other) if axis == 0 else (other, c), dtype=np.float64, meta=empty_like(fmt)
        )
        for p, c in zip(parts, chunks, strict=True)
    ]
    return arrays[0] if len(arrays) == 1 else da.concatenate(arrays, axis=axis)


def tree_reduced(
    parts: Sequence[Any],
    shape: tuple[int, ...],
    combine: Callable[[list[Any]], Any],
    finish: Callable[[Any], Any],
) -> da.Array:
    """Partials of one shape (Delayed of ``lifted`` values) reduced by Dask's tree reduction:
    ``combine`` joins a list of consecutive partials into one, ``finish`` turns the last into
    the value."""
    stacked = da.concatenate(
        [da.from_delayed(p, shape=(1, *shape), dtype=np.float64) for p in parts]
    )

    def _combine(x: np.ndarray, axis: Any, keepdims: bool) -> np.ndarray:
        return np.asarray(combine(list(x)), dtype=np.float64)[None]

    def _aggregate(x: np.ndarray, axis: Any, keepdims: bool) -> Any:
        return np.asarray(finish(combine(list(x))), dtype=np.float64)

    return da.reduction(
        stacked,
        chunk=lambda x, axis, keepdims: x,
        combine=_combine,
        aggregate=_aggregate,
        axis=0,
        keepdims=False,
        split_every=SPLIT_EVERY,
        dtype=np.float64,
        concatenate=True,
        meta=np.empty((0,) * len(shape)),
        name=f"fusedml-reduce-{uuid.uuid4().hex[:12]}",
    )


def lifted(partial: Any) -> np.ndarray:
    """A partial (float, array or CSR) as a dense array with a leading axis of one, the form
    ``tree_reduced`` stacks (made inside the block's task)."""
    if sp.issparse(partial):
        partial = partial.toarray()
    return np.asarray(partial, dtype=np.float64)[None]
