"""The optimizer pipeline as a straight line of named stages.

    dag -> rewrite -> explore (memo) -> select -> cplan -> plan -> execute

``optimize_until(outputs, stage)`` returns the artifact of any stage, so tests and ``explain`` can
look at each one. ``fusion="hand"`` adds the hand-operator patterns to the rewrite stage and
selects nothing: its plan is the rewritten DAG run node by node. Debug levels (``FUSEDML_DEBUG``
or ``fm.config(debug=...)``): 1 verifies DAGs and prints per-stage timings, 2 also prints the
plan, 3 also the memo before and after selection, 4 also each generated kernel's source.
"""

from __future__ import annotations

import dataclasses
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from fusedml import _stats
from fusedml._config import check_fusion_mode, get_config
from fusedml.cplan.cplan import construct
from fusedml.cplan.plan import FusedOp, Plan
from fusedml.dask_backend.placement import placements
from fusedml.fusion.explore import explore
from fusedml.fusion.memo import MemoTable
from fusedml.ir.dag import Dag
from fusedml.ir.frontend import Expr, as_expr
from fusedml.ir.node import Node
from fusedml.ir.ops import LEAF
from fusedml.ir.verify import verify
from fusedml.rewrite.driver import rewrite
from fusedml.rewrite.hand import hand_rewrite
from fusedml.runtime.executor import execute, to_user
from fusedml.select.constants import current_constants
from fusedml.select.cost import CostModel
from fusedml.select.policies import POLICIES, SelectionResult

STAGES = ("dag", "rewrite", "explore", "select", "cplan", "plan")


def resolve_fusion(fusion: str | None) -> str:
    """The fusion mode to run: ``fusion``, or the configured default when it is None."""
    return check_fusion_mode(get_config().fusion if fusion is None else fusion)


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


def _rewrite(dag: Dag, mode: str) -> Dag:
    dag = rewrite(dag)
    # Fused (the paper's baseline): hand-written operators where patterns match, the rest unfused
    return hand_rewrite(dag) if mode == "hand" else dag


def _select(memo: MemoTable, mode: str, model: CostModel) -> SelectionResult | None:
    if mode in ("none", "hand"):
        return None
    return POLICIES[mode](memo, model)


def _fused_ops(result: SelectionResult | None, model: CostModel) -> tuple[FusedOp, ...]:
    if result is None:
        return ()
    return tuple(
        FusedOp(
            op.type.label,
            op.roots,
            op.nodes,
            construct(op),
            model.operator(op),
            model.runs_parallel(op),
        )
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
    mode = resolve_fusion(fusion)
    dag = stages.run("rewrite", _rewrite, dag, mode)
    if stages.debug >= 1:
        verify(dag)
    if stage == "rewrite":
        return dag
    memo = stages.run("explore", explore, dag)
    stages.show(3, "memo after exploration", memo)
    if stage == "explore":
        return memo
    model = cost_model()
    result = stages.run("select", _select, memo, mode, model)
    if result is not None:
        stages.show(3, f"selected ({mode})", _describe_selection(result, dag.index))
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
    search = result.stats.as_dict() if result is not None and mode == "cost_based" else {}
    plan = Plan(dag, mode, operators, unfused, cost, search)
    placement = placements(plan)
    if placement:
        plan = dataclasses.replace(plan, placement=placement)
    _stats.bump("plans_optimized")
    for op in operators:  # fused operators planned, by template
        _stats.bump(f"planned_{op.template}")
    _stats.bump("planned_hand", len(plan.hand_operators))
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
