"""``fm.evaluate`` and ``fm.explain``: run or show the plan of lazy expressions."""

from __future__ import annotations

from typing import Any

from fusedml import pipeline
from fusedml.cplan.plan import Plan
from fusedml.ir.frontend import Expr, as_expr


def _collect(exprs: Any) -> tuple[list[Expr], type | None]:
    structure = type(exprs) if isinstance(exprs, tuple | list) else None
    items = exprs if structure is not None else [exprs]
    return [as_expr(e, "fm.evaluate") for e in items], structure


def evaluate(exprs: Any, fusion: str | None = None) -> Any:
    """Compute an expression (or a tuple/list of them, sharing common work).

    Returns what numpy would: a float for 0-D results, ndarrays, or a ``scipy.sparse.csr_array``
    where the result is sparse. ``fusion`` overrides the configured mode for this call.
    """
    items, structure = _collect(exprs)
    plan = pipeline.optimize_until([e.node for e in items], "plan", fusion)
    bindings: dict = {}
    for e in items:
        bindings.update(e.bindings)
    values = pipeline.run(plan, bindings)
    outputs = pipeline.user_outputs(items, values, bindings)
    return outputs[0] if structure is None else structure(outputs)


def explain(exprs: Any, fusion: str | None = None) -> Plan:
    """The plan ``evaluate`` would run; ``str(plan)`` lists fused operators and the DAG."""
    items, _ = _collect(exprs)
    return pipeline.optimize_until([e.node for e in items], "plan", fusion)
