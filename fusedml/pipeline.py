"""The optimizer pipeline as a straight line of named stages.

    trace -> dag -> rewrite -> plan -> execute

``optimize_until(outputs, stage)`` returns the artifact of any stage, so tests and ``explain`` can
look at each one. Later stages (explore, select, cplan, codegen) slot in before ``plan``.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from fusedml import _stats
from fusedml._config import check_fusion_mode, get_config
from fusedml._errors import FusionModeWarning
from fusedml.cplan.plan import Plan
from fusedml.ir.dag import Dag
from fusedml.ir.frontend import Expr, as_expr
from fusedml.ir.node import Node
from fusedml.ir.verify import verify
from fusedml.rewrite.driver import rewrite
from fusedml.runtime.executor import execute, to_user

STAGES = ("dag", "rewrite", "plan")
IMPLEMENTED_MODES = frozenset({"none"})

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


def optimize_until(outputs: Any, stage: str = "plan", fusion: str | None = None) -> Any:
    """The artifact of ``stage`` (one of ``STAGES``) for ``outputs`` (Exprs, nodes or a Dag)."""
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; stages are {', '.join(STAGES)}")
    with _stats.timed("dag"):
        dag = as_dag(outputs)
    if stage == "dag":
        return dag
    with _stats.timed("rewrite"):
        dag = rewrite(dag)
    if get_config().debug >= 1:
        verify(dag)
    if stage == "rewrite":
        return dag
    requested, effective = resolve_fusion(fusion)
    plan = Plan(dag, requested, effective)
    _stats.bump("plans_optimized")
    if get_config().debug >= 2:
        print(f"[fusedml] {plan}", file=sys.stderr)
    return plan


def run(plan: Plan, bindings: Mapping[Node, Any]) -> list[Any]:
    return execute(plan, bindings)


def user_outputs(exprs: Sequence[Expr], values: Sequence[Any], bindings: Mapping) -> list[Any]:
    inputs = [v for v in bindings.values() if hasattr(v, "shape")]
    return [
        to_user(v, e.ndim, e.node.meta.dtype, inputs) for e, v in zip(exprs, values, strict=True)
    ]
