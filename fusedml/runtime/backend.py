"""Backends: where a plan's steps run. The executor walks a plan; a backend binds its inputs,
runs its fused operators, hand operators and single nodes, and hands results to the user.

``LocalBackend`` runs everything in this process: generated kernels over whole inputs on the
shared thread pool (``threads.py``), hand-written kernels, and the reference interpreter for
unfused nodes. Another backend (Dask's, or a test's) subclasses it and overrides what it runs
differently; a fused operator's kernel can run per row block (``fused.partials``) with the
blocks' partials combined by the outputs' kinds (``fused.results``).

Nothing of a fused operator ever gives a wrong answer: a kernel that fails falls back to the
reference interpreter, with a ``KernelFallbackWarning``.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from fusedml import _stats
from fusedml._config import get_config
from fusedml._errors import KernelFallbackWarning
from fusedml.cplan.plan import FusedOp
from fusedml.formats import Collection, Format
from fusedml.ir.dag import Dag, last_uses
from fusedml.ir.node import Node
from fusedml.ir.ops import Op
from fusedml.runtime import fused, hand, interpreter
from fusedml.runtime.reference import Value, evaluate_node, plain, plain_runner, silenced
from fusedml.runtime.threads import one_thread, share_blas_pool


class BindingError(ValueError):
    pass


def check_result(node: Node, value: Value) -> None:
    """O(1) invariant: a step's value has the shape and format its meta names."""
    shape = getattr(value, "shape", ())  # floats have none; numpy scalars and 0-d arrays ()
    fmt = Format.of(value) if shape else node.meta.format
    if shape != node.shape or fmt is not node.meta.format:
        raise AssertionError(
            f"value of {node!r} is {getattr(fmt, 'name', type(value).__name__)} {shape}, "
            f"meta says {node.meta.describe()}"
        )


_fallback_warned: set = set()


def _failure(exc: Exception) -> str:
    # notes name the kernel file, where the cause can be looked at
    return "; ".join([f"{type(exc).__name__}: {exc}", *getattr(exc, "__notes__", ())])


def _warn_once(key: Any, message: str) -> None:
    if key not in _fallback_warned:
        _fallback_warned.add(key)
        warnings.warn(message, KernelFallbackWarning, stacklevel=4)


class LocalBackend:
    """Everything in this process (see the module docstring)."""

    name = "local"

    def begin(self) -> None:
        """Called before a plan runs."""
        share_blas_pool()  # BLAS products and kernels on one pool of threads

    def bind(self, leaf: Node, value: Any) -> Value:
        """A leaf's value, checked against the meta the plan was built for."""
        meta = leaf.meta
        if meta.is_scalar:
            if np.ndim(value) != 0:
                raise BindingError(f"input {leaf.attr('name')!r} must be a scalar")
            return value
        if getattr(value, "shape", None) != meta.shape:
            raise BindingError(
                f"input {leaf.attr('name')!r} has shape {getattr(value, 'shape', None)}, "
                f"the plan was built for {meta.shape}"
            )
        if Format.of(value) is not meta.format:
            raise BindingError(f"input {leaf.attr('name')!r} must be {meta.format.name}")
        return value

    # -- steps ----------------------------------------------------------------------------------
    def run_fused(self, op: FusedOp, inputs: Sequence[Value]) -> list[Value]:
        """A fused operator's outputs: its kernel, or the reference if the kernel fails."""
        if get_config().codegen:
            try:
                if op.parallel:
                    return self.run_kernel(op, inputs)
                with one_thread():  # too little work for a parallel launch
                    return self.run_kernel(op, inputs)
            except fused.KernelNotReady:  # being compiled: the interim tier runs it meanwhile
                _stats.bump("fused_ops_awaiting_kernel")
                return interpreter.run(op, inputs, fused.prepared(op).spec, self)
            except Exception as exc:  # never a wrong answer: the reference computes it
                _stats.bump("kernel_fallbacks")
                _warn_once(
                    op.cplan.key,
                    f"generated kernel for a {op.template} operator failed ({_failure(exc)}); "
                    "running it through the reference interpreter",
                )
        return self.run_reference(op, inputs)

    def run_kernel(self, op: FusedOp, inputs: Sequence[Value]) -> list[Value]:
        return fused.run(op, inputs)

    def run_reference(self, op: FusedOp, inputs: Sequence[Value]) -> list[Value]:
        """A fused operator whose kernel cannot run (codegen off, or the kernel failed)."""
        _stats.bump("fused_ops_by_reference")
        return self.reference(op, inputs)

    def reference(self, op: FusedOp, inputs: Sequence[Value]) -> list[Value]:
        """A fused operator's outputs from the reference interpreter, node by node."""
        cplan = op.cplan
        return self.evaluate(cplan.body, dict(zip(cplan.params, inputs, strict=True)))

    def evaluate(self, dag: Dag, values: dict[Node, Value]) -> list[Value]:
        """The roots of ``dag`` node by node; ``values`` holds its leaves."""
        return evaluate_dag(dag, values, self)

    def run_hand(self, node: Node, args: Sequence[Value]) -> Value:
        """A hand operator's kernel over canonical values; inputs of a format that would be
        decompressed for it (``Format.computes_natively``) run its definition instead."""
        if any(i.meta.format.computes_natively for i in node.inputs):
            _stats.bump("hand_ops_by_reference")
            return self.run_node(node, args)
        try:
            return hand.run(
                node,
                [i.meta.format.to_canonical(a) for i, a in zip(node.inputs, args, strict=True)],
            )
        except Exception as exc:  # never a wrong answer: the reference computes this operator
            _stats.bump("hand_ops_by_reference")
            _warn_once(
                (node.attr("name"), node.attr("variant"), type(exc)),
                f"hand-written kernel {node.attr('name')}[{node.attr('variant')}] failed "
                f"({_failure(exc)}); running it through the reference interpreter",
            )
        return self.run_node(node, args)

    def run_node(self, node: Node, args: Sequence[Value]) -> Value:
        """One node on its own: the reference interpreter's numpy/scipy operation."""
        return evaluate_node(node, args)

    # -- results --------------------------------------------------------------------------------
    def finish(self, values: list[Value]) -> list[Value]:
        """The roots' values when a plan has run (a backend with lazy values computes them)."""
        return values

    def to_user(self, value: Value, ndim: int, dtype: str, inputs: Sequence[Any]) -> Any:
        """An IR value as numpy shows it: float, 1-D/2-D ndarray, or CSR for sparse 2-D results;
        2-D values of a format closed under elementwise ops (compressed) stay in it, as CSR stays
        CSR. Results that alias an input (``X * 1`` rewritten to ``X``) are copied, as numpy
        would."""
        if ndim == 0:
            return float(value)
        fmt = Format.of(value)
        if ndim == 2 and fmt.elementwise_closed and dtype == "float64":
            return value  # immutable: sharing the input's arrays is safe
        value = fmt.to_canonical(value)
        out = fmt.canonical.to_dense(value).reshape(-1) if ndim == 1 else value
        if dtype != "float64":
            out = out.astype(dtype)
        if not _fresh(value, inputs) and any(_shares_memory(out, inp) for inp in inputs):
            return out.copy()
        return out


def _arrays(value: Any) -> list[np.ndarray]:
    if Collection.of(value) is not None:  # held elsewhere: never a view of local memory
        return []
    fmt = Format.of(value)
    return fmt.arrays(value) if fmt is not None else []


def _fresh(value: Any, inputs: Sequence[Any]) -> bool:
    """Whether a value is a numpy array that owns its memory and is none of the inputs: one a
    step allocated, which cannot share memory with them (the full test, per input, cost more
    than a small unfused operator)."""
    return (
        type(value) is np.ndarray and value.base is None and all(value is not inp for inp in inputs)
    )


def _shares_memory(a: Any, b: Any) -> bool:
    return any(np.may_share_memory(x, y) for x in _arrays(a) for y in _arrays(b))


def evaluate_dag(dag: Dag, values: dict[Node, Value], backend: LocalBackend) -> list[Value]:
    """The values of ``dag.roots``, node by node; ``values`` holds the leaves (and is extended).
    On the local backend, plain numpy values go straight to their numpy function
    (``plain_runner``): the interim tier evaluates an 80-node body once per row block, where the
    per-node dispatch cost as much as numpy's work."""
    program = _program(dag)
    direct = type(backend).run_node is LocalBackend.run_node
    with silenced():
        for node, run, freed in program:
            if node in values:
                continue
            if node.op is Op.DATA:
                raise BindingError(f"no value bound to input {node.attr('name')!r}")
            args = [values[i] for i in node.inputs]
            value = run_plain(run, node, args) if direct else None
            if value is None:
                value = backend.run_node(node, args)
                check_result(node, value)
            values[node] = value
            for child in freed:
                values.pop(child, None)
    return [values[r] for r in dag.roots]


def run_plain(run: Any, node: Node, args: list[Value]) -> Value | None:
    """``node``'s value by its plain runner ``run`` (``plain_runner``) if there is one and the
    arguments are plain numpy values; None if not."""
    if run is None or not plain(args):
        return None
    value = run(*args)
    if type(value) is not np.ndarray or value.shape != node.shape:
        check_result(node, value)  # an ndarray of the right shape is DENSE: nothing to check
    return value


def _program(dag: Dag) -> list[tuple[Node, Any, tuple[Node, ...]]]:
    """Per node of ``dag`` in order: its plain runner (or None) and the inputs it is the last
    consumer of (roots are kept)."""
    program = dag.memo.get("program")
    if program is None:
        freed = last_uses(dag.nodes, dag.roots)
        program = dag.memo["program"] = list(
            zip(dag.nodes, map(plain_runner, dag.nodes), freed, strict=True)
        )
    return program


LOCAL = LocalBackend()


def current_backend() -> LocalBackend:
    """The configured backend (``fm.config(backend=...)``), the local one by default."""
    return get_config().backend or LOCAL


def backend_for(values: Iterable[Any]) -> LocalBackend:
    """The configured backend, else the backend of the first distributed value among ``values``
    (a registered collection's: a Dask array's), else the local one."""
    configured = get_config().backend
    if configured is not None:
        return configured
    for value in values:
        collection = Collection.of(value)
        if collection is not None:
            return collection.backend
    return LOCAL
