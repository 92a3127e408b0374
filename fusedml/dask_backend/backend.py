"""The Dask backend: a plan's steps as one Dask graph per call.

Data enters as Dask arrays of row blocks (``collection.py``). A step that reads a partitioned
value runs one task per block: a fused operator through the same generated kernel as locally
(``fused.partials`` on the block's rows, the kernel compiled once per worker process and shared
through the disk cache), an unfused node through the reference interpreter (``nodes.py``).
Row outputs stay partitioned; aggregates are tree-reduced in the graph (``StepGraph.reduced``) with
the outputs' kinds combining the partials. Steps over small values only run in this process, or
as one task when an input is a lazy result of the graph. When a call ends, every lazy result is
persisted in one submission and the small ones are fetched: nothing of data size reaches the
client unless the cost model placed a step locally (``placement.py``), which only happens for
data small enough that moving it is cheaper than a task per block.
"""

from __future__ import annotations

import functools
import threading
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import dask
import dask.array as da
import numpy as np
import scipy.sparse as sp

from fusedml import _stats
from fusedml._config import config, get_config
from fusedml._errors import KernelFallbackWarning
from fusedml.codegen.spec import kernel_spec
from fusedml.cplan.kinds import mean_count
from fusedml.cplan.plan import FusedOp
from fusedml.dask_backend import graph, nodes, placement
from fusedml.dask_backend.graph import is_dask
from fusedml.formats import Format
from fusedml.ir.dag import Dag
from fusedml.ir.node import Node
from fusedml.runtime import fused
from fusedml.runtime.backend import LocalBackend, evaluate_dag
from fusedml.runtime.reference import Value, evaluate_node
from fusedml.runtime.threads import one_thread


class _Head:
    """What every task of a step shares (one key of the graph): the operator or node, and the
    client's kernel-cache settings."""

    def __init__(self, step: Any, settings: tuple = ()) -> None:
        self.step, self.settings = step, settings


def _worker_config(settings: tuple) -> config:
    cache_dir, codegen = settings
    # a worker has no one to wait for: it loads the kernel from the disk cache or compiles it
    return config(cache_dir=cache_dir, codegen=codegen, compile="eager", backend=None)


def _scalars(inputs: Sequence[Node], args: Sequence[Any]) -> list[Any]:
    """Block arguments as the kernels take them: floats for scalars, and every block in the
    format its array declared. Dask makes some blocks itself (empty ones are numpy arrays
    whatever the array's meta; a rechunk concatenates blocks through numpy), so a block of
    another format is converted to the declared one; a block no format knows is refused, not
    misread."""
    out = []
    for node, a in zip(inputs, args, strict=True):
        if node.meta.is_scalar:
            out.append(float(a))
            continue
        fmt = node.meta.format
        if Format.of(a) is not fmt:
            if Format.of(a) is None:
                raise TypeError(
                    f"a Dask block is {type(a).__name__}, its array declared {fmt.name} "
                    "blocks; fusedml runs Dask arrays of numpy, scipy.sparse or compressed blocks"
                )
            a = fmt.from_value(a)
        out.append(a)
    return out


def _fused_block(head: _Head, *args: Any) -> Any:
    """One block's outputs of a fused operator: row outputs in their format, partials of
    aggregates ``lifted`` for the reduction."""
    op = head.step
    with _worker_config(head.settings), one_thread():  # the blocks are the parallelism
        partials = fused.partials(op, _scalars(op.inputs, args))
    out = []
    for p, root, kind in zip(partials, op.roots, op.cplan.outputs, strict=True):
        if kind.per_row:
            fmt = root.meta.format
            out.append(p if Format.of(p) is fmt else fmt.from_value(p))
        else:
            out.append(graph.lifted(p))
    return tuple(out) if len(out) > 1 else out[0]


def _fused_whole(head: _Head, *args: Any) -> Any:
    """A fused operator over small values, one of which a lazy result of the graph."""
    op = head.step
    with _worker_config(head.settings):
        out = LocalBackend().run_fused(op, _scalars(op.inputs, args))
    return tuple(out) if len(out) > 1 else out[0]


def _node_block(node: Node, fmt: Format | None, *args: Any) -> Any:
    """One block of an unfused node: in the whole node's format ``fmt`` (a block's own meta
    may differ: sparsity rules see the block's shapes), or lifted for a reduction (None)."""
    value = evaluate_node(node, _scalars(node.inputs, args))
    if fmt is None:
        return graph.lifted(value)
    return value if Format.of(value) is fmt else fmt.from_value(value)


def _node_whole(head: _Head, *args: Any) -> Any:
    return evaluate_node(head.step, _scalars(head.step.inputs, args))


def _outputs(keys: list[tuple], n: int) -> list[list[tuple]]:
    """Per output, the blocks' parts: the task keys of a one-output step, else (key, k)."""
    return [[(key, k) if n > 1 else key for key in keys] for k in range(n)]


class DaskBackend(LocalBackend):
    """Runs plans over Dask arrays (see the module docstring) on the current Dask scheduler:
    a ``distributed.Client``'s cluster, or the threaded or synchronous scheduler."""

    name = "dask"
    _GATHERED = 16  # small partitioned inputs kept in this process once fetched

    def __init__(self) -> None:
        self._state = threading.local()
        self._gathered: OrderedDict[str, Value] = OrderedDict()
        # the column each 1-D result was made from (a loop passes results back in), while the
        # result lives: the column's blocks stay on the workers only as long as the user's array
        self._columns: dict[str, Any] = {}
        self._dead_columns: list[str] = []
        self._lock = threading.Lock()

    # -- state of one call ----------------------------------------------------------------------
    @property
    def _axes(self) -> dict[str, int]:
        """Partitioned axis of each partitioned value of this call, by graph name."""
        axes = getattr(self._state, "axes", None)
        if axes is None:
            axes = self._state.axes = {}
        return axes

    def axis(self, value: Any) -> int | None:
        return self._axes.get(value.name) if is_dask(value) else None

    def _partitioned(self, value: Any, axis: int) -> Any:
        self._axes[value.name] = axis
        return value

    def begin(self) -> None:
        super().begin()
        self._state.axes = {}
        self._state.settings = (get_config().cache_dir, get_config().codegen)
        self._state.place = placement.Placer(placement.worker_count())

    def bind(self, leaf: Node, value: Any) -> Value:
        if is_dask(value) and value.ndim == 1:  # a vector as the IR's column
            column = self._column(value.name)
            value = column if column is not None else value.reshape(-1, 1)
        value = super().bind(leaf, value)
        return self._partitioned(value, 0) if is_dask(value) else value

    # -- placement ------------------------------------------------------------------------------
    def _local(self, inputs: Sequence[Node], args: Sequence[Any], local_s: float, outputs) -> bool:
        """Whether the cost model runs this step in this process (its partitioned inputs
        fetched) rather than per block."""
        split = [i for i, a in zip(inputs, args, strict=True) if self.axis(a) is not None]
        rest = [i for i, a in zip(inputs, args, strict=True) if self.axis(a) is None]
        blocks = max(len(a.chunks[self.axis(a)]) for a in args if self.axis(a) is not None)
        return self._state.place.local(local_s, split, rest, outputs, blocks)

    def _gather(self, inputs: Sequence[Node], args: Sequence[Any]) -> list[Any]:
        """Every Dask input fetched into this process, in its node's format: partitioned ones
        (small: the placement rule or a missing block rule sent the step here) kept for the next
        call, lazy small results of this call's graph fetched as they are."""
        out = []
        for node, a in zip(inputs, args, strict=True):
            if not is_dask(a):
                out.append(a)
                continue
            kept = self.axis(a) is not None
            with self._lock:
                value = self._gathered.get(a.name) if kept else None
            if value is None:
                _stats.bump("dask_inputs_gathered")
                joined = graph.joinable(a) if a.npartitions > 1 else a
                (value,) = dask.compute(joined, optimize_graph=False)
                if not node.meta.is_scalar:
                    value = node.meta.format.from_value(value)  # stacked blocks: canonical
            if kept:
                with self._lock:
                    self._gathered[a.name] = value
                    while len(self._gathered) > self._GATHERED:
                        self._gathered.popitem(last=False)
            out.append(value)
        return out

    # -- steps ----------------------------------------------------------------------------------
    def run_fused(self, op: FusedOp, inputs: Sequence[Value]) -> list[Value]:
        if not any(is_dask(v) for v in inputs):
            return super().run_fused(op, inputs)
        if all(self.axis(v) is None for v in inputs):
            return self._whole(_fused_whole, _Head(op, self._state.settings), inputs, op.roots)
        if self._local(op.inputs, inputs, op.estimated_cost_s, op.roots):
            return super().run_fused(op, self._gather(op.inputs, inputs))
        if not get_config().codegen or self.axis(inputs[0]) != 0:
            return self.run_reference(op, inputs)  # node by node, each over the blocks
        try:
            aligned = kernel_spec(op.cplan).aligned
        except Exception as exc:  # never a wrong answer: node by node, each over the blocks
            _stats.bump("kernel_fallbacks")
            warnings.warn(
                f"no kernel for a {op.template} operator ({type(exc).__name__}: {exc}); running "
                "it through the reference interpreter",
                KernelFallbackWarning,
                stacklevel=3,
            )
            return self.run_reference(op, inputs)
        return self._fused_blocks(op, inputs, aligned)

    def _fused_blocks(self, op: FusedOp, inputs: Sequence[Value], aligned) -> list[Value]:
        chunks = inputs[0].chunks[0]
        g = graph.StepGraph(op.template)
        columns = []  # per input: its key per block
        for value, node, split in zip(inputs, op.inputs, aligned, strict=True):
            if split and not node.meta.is_scalar:
                columns.append(g.split(value, 0, chunks))
                continue
            if self.axis(value) is not None:
                _stats.bump("dask_partitioned_sent_whole")
            columns.append([g.whole(value)] * len(chunks))
        head = g.literal(_Head(op, self._state.settings))
        keys = g.blocks(_fused_block, [[head, *args] for args in zip(*columns, strict=True)])
        _stats.bump("dask_block_tasks", len(chunks))
        cplan = op.cplan
        out = []
        for parts, root, kind, agg, body_root in zip(
            _outputs(keys, len(op.roots)),
            op.roots,
            cplan.outputs,
            cplan.aggregations,
            cplan.body.roots,
            strict=True,
        ):
            if kind.per_row:
                value = g.stitched(parts, 0, chunks, root.meta.cols, root.meta.format)
                out.append(self._partitioned(value, 0))
                continue
            value = g.reduced(
                parts,
                root.shape,
                functools.partial(_kind_combine, kind, agg),
                functools.partial(kind.finalize, agg=agg, count=mean_count(body_root, kind)),
            )
            out.append(_in_format(value, root))
        return out

    def run_node(self, node: Node, args: Sequence[Value]) -> Value:
        if not any(is_dask(a) for a in args):
            return super().run_node(node, args)
        if all(self.axis(a) is None for a in args):
            return self._whole(_node_whole, _Head(node), args, (node,))[0]
        axes = [self.axis(a) for a in args]
        blocked = nodes.rule(
            node,
            axes,
            [a.chunks[x] if x is not None else () for a, x in zip(args, axes, strict=True)],
        )
        if blocked is None or self._local(node.inputs, args, placement.unfused_s(node), (node,)):
            return super().run_node(node, self._gather(node.inputs, args))
        return self._node_blocks(node, args, blocked)

    def _node_blocks(self, node: Node, args: Sequence[Value], blocked: nodes.Blocked) -> Value:
        chunks = blocked.chunks
        g = graph.StepGraph(node.op.value)
        columns = [
            g.split(a, role, chunks) if role is not None else [g.whole(a)] * len(chunks)
            for a, role in zip(args, blocked.roles, strict=True)
        ]
        reduce = blocked.out_axis is None
        shapes: dict[int, Node] = {}  # one block node per distinct extent
        per_block = []
        rows = zip(chunks, zip(*columns, strict=True), strict=True)
        for i, (extent, block_args) in enumerate(rows):
            if extent not in shapes:
                shapes[extent] = nodes.block_node(node, blocked, i)
            per_block.append([shapes[extent], None if reduce else node.meta.format, *block_args])
        parts = g.blocks(_node_block, per_block)
        _stats.bump("dask_block_tasks", len(chunks))
        if not reduce:
            other = node.shape[1 - blocked.out_axis]
            value = g.stitched(parts, blocked.out_axis, chunks, other, node.meta.format)
            return self._partitioned(value, blocked.out_axis)
        value = g.reduced(
            parts,
            node.shape,
            functools.partial(nodes.combine, how=blocked.reduce),
            functools.partial(nodes.finished, node=node, count=blocked.count),
        )
        return _in_format(value, node)

    def run_hand(self, node: Node, args: Sequence[Value]) -> Value:
        """A hand operator over Dask values: its definition, node by node over the blocks."""
        if not any(is_dask(a) for a in args):
            return super().run_hand(node, args)
        _stats.bump("hand_ops_by_reference")
        definition = node.attr("definition")
        values = dict(zip(node.attr("params"), args, strict=True))
        return evaluate_dag(Dag([definition]), values, self)[0]

    def _whole(self, fn, head: _Head, args: Sequence[Any], roots: Sequence[Node]) -> list[Any]:
        """One task over whole inputs (some lazy): its outputs, lazy."""
        g = graph.StepGraph("whole")
        (key,) = g.blocks(fn, [[g.literal(head), *(g.whole(a) for a in args)]])
        return [
            g.single(part[0], root.shape, root.meta.format)
            for part, root in zip(_outputs([key], len(roots)), roots, strict=True)
        ]

    # -- results --------------------------------------------------------------------------------
    def finish(self, values: list[Value]) -> list[Value]:
        """Every lazy result persisted in one submission; the small ones fetched."""
        lazy = [k for k, v in enumerate(values) if is_dask(v)]
        if not lazy:
            return values
        axes = {k: self.axis(values[k]) for k in lazy}
        persisted = dask.persist(*(values[k] for k in lazy), optimize_graph=False)
        out = list(values)
        for k, v in zip(lazy, persisted, strict=True):
            out[k] = self._partitioned(v, axes[k]) if axes[k] is not None else v
        small = [k for k in lazy if axes[k] is None]
        fetched = dask.compute(*(out[k] for k in small), optimize_graph=False)
        for k, v in zip(small, fetched, strict=True):
            out[k] = v
        return out

    def _forget_column(self, name: str) -> None:
        # run by the garbage collector, possibly inside a locked section: only noted here
        self._dead_columns.append(name)

    def _column(self, name: str, value: Any = None) -> Any:
        """The column a 1-D result was made from (None: unknown), or note one (``value``)."""
        with self._lock:
            while self._dead_columns:
                self._columns.pop(self._dead_columns.pop(), None)
            if value is not None:
                self._columns[name] = value
            return self._columns.get(name)

    def to_user(self, value: Value, ndim: int, dtype: str, inputs: Sequence[Any]) -> Any:
        """Partitioned results stay Dask arrays (1-D vectors as numpy shows them); a row result
        computed here (a step the cost model kept local) becomes one in the row blocks of the
        Dask input it came from; the rest as the local backend returns them."""
        if not is_dask(value):
            out = super().to_user(value, ndim, dtype, inputs)
            rows = [i.chunks[0] for i in inputs if is_dask(i) and i.shape[:1] == np.shape(out)[:1]]
            if ndim == 0 or not rows:
                return out
            chunks = (rows[0],) if ndim == 1 else (rows[0], (out.shape[1],))
            return da.from_array(out, chunks=chunks, asarray=not sp.issparse(out))
        fmt = Format.of(value)
        if not (ndim == 2 and dtype == "float64" and fmt.elementwise_closed):
            fmt = fmt.canonical  # as the local backend shows it (a lazy transpose: dense)
        out = value.map_blocks(
            _user_block,
            ndim,
            dtype,
            fmt,
            dtype=np.dtype(dtype),
            drop_axis=1 if ndim == 1 else (),
            meta=graph.empty_like(fmt, ndim, dtype),
        )
        if ndim == 1 and dtype == "float64":
            self._column(out.name, value)
            weakref.finalize(out, self._forget_column, out.name)
        return out


def _kind_combine(kind: Any, agg: str | None, partials: list[Any]) -> Any:
    return kind.combine(partials, agg)


def _user_block(block: Any, ndim: int, dtype: str, fmt: Format) -> Any:
    if ndim == 1:
        block = Format.of(block).to_dense(block).reshape(-1)
    elif Format.of(block) is not fmt:
        block = fmt.from_value(Format.of(block).to_canonical(block))
    return block if dtype == "float64" else block.astype(dtype)


def _in_format(value: Any, node: Node) -> Any:
    fmt = node.meta.format
    if node.meta.is_scalar or fmt is Format.DENSE:
        return value
    return value.map_blocks(fmt.from_value, dtype=np.float64, meta=graph.empty_like(fmt))
