"""Human-readable DAG listings: one line per node, inputs first, outputs last."""

from __future__ import annotations

from collections.abc import Mapping

from fusedml.ir.node import Node
from fusedml.ir.ops import Op


def format_node(node: Node, index: Mapping[Node, int]) -> str:
    if node.op is Op.DATA:
        body = f"data {node.attr('name')!r}"
    elif node.op is Op.CONST:
        body = f"const {node.attr('value')!r}"
    elif node.op is Op.HAND:
        args = ", ".join(f"%{index[i]}" for i in node.inputs)
        body = f"hand {node.attr('name')}[{node.attr('variant')}]({args})"
    else:
        args = [f"%{index[i]}" for i in node.inputs]
        args += [f"{k}={v!r}" for k, v in node.attrs]
        body = f"{node.op.value}({', '.join(args)})"
    return f"%{index[node]} = {body}  [{node.meta.describe()}]"


def format_dag(dag) -> str:  # dag: ir.dag.Dag
    lines = [format_node(n, dag.index) for n in dag.nodes]
    lines += [f"out[{k}] = %{dag.index[root]}" for k, root in enumerate(dag.roots)]
    return "\n".join(lines)
