"""DAG verifier: every node's stored meta is what the rules derive from its inputs."""

from __future__ import annotations

from fusedml.ir.dag import Dag
from fusedml.ir.meta import infer_meta
from fusedml.ir.ops import LEAF


class VerificationError(AssertionError):
    pass


def verify(dag: Dag) -> None:
    for node in dag.nodes:
        if node.op in LEAF:
            if node.inputs:
                raise VerificationError(f"leaf {node!r} has inputs")
            continue
        expected = infer_meta(node.op, node.inputs, dict(node.attrs))
        if expected != node.meta:
            raise VerificationError(f"{node!r}: stored meta {node.meta} != derived {expected}")
