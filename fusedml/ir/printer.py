"""Human-readable DAG listings: one line per node, inputs first, outputs last."""

from __future__ import annotations

from fusedml.ir.node import Node
from fusedml.ir.ops import Op


def format_node(node: Node) -> str:
    if node.op is Op.DATA:
        body = f"data {node.attr('name')!r}"
    elif node.op is Op.CONST:
        body = f"const {node.attr('value')!r}"
    else:
        args = [f"%{i.id}" for i in node.inputs]
        args += [f"{k}={v!r}" for k, v in node.attrs]
        body = f"{node.op.value}({', '.join(args)})"
    return f"%{node.id} = {body}  [{node.meta.describe()}]"


def format_dag(dag) -> str:
    lines = [format_node(n) for n in dag.nodes]
    lines += [f"out[{k}] = %{root.id}" for k, root in enumerate(dag.roots)]
    return "\n".join(lines)
