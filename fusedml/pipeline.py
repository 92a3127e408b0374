"""The optimizer pipeline as a straight line of named stages.

    dag -> rewrite -> explore (memo) -> select -> cplan -> plan -> execute

``optimize_until(outputs, stage)`` returns the artifact of any stage, so tests and ``explain`` can
look at each one. Debug levels (``FUSEDML_DEBUG`` or ``fm.config(debug=...)``): 1 verifies DAGs and
prints per-stage timings, 2 also prints the plan, 3 also the memo before and after selection.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import warnings
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from fusedml import _stats
from fusedml._config import check_fusion_mode, get_config
from fusedml._errors import FusionModeWarning
from fusedml.cplan.cplan import construct
from fusedml.cplan.plan import FusedOp, Plan
from fusedml.fusion.explore import explore
from fusedml.fusion.memo import MemoTable
from fusedml.ir.dag import Dag
from fusedml.ir.frontend import Expr, as_expr
from fusedml.ir.node import Node
from fusedml.ir.ops import LEAF
from fusedml.ir.verify import verify
from fusedml.rewrite.driver import rewrite
from fusedml.runtime.executor import execute, to_user
from fusedml.select.constants import current_constants
from fusedml.select.cost import CostModel
from fusedml.select.policies import POLICIES, SelectionResult

STAGES = ("dag", "rewrite", "explore", "select", "cplan", "plan")
IMPLEMENTED_MODES = frozenset({"none", *POLICIES})

_warned: set[str] = set()
_warn_lock = threading.Lock()
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _caller_stacklevel() -> int:
    """stacklevel of the first frame outside fusedml/, so warnings point at the user's line."""
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    return level


def resolve_fusion(fusion: str | None) -> tuple[str, str]:
    """(requested, effective) fusion mode; warns once per process for modes not built yet."""
    requested = check_fusion_mode(get_config().fusion if fusion is None else fusion)
    if requested in IMPLEMENTED_MODES:
        return requested, requested
    with _warn_lock:
        first = requested not in _warned
        _warned.add(requested)
    if first:
        warnings.warn(
            f"fusion={requested!r} is not implemented yet; running operator at a time "
            "(fusion='none'). Results are the same; speed is not.",
            FusionModeWarning,
            stacklevel=_caller_stacklevel(),
        )
    return requested, "none"


def as_dag(outputs: Any) -> Dag:
    if isinstance(outputs, Dag):
        return outputs
    if isinstance(outputs, Expr | Node):
        outputs = [outputs]
    roots = [o if isinstance(o, Node) else as_expr(o, "output").node for o in outputs]
    return Dag(roots)


def cost_model() -> CostModel:
    return CostModel(current_constants())


class _Stages:
    """Runs the stages in order, timing each and printing what the debug level asks for."""

    def __init__(self) -> None:
        self.debug = get_config().debug

    def run(self, name: str, fn, *args):
        start = time.perf_counter()
        with _stats.timed(name):
            result = fn(*args)
        if self.debug >= 1:
            print(
                f"[fusedml] {name}: {(time.perf_counter() - start) * 1e3:.3f} ms", file=sys.stderr
            )
        return result

    def show(self, level: int, title: str, text: object) -> None:
        if self.debug >= level:
            print(f"[fusedml] {title}:\n{text}", file=sys.stderr)


def _select(memo: MemoTable, effective: str, model: CostModel) -> SelectionResult | None:
    if effective == "none":
        return None
    return POLICIES[effective](memo, model)


def _fused_ops(result: SelectionResult | None, model: CostModel) -> tuple[FusedOp, ...]:
    if result is None:
        return ()
    return tuple(
        FusedOp(op.type.label, op.roots, op.nodes, construct(op), model.operator(op))
        for op in result.selection.operators
    )


_PLAN_CACHE_SIZE = 256
_plan_cache: OrderedDict[tuple, Plan] = OrderedDict()
_plan_cache_lock = threading.Lock()


def optimize_until(outputs: Any, stage: str = "plan", fusion: str | None = None) -> Any:
    """The artifact of ``stage`` (one of ``STAGES``) for ``outputs`` (Exprs, nodes or a Dag).

    Plans are cached by (output nodes, fusion mode, configuration): nodes are hash-consed, so
    evaluating the same expression again, or an equal one over the same inputs, skips the optimizer.
    """
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; stages are {', '.join(STAGES)}")
    if stage != "plan":
        return _optimize(outputs, stage, fusion)
    dag = as_dag(outputs)
    key = (dag.roots, fusion, get_config())
    with _plan_cache_lock:
        plan = _plan_cache.get(key)
        if plan is not None:
            _plan_cache.move_to_end(key)
    if plan is not None:
        _stats.bump("plan_cache_hits")
        return plan
    plan = _optimize(dag, stage, fusion)
    with _plan_cache_lock:
        _plan_cache[key] = plan
        while len(_plan_cache) > _PLAN_CACHE_SIZE:
            _plan_cache.popitem(last=False)
    return plan


def _optimize(outputs: Any, stage: str, fusion: str | None) -> Any:
    stages = _Stages()
    dag = stages.run("dag", as_dag, outputs)
    if stage == "dag":
        return dag
    dag = stages.run("rewrite", rewrite, dag)
    if stages.debug >= 1:
        verify(dag)
    if stage == "rewrite":
        return dag
    requested, effective = resolve_fusion(fusion)
    memo = stages.run("explore", explore, dag)
    stages.show(3, "memo after exploration", memo)
    if stage == "explore":
        return memo
    model = cost_model()
    result = stages.run("select", _select, memo, effective, model)
    if result is not None:
        stages.show(3, f"selected ({effective})", _describe_selection(result, dag.index))
        _stats.bump("plans_costed", result.stats.plans_costed)
    if stage == "select":
        return result
    operators = stages.run("cplan", _fused_ops, result, model)
    if stage == "cplan":
        return operators
    if result is None:
        unfused = tuple(n for n in dag.nodes if n.op not in LEAF)
        cost = sum(model.unfused(n) for n in unfused)
    else:
        unfused, cost = tuple(result.selection.unfused), result.cost_s
    search = result.stats.as_dict() if result is not None and effective == "cost_based" else {}
    plan = Plan(dag, requested, effective, operators, unfused, cost, search)
    _stats.bump("plans_optimized")
    stages.show(2, "plan", plan)
    return plan


def _describe_selection(result: SelectionResult, index: dict[Node, int]) -> str:
    lines = [
        f"{op.type.name} roots={[index[r] for r in op.roots]} "
        f"nodes={sorted(index[n] for n in op.nodes)}"
        for op in result.selection.operators
    ]
    unfused = sorted(index[n] for n in result.selection.unfused)
    lines.append(f"unfused={unfused} cost={result.cost_s * 1e3:.3g} ms")
    return "\n".join(lines)


def run(plan: Plan, bindings: Mapping[Node, Any]) -> list[Any]:
    return execute(plan, bindings)


def user_outputs(exprs: Sequence[Expr], values: Sequence[Any], bindings: Mapping) -> list[Any]:
    inputs = [v for v in bindings.values() if hasattr(v, "shape")]
    return [
        to_user(v, e.ndim, e.node.meta.dtype, inputs) for e, v in zip(exprs, values, strict=True)
    ]
