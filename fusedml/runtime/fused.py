"""Running a fused operator's generated kernel: arguments in, the IR value out.

Everything that depends only on the operator (its kernel, parameters, literal values and how to
shape the kernel's result) is prepared once per operator and kept while the plan lives, so a
repeated call pays only argument conversion and the kernel itself.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Any

import numpy as np
import scipy.sparse as sp

from fusedml import _stats
from fusedml.codegen.cache import get_kernel, kernel_file, record_compile
from fusedml.codegen.row import root_kind, row_kernel, whole_matrices
from fusedml.codegen.skeletons import Param, _outer_factors, cell_kernel, outer_kernel
from fusedml.cplan.plan import FusedOp
from fusedml.formats import Format
from fusedml.fusion.templates import TemplateType, outer_product
from fusedml.ir.node import Node
from fusedml.ir.ops import AGGREGATE, Op

SUPPORTED = frozenset(TemplateType)

_prepared: weakref.WeakKeyDictionary[FusedOp, tuple] = weakref.WeakKeyDictionary()


def run(op: FusedOp, values: Mapping[Node, Any]) -> list[Any]:
    prepared = _prepared.get(op)
    if prepared is None:
        prepared = _prepared[op] = _prepare(op)
    fn, params, literals, scan, finish = prepared
    inputs = [values[i] for i in op.cplan.inputs]
    first = not fn.signatures  # numba compiles (or loads from disk) on the first call
    try:
        result = fn(*scan, *_arguments(params, inputs), *literals)
    except Exception as exc:
        exc.add_note(f"kernel file: {kernel_file(fn)}")
        raise
    if first:
        record_compile(fn)
    _stats.bump("kernels_executed")
    outputs = finish(result, inputs)
    # row kernels write dense rows; a sparse-safe result is stored as CSR, as its meta says
    return [
        sp.csr_array(out) if root.meta.format is Format.CSR and not sp.issparse(out) else out
        for root, out in zip(op.roots, outputs, strict=True)
    ]


def _prepare(op: FusedOp) -> tuple:
    template = op.cplan.template
    if template is TemplateType.OUTER:
        return _prepare_outer(op)
    if template is TemplateType.ROW:
        return _prepare_row(op)
    return _prepare_cell(op)


def _params(op: FusedOp, dense: set[Node] | frozenset = frozenset()) -> list[Param]:
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


def _literals(op: FusedOp, positions: list[int]) -> list[float]:
    nodes = op.cplan.body.nodes
    return [float(nodes[k].attr("value")) for k in positions]


def _mean_divisor(axis: Any, scan: tuple[int, int]) -> float:
    m, n = scan
    return {None: m * n, 0: m, 1: n}[axis]


def _prepare_cell(op: FusedOp) -> tuple:
    cplan = op.cplan
    params = _params(op)
    roots = list(cplan.body.roots)
    aggs = [r.op.value if r.op in AGGREGATE else None for r in roots]
    axis = roots[0].attr("axis") if aggs[0] is not None else None
    scan = (roots[0].inputs[0] if aggs[0] is not None else roots[0]).shape
    sparse = cplan.sparse_safe and params[0].csr
    key = ("cell", cplan.key, _signature(params), sparse)
    fn, kernel = get_kernel(key, lambda: cell_kernel(params, cplan.body, aggs, axis, sparse))

    def finish(result: Any, inputs: list[Any]) -> list[Any]:
        if aggs[0] is None:
            if sparse:
                main = inputs[0]
                return [sp.csr_array((result, main.indices, main.indptr), shape=main.shape)]
            return [result]
        if axis is None:
            outputs = []
            for k, agg in enumerate(aggs):
                value = float(result[k])
                if agg == Op.MEAN.value:
                    cells = scan[0] * scan[1]
                    value = value / cells if cells else np.nan
                outputs.append(value)
            return outputs
        out = result.reshape(-1, 1) if axis == 1 else result.reshape(1, -1)
        if aggs[0] == Op.MEAN.value:
            with np.errstate(all="ignore"):
                out = out / _mean_divisor(axis, scan)
        return [out]

    return fn, params, _literals(op, kernel.literal_positions), scan, finish


def _prepare_outer(op: FusedOp) -> tuple:
    cplan = op.cplan
    factors = {f for n in cplan.body.nodes if outer_product(n) for f in _outer_factors(n)[:2]}
    if not cplan.sparse_safe:  # every cell counts: a CSR driver is read dense
        factors.add(cplan.params[0])
    params = _params(op, factors)
    sparse = params[0].csr
    key = ("outer", cplan.key, _signature(params), sparse)
    fn, kernel = get_kernel(key, lambda: outer_kernel(params, cplan.body, cplan.kind, sparse))

    def finish(result: Any, inputs: list[Any]) -> list[Any]:
        if cplan.kind == "agg":
            return [float(result[0])]
        if cplan.kind == "cellwise" and sparse:
            main = inputs[0]
            return [sp.csr_array((result, main.indices, main.indptr), shape=main.shape)]
        return [result]

    return fn, params, _literals(op, kernel.literal_positions), params[0].node.shape, finish


def _prepare_row(op: FusedOp) -> tuple:
    cplan = op.cplan
    params = _params(op, whole_matrices(cplan.body))
    # row kernels size their scratch vectors from the column counts: part of the key
    widths = tuple(n.shape[1] if not n.meta.is_scalar else -1 for n in cplan.body.nodes)
    key = ("row", cplan.key, _signature(params), widths)
    fn, kernel = get_kernel(key, lambda: row_kernel(params, cplan.body, cplan.kind))
    roots = cplan.body.roots
    kinds = [root_kind(r, cplan.kind) for r in roots]
    m = params[0].node.shape[0]

    def one(root: Node, kind: str, result: Any) -> Any:
        agg = root.op.value if root.op in AGGREGATE else None
        if kind == "full_agg":
            value = float(result[0])
            if agg == Op.MEAN.value:
                cells = root.inputs[0].meta.cells
                value = value / cells if cells else np.nan
            return value
        if kind == "col_agg":
            out = result.reshape(1, -1)
            if agg == Op.MEAN.value:
                with np.errstate(all="ignore"):
                    out = out / m
            return out
        return result

    def finish(result: Any, inputs: list[Any]) -> list[Any]:
        results = result if len(roots) > 1 else (result,)
        return [one(r, k, x) for r, k, x in zip(roots, kinds, results, strict=True)]

    return fn, params, _literals(op, kernel.literal_positions), params[0].node.shape, finish
