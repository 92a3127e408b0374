"""The interim tier: a fused operator run without compiling anything, while its kernel is not ready.

The reference interpreter computes a body node by node over whole inputs: every intermediate of a
1M-row operator is materialized, and ``W * (U @ V.T)`` computes the dense product of two factors
to read it at W's stored entries (ALS-CG's step: 13 s against 0.12 s for its kernels). This tier
computes the same numbers (up to the reassociation of sums across row blocks) in two ways that
need no compile:

- an Outer operator over a CSR driver, sparse-safe, is evaluated at the driver's stored entries
  only: each cell-shaped value is a vector over them, ``U @ V.T`` the row-wise dot products of the
  factors' rows they pair (numpy, in slices of ``SLICE`` entries);
- other operators over a dense main input run the reference over row blocks of ``BLOCK_CELLS``
  cells of it, whose intermediates stay in cache, and the blocks' partials are combined by the
  outputs' kinds (as a row-block backend's are): KMeans' step on 1M x 10, 325 -> 94 ms. A block
  is at least ``NODE_CELLS`` cells per node of the body on average: each node costs a few
  microseconds of dispatch per block, and a body of column vectors (GLM's) over small blocks
  spent more on that than on numpy's work.

Everything else (CSR and compressed main inputs, whose operations are sparse already; small
inputs) runs through the reference as it is.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from fusedml import _stats
from fusedml.codegen.outer import outer_factors
from fusedml.codegen.spec import KernelSpec
from fusedml.cplan.kinds import OutputKind
from fusedml.cplan.plan import FusedOp
from fusedml.formats import Format
from fusedml.fusion.templates import TemplateType, outer_product
from fusedml.ir.build import placeholder, rebuild
from fusedml.ir.dag import Dag
from fusedml.ir.node import Meta, Node
from fusedml.ir.ops import ANNIHILATING_OPERANDS, ELEMENTWISE, LEAF, Op, apply_elementwise
from fusedml.runtime import fused
from fusedml.runtime.reference import Value, evaluate_node, silenced

BLOCK_CELLS = 1 << 17  # cells of the main input per row block: 1 MB of float64
NODE_CELLS = 1 << 16  # cells a node of the body computes per row block, at least (on average)
SLICE = 1 << 16  # stored entries per slice of an Outer operator's row-wise dot products


class Unsupported(Exception):
    """The body has a node this tier does not evaluate at stored entries."""


def run(op: FusedOp, inputs: Sequence[Value], spec: KernelSpec, backend) -> list[Value]:
    """The operator's outputs; ``backend`` runs its nodes (``reference``, ``evaluate``)."""
    cplan = op.cplan
    main = inputs[0]
    if cplan.template is TemplateType.OUTER:
        if spec.sparse and Format.of(main) is Format.CSR:
            try:
                outputs = _outer_at_stored(op, inputs)
                _stats.bump("interim_at_stored_entries")
                return outputs
            except Unsupported:
                pass
        return backend.reference(op, inputs)
    rows = _block_rows(op, main.shape)
    if Format.of(main) is not Format.DENSE or main.shape[0] <= 2 * rows:
        return backend.reference(op, inputs)  # CSR operations are scipy's, row by row already

    def one(start: int) -> list[Value]:
        block = slice(start, start + rows)
        part = [v[block] if aligned else v for v, aligned in zip(inputs, spec.aligned, strict=True)]
        body, params = _block_body(op, spec, part[0].shape[0])
        outputs = backend.evaluate(body, dict(zip(params, part, strict=True)))
        roots = zip(op.cplan.body.roots, op.cplan.outputs, outputs, strict=True)
        return [_partial(r, k, o, part[0]) for r, k, o in roots]

    blocks = [one(start) for start in range(0, main.shape[0], rows)]
    _stats.bump("interim_in_row_blocks")
    return fused.results(op, blocks)


def _block_rows(op: FusedOp, shape: tuple[int, int]) -> int:
    """Rows per block: ``BLOCK_CELLS`` cells of the main input, or more where the body's
    row-aligned nodes are narrow (``NODE_CELLS``)."""
    widths = [
        n.shape[1] for n in op.cplan.body.nodes if n.op not in LEAF and n.shape[:1] == shape[:1]
    ]
    narrow = NODE_CELLS * len(widths) // max(sum(widths), 1)
    return max(1, BLOCK_CELLS // max(shape[1], 1), narrow)


_bodies: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _block_body(op: FusedOp, spec: KernelSpec, rows: int) -> tuple[Dag, list[Node]]:
    """The operator's body over ``rows`` rows of its row-aligned inputs (nodes of those shapes:
    the reference's rules read them), and its placeholders in the inputs' order."""
    found = _bodies.setdefault(op, {})
    if rows not in found:
        cplan = op.cplan
        nodes: dict[Node, Node] = {}
        for k, (p, aligned) in enumerate(zip(cplan.params, spec.aligned, strict=True)):
            meta = p.meta
            if aligned:
                nnz = min(rows * meta.cols, round(meta.nnz * rows / max(meta.rows, 1)))
                meta = Meta((rows, meta.cols), nnz, meta.format, meta.dtype)
            nodes[p] = placeholder(k, meta)
        for node in cplan.body.nodes:
            if node not in nodes:
                nodes[node] = rebuild(node, tuple(nodes[i] for i in node.inputs))
        body = Dag([nodes[r] for r in cplan.body.roots])
        found[rows] = (body, [nodes[p] for p in cplan.params])
    return found[rows]


def _partial(root: Node, kind: OutputKind, value: Value, main: Value) -> Value:
    """A block's output in its partial form (``kinds.py``): a mean still a sum."""
    if root.op is not Op.MEAN or kind.per_row:
        return value
    count = main.shape[0] * (root.inputs[0].shape[1] if kind is OutputKind.FULL_AGG else 1)
    with np.errstate(all="ignore"):
        return value * count


# -- Outer operators at a CSR driver's stored entries -------------------------------------------
class _Stored:
    """Cell-shaped values as vectors over the driver's stored entries (rows, cols)."""

    def __init__(self, driver: sp.csr_array) -> None:
        self.driver = driver
        self.shape = driver.shape
        self.rows = np.repeat(np.arange(driver.shape[0]), np.diff(driver.indptr))
        self.cols = driver.indices

    def read(self, node: Node, value: Value) -> Value:
        """A leaf's value at the stored entries (scalars and row or column vectors broadcast)."""
        if node.meta.is_scalar:
            return float(value)
        if value is self.driver:
            return value.data
        rows, cols = node.shape
        if sp.issparse(value) and (rows, cols) == self.shape:  # a second sparse matrix
            same = np.array_equal(value.indptr, self.driver.indptr) and np.array_equal(
                value.indices, self.driver.indices
            )
            return value.data if same else np.asarray(value[self.rows, self.cols]).reshape(-1)
        if sp.issparse(value):
            value = value.toarray()
        return value[
            self.rows if rows == self.shape[0] else 0, self.cols if cols == self.shape[1] else 0
        ]

    def dots(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Row-wise dot products u[i] . v[j] at the stored entries (i, j), in slices."""
        out = np.empty(len(self.rows))
        for lo in range(0, len(out), SLICE):
            hi = lo + SLICE
            out[lo:hi] = np.einsum("ij,ij->i", u[self.rows[lo:hi]], v[self.cols[lo:hi]])
        return out

    def matrix(self, data: np.ndarray) -> sp.csr_array:
        return sp.csr_array((data, self.driver.indices, self.driver.indptr), shape=self.shape)


def _outer_at_stored(op: FusedOp, inputs: Sequence[Value]) -> list[Value]:
    """The cell-shaped part of the body at the driver's stored entries, as a CSR matrix of the
    driver's pattern; what the body computes from it (a sum, products with a factor), by the
    reference's rules."""
    cplan = op.cplan
    (root,) = cplan.body.roots
    (kind,) = cplan.outputs
    if kind is OutputKind.FULL_AGG and root.op is not Op.SUM:
        raise Unsupported("only sums aggregate over the stored entries alone")
    if kind is OutputKind.NO_AGG:
        cells = root
    elif kind is OutputKind.COL_PRODUCT:  # (cells).T @ L
        cells = root.inputs[0].inputs[0]
    else:  # sum(cells), (cells) @ R
        cells = root.inputs[0]
    stored = _Stored(inputs[0])
    values: dict[Node, Value] = dict(zip(cplan.params, inputs, strict=True))
    for node in cplan.body.nodes:
        if node.op is Op.CONST:
            values[node] = float(node.attr("value"))
    with silenced():
        sampled = _sample(cells, values, stored)
        data = np.broadcast_to(sampled, stored.rows.shape).astype(np.float64, copy=True)
        data[stored.driver.data == 0] = 0.0  # sparse-safe: the driver's zeros annihilate
        values[cells] = stored.matrix(data)
        after = {cells}
        for node in cplan.body.nodes:  # the nodes computed from the cells, as the reference does
            if node not in values and any(i in after for i in node.inputs):
                values[node] = evaluate_node(node, [values[i] for i in node.inputs])
                after.add(node)
    return fused.results(op, [[values[root]]])


def _dense(v: Value) -> np.ndarray:
    return v.toarray() if sp.issparse(v) else np.asarray(v)


def _sample(node: Node, values: dict[Node, Value], stored: _Stored) -> Any:
    """``node``'s value at the stored entries (a vector, or a float broadcast to them)."""
    memo: dict[Node, Any] = {}

    def at(n: Node) -> Any:
        found = memo.get(n)
        if found is not None:
            return found
        if n in values:
            found = stored.read(n, values[n])
        elif outer_product(n):
            u, v, transposed = outer_factors(n)
            if u not in values or v not in values:
                raise Unsupported("an outer product of computed factors")
            vv = _dense(values[v]) if transposed else _dense(values[v]).T
            found = stored.dots(_dense(values[u]), vv)
        elif n.op in ELEMENTWISE:
            args = [at(i) for i in n.inputs]
            found = apply_elementwise(n.op, *args)
            for k in ANNIHILATING_OPERANDS.get(n.op, ()):  # a sparse operand's zeros
                if n.inputs[k].meta.format.zeros_annihilate and np.ndim(args[k]):
                    found = np.where(args[k] == 0, 0.0, found)
        else:
            raise Unsupported(n.op)
        memo[n] = found
        return found

    return at(node)
