"""Building a step's Dask graph: one task per row (or column) block, blocks stitched back into a
partitioned array, or partials tree-reduced inside the graph (``SPLIT_EVERY`` per task).

A *partitioned* value is a Dask array split along one axis (rows for data, columns for its
transpose) with the other axis whole; every other value of a step is *whole*: sent once per call
(a local array becomes one key of the graph, a lazy Dask result its single block). The tasks are
written as a graph layer directly (no ``delayed`` wrappers): one task per block and per tree node.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from operator import getitem
from typing import Any

import dask.array as da
import numpy as np
import scipy.sparse as sp
from dask.highlevelgraph import HighLevelGraph

from fusedml.formats import Format

SPLIT_EVERY = 8  # partials combined per task of the reduction tree


def is_dask(value: Any) -> bool:
    return isinstance(value, da.Array)


def empty_like(fmt: Format, ndim: int = 2, dtype: str = "float64") -> Any:
    """The ``meta`` of a Dask array of ``fmt`` blocks (numpy for 1-D and non-float ones)."""
    if ndim == 2 and dtype == "float64":
        return fmt.empty()
    if fmt.zeros_annihilate and ndim == 2:
        return sp.csr_array((0, 0), dtype=dtype)
    return np.empty((0,) * ndim, dtype=dtype)


def aligned(value: Any, axis: int, chunks: tuple[int, ...]) -> da.Array:
    """``value`` (2-D) split along ``axis`` into ``chunks``, whole along the other axis."""
    want = (chunks, (value.shape[1],)) if axis == 0 else ((value.shape[0],), chunks)
    if not is_dask(value):
        return da.from_array(value, chunks=want, asarray=not sp.issparse(value))
    if value.chunks == want:
        return value
    return joinable(value).rechunk(want)


def joinable(value: da.Array) -> da.Array:
    """``value`` with blocks Dask can cut and join (numpy-like): blocks of a format that is not
    built in (compressed) in their canonical form."""
    fmt = Format.of(value)
    if fmt in (Format.DENSE, Format.CSR):
        return value
    return value.map_blocks(fmt.to_canonical, dtype=np.float64, meta=fmt.canonical.empty())


def lifted(partial: Any) -> np.ndarray:
    """A partial (float, array or CSR) as a dense float array (the form reductions combine)."""
    if sp.issparse(partial):
        partial = partial.toarray()
    return np.asarray(partial, dtype=np.float64)


class StepGraph:
    """The tasks of one step, written into one layer."""

    def __init__(self, label: str) -> None:
        self.name = f"fusedml-{label}-{uuid.uuid4().hex[:16]}"
        self.layer: dict[Any, Any] = {}
        self.deps: dict[str, da.Array] = {}
        self._literals = 0

    def literal(self, value: Any) -> tuple:
        """The key of one copy of a local value (not a tuple: a tuple would read as a task)."""
        key = (f"{self.name}-in", self._literals)
        self._literals += 1
        self.layer[key] = value
        return key

    def whole(self, value: Any) -> Any:
        """A whole input: a float as itself, else the key of its one copy."""
        if isinstance(value, float | int):
            return value
        if not is_dask(value):
            return self.literal(value)
        if value.npartitions > 1:
            value = aligned(value, 0, (value.shape[0],)) if value.ndim == 2 else value.rechunk(-1)
        self.deps[value.name] = value
        return (value.name,) + (0,) * value.ndim

    def split(self, value: Any, axis: int, chunks: tuple[int, ...]) -> list[tuple]:
        """The keys of a partitioned input's blocks."""
        value = aligned(value, axis, chunks)
        self.deps[value.name] = value
        return [(value.name, i, 0) if axis == 0 else (value.name, 0, i) for i in range(len(chunks))]

    def blocks(self, fn: Callable[..., Any], args: Sequence[Sequence[Any]]) -> list[tuple]:
        """``fn(*args[i])`` per block: the blocks' task keys."""
        keys = [(f"{self.name}-b", i) for i in range(len(args))]
        for key, a in zip(keys, args, strict=True):
            self.layer[key] = (fn, *a)
        return keys

    def _array(self, name: str, chunks: tuple, meta: Any) -> da.Array:
        graph = HighLevelGraph.from_collections(
            name, self.layer, dependencies=list(self.deps.values())
        )
        return da.Array(graph, name, chunks, meta=meta)

    def stitched(
        self, parts: Sequence[Any], axis: int, chunks: tuple[int, ...], other: int, fmt: Format
    ) -> da.Array:
        """Blocks (task keys, or ``(key, k)`` for output k of a block) as one array partitioned
        along ``axis``."""
        name = f"{self.name}-s{len(self.layer)}"
        for i, part in enumerate(parts):
            key = (name, i, 0) if axis == 0 else (name, 0, i)
            self.layer[key] = _task(part)
        out_chunks = (chunks, (other,)) if axis == 0 else ((other,), chunks)
        return self._array(name, out_chunks, empty_like(fmt))

    def single(self, part: tuple, shape: tuple[int, ...], fmt: Format) -> da.Array:
        """One task's output (as ``stitched`` takes it) as a one-chunk array."""
        name = f"{self.name}-w{len(self.layer)}"
        self.layer[(name,) + (0,) * len(shape)] = _task(part)
        meta = empty_like(fmt, len(shape)) if shape else np.empty(())
        return self._array(name, tuple((n,) for n in shape), meta)

    def reduced(
        self,
        parts: Sequence[Any],
        shape: tuple[int, ...],
        combine: Callable[[list[Any]], Any],
        finish: Callable[[Any], Any],
    ) -> da.Array:
        """Partials (as ``stitched`` takes them) of one shape combined by a tree of tasks,
        ``SPLIT_EVERY`` per task: ``combine`` joins a list of consecutive partials into one,
        ``finish`` turns the last into the value."""
        name = f"{self.name}-r{len(self.layer)}"
        level = [_task(p) for p in parts]
        depth = 0
        while len(level) > SPLIT_EVERY:
            groups = [level[j : j + SPLIT_EVERY] for j in range(0, len(level), SPLIT_EVERY)]
            keys = [(f"{name}-{depth}", j) for j in range(len(groups))]
            for key, group in zip(keys, groups, strict=True):
                self.layer[key] = (combine, list(group))
            level, depth = keys, depth + 1
        key = (name,) + (0,) * len(shape)
        self.layer[key] = (_finished, finish, combine, list(level))
        chunks = tuple((n,) for n in shape)
        return self._array(name, chunks, np.empty((0,) * len(shape)))


def _task(part: tuple) -> tuple:
    """A block's task key, or ``(key, k)``: output k of a block's task."""
    return (getitem, *part) if isinstance(part[0], tuple) else part


def _finished(finish: Callable[[Any], Any], combine: Callable[[list[Any]], Any], parts: list):
    return np.asarray(finish(combine(parts)), dtype=np.float64)
