"""CPlans: the fused-operator IR handed to code generation.

A CPlan is one selected operator in canonical form: its template, the kind of each output (see
``kinds.py``), its materialized inputs ordered main input first, and its body, the covered nodes
rebuilt over placeholder leaves named ``a`` (main input), ``b0, b1, ...`` (side matrices) and
``s0, s1, ...`` (runtime scalars). Rebuilding through the hash-consing constructor makes common
subexpressions one node (CSE), and a small rule table cleans the body up (``x**2 -> x*x``,
``x*2 -> x+x``). ``key`` identifies the kernel: equal keys, one compile.
"""

from __future__ import annotations

import functools
from collections.abc import Hashable
from dataclasses import dataclass

from fusedml.cplan.kinds import OutputKind, output_kind
from fusedml.fusion.templates import TemplateType, column_aggregation, outer_product
from fusedml.ir.build import data, make, rebuild
from fusedml.ir.dag import Dag
from fusedml.ir.node import Node
from fusedml.ir.ops import (
    AGGREGATE,
    ANNIHILATING_OPERANDS,
    BINARY,
    UNARY,
    Op,
    zero_preserving,
)
from fusedml.rewrite.driver import rewrite
from fusedml.rewrite.pattern import P, any_node, const_value
from fusedml.rewrite.rules import Rule
from fusedml.select.candidates import Candidate
from fusedml.select.cost import drives_sparse, read_whole, sparse_driver

_X = any_node("x")
CLEANUP: tuple[Rule, ...] = (
    Rule("x ** 2 -> x * x", P(Op.POW, _X, const_value(2.0)), lambda n, x: make(Op.MUL, (x, x))),
    Rule("x * 2 -> x + x", P(Op.MUL, _X, const_value(2.0)), lambda n, x: make(Op.ADD, (x, x))),
)


@dataclass(frozen=True, eq=False)
class CPlan:
    template: TemplateType
    outputs: tuple[OutputKind, ...]  # per output
    aggregations: tuple[str | None, ...]  # per output: "sum", "min", "max", "mean" or None
    inputs: tuple[Node, ...]  # materialized inputs, main input first
    params: tuple[Node, ...]  # the placeholder leaf standing for each input in the body
    body: Dag  # covered nodes over placeholders, one root per output
    sparse_safe: bool  # only the main input's non-zeros contribute

    @property
    def main_input(self) -> Node:
        return self.inputs[0]

    @property
    def kind(self) -> OutputKind:
        """The operator's kind: its output's, or MULTI for several outputs."""
        return self.outputs[0] if len(self.outputs) == 1 else OutputKind.MULTI

    @functools.cached_property
    def key(self) -> Hashable:
        """Kernel identity: template, kind and body structure; no data, no float literal values."""
        ids = {n: k for k, n in enumerate(self.body.nodes)}

        def shape_free(n: Node) -> tuple:
            if n.op is Op.DATA:
                return (n.op, n.attr("name"), n.meta.format, n.meta.is_scalar)
            if n.op is Op.CONST:
                return (n.op,)
            return (n.op, n.attrs, tuple(ids[i] for i in n.inputs))

        roots = tuple(ids[r] for r in self.body.roots)
        return (self.template, self.outputs, tuple(map(shape_free, self.body.nodes)), roots)


def cell_values(root: Node, template: TemplateType) -> Node:
    """The per-cell value an operator aggregates or multiplies out (its skeleton does the rest)."""
    if root.op in AGGREGATE:
        return root.inputs[0]
    if template is TemplateType.OUTER and root.op is Op.MATMUL:
        left = root.inputs[0]
        return left.inputs[0] if left.op is Op.TRANSPOSE else left  # (Y).T @ U, or Y @ V
    return root


def zero_where_zero(node: Node, main: Node, _memo: dict | None = None) -> bool:
    """Whether ``node`` is zero wherever the (sparse) main input is: then only the main input's
    non-zeros need visiting. A sparse result is not enough (``X + Y`` of two sparse inputs is
    sparse, but non-zero where only Y is)."""
    memo = {} if _memo is None else _memo
    if node in memo:
        return memo[node]
    if node is main:
        result = True
    elif node.op in UNARY:
        result = zero_preserving(node.op) and zero_where_zero(node.inputs[0], main, memo)
    elif node.op in ANNIHILATING_OPERANDS:  # a zero of a sparse operand annihilates
        result = any(
            node.inputs[k].meta.format.zeros_annihilate
            and zero_where_zero(node.inputs[k], main, memo)
            for k in ANNIHILATING_OPERANDS[node.op]
        )
    elif node.op in BINARY:
        a, b = node.inputs
        za, zb = zero_where_zero(a, main, memo), zero_where_zero(b, main, memo)
        if za and zb:
            result = zero_preserving(node.op)
        elif za and b.op is Op.CONST:
            result = zero_preserving(node.op, b.attr("value"), zero_position=0)
        elif zb and a.op is Op.CONST:
            result = zero_preserving(node.op, a.attr("value"), zero_position=1)
        else:
            result = False
    else:
        result = False
    memo[node] = result
    return result


def iterated_rows(root: Node) -> int:
    if column_aggregation(root):
        return root.inputs[1].meta.rows  # X.T @ Y runs over the rows of X and Y
    if root.op in AGGREGATE and root.attr("axis") in (None, 0):
        return root.inputs[0].meta.rows
    return root.meta.rows


def _main_input(op: Candidate) -> Node:
    driver = sparse_driver(op)
    if driver is not None:
        return driver
    matrices = [i for i in op.inputs if not i.meta.is_scalar]
    if op.type is TemplateType.OUTER:
        factors = {n.inputs[0] for n in op.nodes if outer_product(n)}
        matrices = [m for m in matrices if m not in factors] or matrices
    if op.type is TemplateType.ROW:  # the widest input over the rows the operator iterates
        rows = iterated_rows(op.roots[0])
        aligned = [i for i in matrices if i.meta.rows == rows]
        whole = read_whole(op)
        candidates = [i for i in aligned if i not in whole] or aligned or matrices
        return max(candidates, key=lambda i: i.meta.cols)
    if op.type in (TemplateType.CELL, TemplateType.MAGG):
        # an input of the shape the cells scan (one always exists, as every elementwise node has
        # an input of its own shape; with zero rows, sizes alone do not tell)
        scans = {(r.inputs[0] if r.op in AGGREGATE else r).shape for r in op.roots}
        matrices = [i for i in matrices if i.shape in scans] or matrices
    # the largest input; ties go to the sparsest
    return min(matrices, key=lambda i: (-i.meta.cells, i.meta.nnz))


def construct(op: Candidate) -> CPlan:
    main = _main_input(op)
    sides = [i for i in op.inputs if i is not main]
    placeholders: dict[Node, Node] = {main: data("a", main.shape, main.meta.format, main.meta.nnz)}
    n_matrix = n_scalar = 0
    for i in sides:
        if i.meta.is_scalar:
            name, n_scalar = f"s{n_scalar}", n_scalar + 1
        else:
            name, n_matrix = f"b{n_matrix}", n_matrix + 1
        placeholders[i] = data(name, i.shape, i.meta.format, i.meta.nnz, i.meta.layout)
    mapped = dict(placeholders)  # literals are not inputs: they map to themselves
    for node in Dag(op.roots).nodes:
        if node in op.nodes:
            mapped[node] = rebuild(node, tuple(mapped.get(i, i) for i in node.inputs))
    body = rewrite(Dag(mapped[r] for r in op.roots), CLEANUP)
    aggregations = tuple(r.op.value if r.op in AGGREGATE else None for r in op.roots)
    outputs = tuple(output_kind(r, op.type) for r in op.roots)
    bodies = [cell_values(r, op.type) for r in body.roots]
    driver = placeholders[main]
    sparse_safe = drives_sparse(main) and all(zero_where_zero(b, driver) for b in bodies)
    inputs = (main, *sides)
    params = tuple(placeholders[i] for i in inputs)
    return CPlan(op.type, outputs, aggregations, inputs, params, body, sparse_safe)
