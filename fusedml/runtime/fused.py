"""Running a fused operator's generated kernel: input values in, one partial per output out.

Everything that depends only on the operator (its kernel spec, compiled kernel and literal values)
is prepared once per operator and kept while the plan lives, so a repeated call pays only the
operands' marshalling and the kernel itself. ``partials`` runs the kernel over whatever rows it
is given (a backend may give it one row block at a time); ``results`` finishes the combined
partials into the outputs' values.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

from fusedml import _stats
from fusedml.codegen import compiler
from fusedml.codegen.cache import get_kernel, kernel_file
from fusedml.codegen.spec import KernelSpec, kernel_spec
from fusedml.cplan.kinds import mean_count
from fusedml.cplan.plan import FusedOp
from fusedml.formats import Format


class KernelNotReady(Exception):
    """The operator's kernel has no machine code yet (a worker is compiling it)."""


_prepared: weakref.WeakKeyDictionary[FusedOp, tuple] = weakref.WeakKeyDictionary()


def prepared(op: FusedOp) -> tuple[KernelSpec, Any, list[float]]:
    """(spec, compiled kernel, literal values) of an operator, made on first use."""
    found = _prepared.get(op)
    if found is None:
        spec = kernel_spec(op.cplan)
        fn, kernel = get_kernel(spec.key, spec.build)
        nodes = op.cplan.body.nodes
        literals = [float(nodes[k].attr("value")) for k in kernel.literal_positions]
        found = _prepared[op] = (spec, fn, literals)
    return found


def partials(op: FusedOp, inputs: Sequence[Any]) -> list[Any]:
    """One partial per output of the kernel run over ``inputs`` (values of ``op.inputs``, the
    aligned ones possibly one row block of them)."""
    spec, fn, literals = prepared(op)
    args = [*spec.arguments(inputs), *literals]
    try:
        raw = _call(fn, args)
    except KernelNotReady:
        raise
    except Exception as exc:
        exc.add_note(f"kernel file: {kernel_file(fn)}")
        raise
    _stats.bump("kernels_executed")
    return spec.partials(raw, inputs)


def _call(fn: Any, args: list[Any]) -> Any:
    try:
        return fn(*args)  # compiled code only: generated kernels never compile at call time
    except (TypeError, RuntimeError):  # no code for these types (Runtime: a thread raced a compile)
        if not compiler.obtain(fn, args):
            raise KernelNotReady from None
    return fn(*args)  # a TypeError of the kernel itself raises again


def results(op: FusedOp, blocks: Sequence[list[Any]]) -> list[Any]:
    """The outputs' values from the partials of consecutive row blocks (each a list with one
    partial per output), combined by each output's kind."""
    cplan = op.cplan
    out = []
    for k, (root, kind, agg) in enumerate(
        zip(op.roots, cplan.outputs, cplan.aggregations, strict=True)
    ):
        value = kind.combine([b[k] for b in blocks], agg)
        value = kind.finalize(value, agg, mean_count(cplan.body.roots[k], kind))
        if not root.meta.is_scalar and Format.of(value) is not root.meta.format:
            value = root.meta.format.from_value(value)  # rows written dense, stored as meta says
        out.append(value)
    return out


def run(op: FusedOp, inputs: Sequence[Any]) -> list[Any]:
    """The outputs' values of one kernel call over all rows."""
    return results(op, [partials(op, inputs)])
