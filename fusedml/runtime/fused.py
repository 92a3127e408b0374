"""Running a fused operator's generated kernel: arguments in, the IR value out."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import scipy.sparse as sp

from fusedml import _stats
from fusedml.codegen.cache import get_kernel, record_compile
from fusedml.codegen.skeletons import Param, cell_kernel
from fusedml.cplan.plan import FusedOp
from fusedml.fusion.templates import TemplateType
from fusedml.ir.node import Node
from fusedml.ir.ops import AGGREGATE, Op

SUPPORTED = frozenset({TemplateType.CELL, TemplateType.MAGG})


def _params(op: FusedOp) -> list[Param]:
    return [Param(p, p.attr("name")) for p in op.cplan.params]


def _signature(params: list[Param]) -> tuple:
    return tuple(
        (p.node.meta.format, p.node.meta.is_scalar, p.node.meta.rows == 1, p.node.meta.cols == 1)
        for p in params
    )


def _arguments(params: list[Param], inputs: list[Any]) -> list[Any]:
    args: list[Any] = []
    for p, value in zip(params, inputs, strict=True):
        if p.scalar:
            args.append(float(value))
        elif p.csr:
            args += [value.data, value.indices, value.indptr]
        else:
            args.append(np.ascontiguousarray(value, dtype=np.float64))
    return args


def _literal_values(op: FusedOp, positions: list[int]) -> list[float]:
    nodes = op.cplan.body.nodes
    return [float(nodes[k].attr("value")) for k in positions]


def run_cell(op: FusedOp, values: Mapping[Node, Any]) -> list[Any]:
    cplan = op.cplan
    params = _params(op)
    roots = list(cplan.body.roots)
    aggs = [r.op.value if r.op in AGGREGATE else None for r in roots]
    axis = roots[0].attr("axis") if aggs[0] is not None else None
    scan = (roots[0].inputs[0] if aggs[0] is not None else roots[0]).shape
    sparse = cplan.sparse_safe and params[0].csr
    key = ("cell", cplan.key, _signature(params), sparse)
    fn, kernel = get_kernel(key, lambda: cell_kernel(params, cplan.body, aggs, axis, sparse))
    inputs = [values[i] for i in cplan.inputs]
    m, n = scan
    args = [m, n, *_arguments(params, inputs), *_literal_values(op, kernel.literal_positions)]
    first = not getattr(fn, "signatures", None)
    result = fn(*args)
    if first:
        record_compile(fn)
    _stats.bump("kernels_executed")
    return _cell_outputs(roots, aggs, axis, scan, result, inputs[0], sparse)


def _mean_divisor(axis: Any, scan: tuple[int, int]) -> float:
    m, n = scan
    return {None: m * n, 0: m, 1: n}[axis]


def _cell_outputs(roots, aggs, axis, scan, result, main, sparse) -> list[Any]:
    if aggs[0] is None:
        if sparse:
            return [sp.csr_array((result, main.indices, main.indptr), shape=main.shape)]
        return [result]
    outputs = []
    if axis is None:
        for k, agg in enumerate(aggs):
            value = float(result[k])
            if agg == Op.MEAN.value:
                value = value / _mean_divisor(None, scan) if scan[0] * scan[1] else np.nan
            outputs.append(value)
        return outputs
    out = result.reshape(-1, 1) if axis == 1 else result.reshape(1, -1)
    if aggs[0] == Op.MEAN.value:
        with np.errstate(all="ignore"):
            out = out / _mean_divisor(axis, scan)
    return [out]
