"""CPlan bodies to Python source, through one ``op -> source`` table.

Every body node becomes one assignment to a temporary, a float64 scalar per cell (Cell, MAgg and
Outer bodies; Row bodies add per-row vectors, see ``row.py``). Float literals are not baked in:
each becomes a kernel argument ``c0, c1, ...``, so a plan compiles once per structure. Semantics
are the reference interpreter's: numpy's on float64 (NaN/inf propagate; kernels use
``error_model="numpy"``, and fast-math flags never reach a cell's arithmetic), and a zero of a
sparse operand (its format's ``zeros_annihilate``) annihilates in ``*`` and as the numerator of
``/``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from fusedml.ir.node import Node
from fusedml.ir.ops import ANNIHILATING_OPERANDS, ELEMENTWISE, Op

# elementwise op -> Python source over already-rendered operands {0}, {1}, {2}. Arithmetic goes
# through ``cellops`` (imported as ``f``): compiled without fast-math flags, so a cell's value is
# numpy's whatever flags the kernel's loops have. Selects need no such care.
SCALAR_SOURCE: dict[Op, str] = {
    Op.NEG: "f.neg({0})",
    Op.EXP: "f.exp({0})",
    Op.LOG: "f.log({0})",
    Op.ABS: "f.fabs({0})",
    Op.SQRT: "f.sqrt({0})",
    Op.SIGN: "f.sign({0})",
    Op.ARCTAN: "f.arctan({0})",
    Op.SIGMOID: "f.sigmoid({0})",
    Op.ADD: "f.add({0}, {1})",
    Op.SUB: "f.sub({0}, {1})",
    Op.MUL: "f.mul({0}, {1})",
    Op.DIV: "f.div({0}, {1})",
    Op.POW: "f.power({0}, {1})",
    Op.MINIMUM: "f.minimum({0}, {1})",
    Op.MAXIMUM: "f.maximum({0}, {1})",
    Op.LT: "(1.0 if {0} < {1} else 0.0)",
    Op.LE: "(1.0 if {0} <= {1} else 0.0)",
    Op.GT: "(1.0 if {0} > {1} else 0.0)",
    Op.GE: "(1.0 if {0} >= {1} else 0.0)",
    Op.EQ: "(1.0 if {0} == {1} else 0.0)",
    Op.NE: "(1.0 if {0} != {1} else 0.0)",
    Op.WHERE: "({1} if {0} != 0.0 else {2})",
}


def one_value_exponent(node: Node) -> bool:
    """numpy treats an exponent that is one value for a whole multi-cell power as a scalar (sqrt
    for 0.5, ...; see ``cellops.scalar_power``); a one-cell power of one cell is a plain ``pow``."""
    exponent = node.inputs[1].meta
    return exponent.is_scalar or (exponent.cells == 1 and node.meta.cells > 1)


def annihilates(node: Node) -> bool:
    """Whether a zero of this operand annihilates (in ``*``, ``@`` and as a numerator)."""
    return node.meta.format.zeros_annihilate


def elementwise_source(node: Node, args: list[str]) -> str:
    """Source of one elementwise node over rendered operands, with the annihilation rule."""
    source = SCALAR_SOURCE[node.op]
    if node.op is Op.POW and one_value_exponent(node):
        source = "f.scalar_power({0}, {1})"
    text = source.format(*args)
    if node.op is Op.MUL:
        zeros = [a for a, i in zip(args, node.inputs, strict=True) if annihilates(i)]
    elif node.op is Op.DIV:
        zeros = [args[0]] if annihilates(node.inputs[0]) else []
    else:
        zeros = []
    if zeros:
        guard = " and ".join(f"{z} != 0.0" for z in zeros)
        text = f"({text} if {guard} else 0.0)"
    return text


@dataclass
class Literals:
    """Float literals of a body, in a canonical order: they are passed as kernel arguments."""

    nodes: list[Node] = field(default_factory=list)

    def name(self, node: Node) -> str:
        if node not in self.nodes:
            self.nodes.append(node)
        return f"c{self.nodes.index(node)}"

    def positions(self, body) -> list[int]:  # body: ir.dag.Dag containing the literals
        return [body.index[n] for n in self.nodes]


def render_scalar_body(
    order: list[Node], leaf: dict[Node, str], literals: Literals, indent: str
) -> tuple[list[str], dict[Node, str]]:
    """Assignments computing every node of ``order`` (topological, leaves excluded) per cell.

    ``leaf`` maps placeholders (and other precomputed nodes) to source expressions."""
    names = dict(leaf)
    lines = []
    for node in order:
        if node in names:
            continue
        if node.op is Op.CONST:
            names[node] = literals.name(node)
            continue
        args = [names[i] if i.op is not Op.CONST else literals.name(i) for i in node.inputs]
        var = f"t{len(lines)}"
        lines.append(f"{indent}{var} = {elementwise_source(node, args)}")
        names[node] = var
    return lines, names


def single_read_vectors(nodes: list[Node], excluded: set[Node]) -> set[Node]:
    """Elementwise nodes read by exactly one other node and not by a product (which reads its
    left operand once per column), outside ``excluded``: the ones a Row body may inline."""
    reads = Counter(i for n in nodes for i in n.inputs)
    multiplied = {n.inputs[0] for n in nodes if n.op is Op.MATMUL}
    return {
        n
        for n in nodes
        if n.op in ELEMENTWISE and reads[n] == 1 and n not in excluded and n not in multiplied
    }


def annihilators(node: Node) -> set[Node]:
    """The inputs whose zero at a cell makes ``node`` zero there, by the rule ``elementwise_source``
    renders: a zero of an operand whose format annihilates, in ``*`` and as a numerator."""
    if node.op is Op.DATA:
        return {node} if annihilates(node) else set()
    operands = (node.inputs[k] for k in ANNIHILATING_OPERANDS.get(node.op, ()))
    return set().union(*(annihilators(i) for i in operands if annihilates(i)))
