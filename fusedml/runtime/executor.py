"""Runs a plan: its steps in order (fused operators, hand operators and single nodes) on a
backend (``backend.py``), each intermediate freed after its last use."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping
from typing import Any

from fusedml import _stats
from fusedml.cplan.plan import FusedOp, Plan
from fusedml.ir.dag import Dag
from fusedml.ir.node import Node
from fusedml.ir.ops import Op
from fusedml.runtime.backend import (
    BindingError,
    LocalBackend,
    backend_for,
    check_result,
    current_backend,
    run_plain,
)
from fusedml.runtime.backend import evaluate_dag as _evaluate_dag
from fusedml.runtime.reference import Value, plain_runner, silenced

__all__ = ["BindingError", "evaluate_dag", "execute", "to_user"]


def evaluate_dag(dag: Dag, values: dict[Node, Value]) -> list[Value]:
    """Reference values of ``dag.roots``; ``values`` holds the leaves (and is extended)."""
    return _evaluate_dag(dag, values, current_backend())


def _step(backend: LocalBackend, step: Any, values: dict[Node, Value]) -> None:
    """Runs one step into ``values``."""
    if isinstance(step, FusedOp):
        _stats.bump("fused_ops_executed")
        outputs = backend.run_fused(step, [values[i] for i in step.inputs])
        for root, value in zip(step.roots, outputs, strict=True):
            check_result(root, value)
            values[root] = value
        return
    args = [values[i] for i in step.inputs]
    if step.op is Op.HAND:
        values[step] = backend.run_hand(step, args)
    else:
        values[step] = backend.run_node(step, args)
    check_result(step, values[step])


def _runners(plan: Plan, backend: LocalBackend) -> tuple[Any, ...]:
    """Per step of ``plan.schedule``: the function that computes a single node on plain numpy
    values, or None (a fused operator, a hand operator, another format, or a backend that runs
    single nodes its own way). Calling it directly skipped the per-node dispatch, a quarter of
    a small unfused plan's time (L2SVM's Hessian product on digits: 42 -> 36 us of numpy's
    29)."""
    if type(backend).run_node is not LocalBackend.run_node:
        return (None,) * len(plan.schedule)
    runners = plan.memo.get("runners")
    if runners is None:
        runners = plan.memo["runners"] = tuple(
            None if isinstance(step, FusedOp) else plain_runner(step) for step in plan.schedule
        )
    return runners


def _run_plain(run: Any, step: Node, values: dict[Node, Value]) -> bool:
    """Runs ``step`` by ``run`` if its arguments are plain numpy values; False if not."""
    value = run_plain(run, step, [values[i] for i in step.inputs])
    if value is None:
        return False
    values[step] = value
    return True


def execute(
    plan: Plan, bindings: Mapping[Node, Any], backend: LocalBackend | None = None
) -> list[Value]:
    """Values of ``plan.dag.roots`` (IR form) for the given leaf values."""
    backend = backend or backend_for(bindings.values())
    dag = plan.dag
    values: dict[Node, Value] = {}
    backend.begin()
    # single nodes run with floating-point warnings off, entered once for all of them
    quiet = silenced() if plan.unfused else contextlib.nullcontext()
    start = time.perf_counter()
    try:
        with quiet:
            for leaf in dag.leaves:
                try:
                    value = bindings[leaf]
                except KeyError:
                    raise BindingError(f"no value bound to input {leaf.attr('name')!r}") from None
                values[leaf] = backend.bind(leaf, value)
            for node in plan.constants:
                values[node] = node.attr("value")
            runners = _runners(plan, backend)
            for step, run, freed in zip(plan.schedule, runners, plan.releases, strict=True):
                if run is None or not _run_plain(run, step, values):
                    _step(backend, step, values)
                for node in freed:
                    values.pop(node, None)
            _stats.bump("ops_executed", plan.unfused_steps)
            return backend.finish([values[r] for r in dag.roots])
    finally:
        _stats.add_seconds("execute", time.perf_counter() - start)


def to_user(value: Value, ndim: int, dtype: str, inputs: list[Any]) -> Any:
    """An IR value as numpy shows it (see ``LocalBackend.to_user``), by the backend that ran
    plans over ``inputs``."""
    return backend_for(inputs).to_user(value, ndim, dtype, inputs)
