"""Running a fused operator's generated kernel: arguments in, the IR value out."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import scipy.sparse as sp

from fusedml import _stats
from fusedml.codegen.cache import get_kernel, record_compile
from fusedml.codegen.row import row_kernel, whole_matrices
from fusedml.codegen.skeletons import Param, _outer_factors, cell_kernel, outer_kernel
from fusedml.cplan.plan import FusedOp
from fusedml.formats import Format
from fusedml.fusion.templates import TemplateType, outer_product
from fusedml.ir.node import Node
from fusedml.ir.ops import AGGREGATE, Op

SUPPORTED = frozenset(TemplateType)


def run(op: FusedOp, values: Mapping[Node, Any]) -> list[Any]:
    template = op.cplan.template
    if template is TemplateType.OUTER:
        outputs = run_outer(op, values)
    elif template is TemplateType.ROW:
        outputs = run_row(op, values)
    else:
        outputs = run_cell(op, values)
    # row kernels write dense rows; a sparse-safe result is stored as CSR, as its meta says
    return [
        sp.csr_array(out) if root.meta.format is Format.CSR and not sp.issparse(out) else out
        for root, out in zip(op.roots, outputs, strict=True)
    ]


def run_row(op: FusedOp, values: Mapping[Node, Any]) -> list[Any]:
    cplan = op.cplan
    params = _params(op, whole_matrices(cplan.body))
    # row kernels size their scratch vectors from the column counts: part of the key
    widths = tuple(n.shape[1] if not n.meta.is_scalar else -1 for n in cplan.body.nodes)
    key = ("row", cplan.key, _signature(params), widths)
    fn, kernel = get_kernel(key, lambda: row_kernel(params, cplan.body, cplan.kind))
    inputs = [values[i] for i in cplan.inputs]
    m, n = params[0].node.shape
    args = [m, n, *_arguments(params, inputs), *_literal_values(op, kernel.literal_positions)]
    result = _call(fn, args)
    (root,) = cplan.body.roots
    agg = root.op.value if root.op in AGGREGATE else None
    if cplan.kind == "full_agg":
        value = float(result[0])
        if agg == Op.MEAN.value:
            cells = root.inputs[0].meta.cells
            value = value / cells if cells else np.nan
        return [value]
    if cplan.kind == "col_agg":
        out = result.reshape(1, -1)
        if agg == Op.MEAN.value:
            with np.errstate(all="ignore"):
                out = out / m
        return [out]
    return [result]


def _call(fn: Any, args: list[Any]) -> Any:
    first = not getattr(fn, "signatures", None)
    result = fn(*args)
    if first:
        record_compile(fn)
    _stats.bump("kernels_executed")
    return result


def run_outer(op: FusedOp, values: Mapping[Node, Any]) -> list[Any]:
    cplan = op.cplan
    factors = {f for n in cplan.body.nodes if outer_product(n) for f in _outer_factors(n)[:2]}
    params = _params(op, factors)
    sparse = params[0].csr
    key = ("outer", cplan.key, _signature(params), sparse)
    fn, kernel = get_kernel(key, lambda: outer_kernel(params, cplan.body, cplan.kind, sparse))
    inputs = [values[i] for i in cplan.inputs]
    m, n = params[0].node.shape
    args = [m, n, *_arguments(params, inputs), *_literal_values(op, kernel.literal_positions)]
    result = _call(fn, args)
    if cplan.kind == "agg":
        return [float(result[0])]
    if cplan.kind == "cellwise" and sparse:
        main = inputs[0]
        return [sp.csr_array((result, main.indices, main.indptr), shape=main.shape)]
    return [result]


def _params(op: FusedOp, dense: set[Node] = frozenset()) -> list[Param]:
    return [Param(p, p.attr("name"), p in dense) for p in op.cplan.params]


def _signature(params: list[Param]) -> tuple:
    return tuple(
        (p.node.meta.format, p.dense, p.scalar, p.node.meta.rows == 1, p.node.meta.cols == 1)
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
            dense = value.toarray() if sp.issparse(value) else value
            dense = np.ascontiguousarray(dense, dtype=np.float64)
            args.append(dense.reshape(-1) if p.flat else dense)
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
    result = _call(fn, args)
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
