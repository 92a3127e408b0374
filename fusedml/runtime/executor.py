"""Runs a plan: its steps in order (fused operators and single nodes), each intermediate freed
after its last use. Fused operators run their generated kernels and hand operators (``Op.HAND``)
their hand-written ones; either falls back to the reference interpreter, with a warning, if its
kernel fails, so no mode ever returns a different answer."""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from fusedml import _stats
from fusedml._config import get_config
from fusedml._errors import KernelFallbackWarning
from fusedml.cplan.plan import FusedOp, Plan
from fusedml.formats import Format
from fusedml.ir.dag import Dag
from fusedml.ir.node import Node
from fusedml.ir.ops import Op
from fusedml.runtime import hand
from fusedml.runtime.fused import SUPPORTED, run
from fusedml.runtime.reference import Value, evaluate_node
from fusedml.runtime.threads import one_thread, share_blas_pool


class BindingError(ValueError):
    pass


def _check_binding(node: Node, value: Value) -> None:
    meta = node.meta
    if meta.is_scalar:
        if np.ndim(value) != 0:
            raise BindingError(f"input {node.attr('name')!r} must be a scalar")
        return
    if getattr(value, "shape", None) != meta.shape:
        raise BindingError(
            f"input {node.attr('name')!r} has shape {getattr(value, 'shape', None)}, "
            f"the plan was built for {meta.shape}"
        )
    if sp.issparse(value) != (meta.format is Format.CSR):
        raise BindingError(f"input {node.attr('name')!r} must be {meta.format.value}")


def _check_result(node: Node, value: Value) -> None:
    # O(1) invariant: the interpreter honours the meta every later stage relies on
    shape = () if np.ndim(value) == 0 else value.shape
    sparse = sp.issparse(value)
    if shape != node.shape or (node.meta.format is Format.CSR) != sparse:
        raise AssertionError(
            f"reference result of {node!r} is {'csr' if sparse else 'dense'} {shape}, "
            f"meta says {node.meta.describe()}"
        )


def evaluate_dag(dag: Dag, values: dict[Node, Value]) -> list[Value]:
    """Reference values of ``dag.roots``; ``values`` holds the leaves (and is extended)."""
    remaining = {n: len(c) for n, c in dag.consumers.items()}
    keep = set(dag.roots)
    for node in dag.nodes:
        if node in values:
            continue
        if node.op is Op.DATA:
            raise BindingError(f"no value bound to input {node.attr('name')!r}")
        value = evaluate_node(node, [values[i] for i in node.inputs])
        _check_result(node, value)
        values[node] = value
        for child in node.inputs:
            remaining[child] -= 1
            if remaining[child] == 0 and child not in keep:
                values.pop(child, None)
    return [values[r] for r in dag.roots]


_fallback_warned: set = set()


def _failure(exc: Exception) -> str:
    # notes name the kernel file, where the cause can be looked at
    return "; ".join([f"{type(exc).__name__}: {exc}", *getattr(exc, "__notes__", ())])


def _run_fused(op: FusedOp, values: Mapping[Node, Value]) -> list[Value]:
    if get_config().codegen and op.cplan.template in SUPPORTED:
        try:
            if op.parallel:
                return run(op, values)
            with one_thread():  # too little work for a parallel launch
                return run(op, values)
        except Exception as exc:  # never a wrong answer: the reference computes this operator
            _stats.bump("kernel_fallbacks")
            key = op.cplan.key
            if key not in _fallback_warned:
                _fallback_warned.add(key)
                warnings.warn(
                    f"generated kernel for a {op.template} operator failed "
                    f"({_failure(exc)}); running it through the reference interpreter",
                    KernelFallbackWarning,
                    stacklevel=2,
                )
    return _run_reference(op, values)


def _run_hand(node: Node, args: list[Value]) -> Value:
    try:
        return hand.run(node, args)
    except Exception as exc:  # never a wrong answer: the reference computes this operator
        _stats.bump("hand_ops_by_reference")
        key = (node.attr("name"), node.attr("variant"), type(exc))
        if key not in _fallback_warned:
            _fallback_warned.add(key)
            warnings.warn(
                f"hand-written kernel {node.attr('name')}[{node.attr('variant')}] failed "
                f"({_failure(exc)}); running it through the reference interpreter",
                KernelFallbackWarning,
                stacklevel=2,
            )
    return evaluate_node(node, args)


def _run_reference(op: FusedOp, values: Mapping[Node, Value]) -> list[Value]:
    cplan = op.cplan
    bound = {param: values[node] for param, node in zip(cplan.params, cplan.inputs, strict=True)}
    _stats.bump("fused_ops_by_reference")
    return evaluate_dag(cplan.body, bound)


def execute(plan: Plan, bindings: Mapping[Node, Value]) -> list[Value]:
    """Values of ``plan.dag.roots`` (IR form) for the given leaf values."""
    dag = plan.dag
    steps = plan.schedule
    uses: Counter[Node] = Counter()
    for step in steps:
        uses.update(step.inputs)
    keep = set(dag.roots)
    values: dict[Node, Value] = {}
    share_blas_pool()  # BLAS products and kernels on one pool of threads (runtime/threads.py)
    with _stats.timed("execute"):
        for leaf in dag.leaves:
            try:
                value = bindings[leaf]
            except KeyError:
                raise BindingError(f"no value bound to input {leaf.attr('name')!r}") from None
            _check_binding(leaf, value)
            values[leaf] = value
        for node in dag.nodes:
            if node.op is Op.CONST:
                values[node] = node.attr("value")
        for step in steps:
            if isinstance(step, FusedOp):
                _stats.bump("fused_ops_executed")
                outputs = _run_fused(step, values)
                for root, value in zip(step.roots, outputs, strict=True):
                    _check_result(root, value)
                    values[root] = value
                inputs: Sequence[Node] = step.inputs
            elif step.op is Op.HAND:
                values[step] = _run_hand(step, [values[i] for i in step.inputs])
                _check_result(step, values[step])
                inputs = step.inputs
            else:
                values[step] = evaluate_node(step, [values[i] for i in step.inputs])
                _check_result(step, values[step])
                _stats.bump("ops_executed")
                inputs = step.inputs
            for child in inputs:
                uses[child] -= 1
                if uses[child] == 0 and child not in keep:
                    values.pop(child, None)
    return [values[r] for r in dag.roots]


def to_user(value: Value, ndim: int, dtype: str, inputs: list[Any]) -> Any:
    """An IR value as numpy shows it: float, 1-D/2-D ndarray, or CSR for sparse 2-D results.
    Results that alias an input (``X * 1`` rewritten to ``X``) are copied, as numpy would."""
    if ndim == 0:
        return float(value)
    if ndim == 1:
        out = (value.toarray() if sp.issparse(value) else np.asarray(value)).reshape(-1)
    elif sp.issparse(value):
        out = sp.csr_array(value)
    else:
        out = np.asarray(value)
    if dtype != "float64":
        out = out.astype(dtype)
    arrays = [out.data] if sp.issparse(out) else [out]
    for inp in inputs:
        inp_arrays = [inp.data] if sp.issparse(inp) else [inp]
        if any(np.may_share_memory(a, b) for a in arrays for b in inp_arrays):
            return out.copy()
    return out
