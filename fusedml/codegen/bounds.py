"""Setup-time bounds on the magnitude of a cell expression, from its leaves' largest magnitudes.

An Outer kernel over a dense driver W whose body sums ``W * h`` may skip the cells where W is 0
(the product's dot product included) when ``h`` is finite at every cell: ``0 * h`` is then ±0,
which leaves any sum unchanged. ``bound_source`` renders Python (run once per call, in
``setup``) bounding ``|h|`` by interval rules per operation, from ``max |x|`` of each input and
``rank * max|U| * max|V|`` for each product ``U[i] . V[j]``. An operation without a rule gives no
bound; a NaN or an infinity in any input, or a bound of ``SKIP_BELOW`` and up, keep every cell.
"""

from __future__ import annotations

from collections.abc import Callable

from fusedml.ir.node import Node
from fusedml.ir.ops import Op

SKIP_BELOW = 1e300  # far under the largest double: the bound's own rounding cannot reach it

# module-level helpers of a kernel that bounds (plain Python, called by setup)
HELPERS = '''\
def _absmax(a):
    """max |a| (0.0 when empty); inf when a holds a NaN or an infinity."""
    a = np.asarray(a)
    if a.size == 0:
        return 0.0
    top = max(float(a.max()), -float(a.min()))
    return top if top < np.inf else np.inf


def _bmul(a, b):
    return np.inf if not (a < np.inf and b < np.inf) else a * b


def _bmax(a, b):
    return np.inf if not (a < np.inf and b < np.inf) else max(a, b)


def _bpow(a, c):
    """A bound of |x ** c| for |x| <= a: only a whole non-negative exponent has one."""
    if not (a < np.inf) or c != int(c) or c < 0:
        return np.inf
    try:
        return float(a) ** int(c)
    except OverflowError:
        return np.inf


def _bexp(a):
    return np.exp(a) if a < 700.0 else np.inf


def _bfinite(a, b):
    return b if a < np.inf else np.inf'''

# bound of a node from its inputs' bounds; constant bounds still require finite inputs
_RULES: dict[Op, Callable[..., str]] = {
    Op.NEG: lambda a: a,
    Op.ABS: lambda a: a,
    Op.ADD: lambda a, b: f"({a} + {b})",
    Op.SUB: lambda a, b: f"({a} + {b})",
    Op.MUL: lambda a, b: f"_bmul({a}, {b})",
    Op.MINIMUM: lambda a, b: f"_bmax({a}, {b})",
    Op.MAXIMUM: lambda a, b: f"_bmax({a}, {b})",
    Op.EXP: lambda a: f"_bexp({a})",
    Op.SIGN: lambda a: f"_bfinite({a}, 1.0)",
    Op.SIGMOID: lambda a: f"_bfinite({a}, 1.0)",
    Op.ARCTAN: lambda a: f"_bfinite({a}, 1.5707963267948966)",
    **{op: (lambda a, b: "1.0") for op in (Op.LT, Op.LE, Op.GT, Op.GE, Op.EQ, Op.NE)},
}


def bound_source(root: Node, leaves: dict[Node, str], literal: Callable[[Node], str]) -> str | None:
    """Python source bounding ``|root|`` at every cell, or None where some operation has no rule.
    ``leaves``: the bound's source for each node read as a whole (inputs, products);
    ``literal``: a literal's name in the kernel."""
    bound: dict[Node, str | None] = dict(leaves)

    def of(node: Node) -> str | None:
        if node not in bound:
            bound[node] = _rule(node, of, literal)
        return bound[node]

    return of(root)


def _rule(node: Node, of: Callable[[Node], str | None], literal: Callable[[Node], str]):
    if node.op is Op.CONST:
        return f"abs({literal(node)})"
    if node.op is Op.POW and node.inputs[1].op is Op.CONST:
        base = of(node.inputs[0])
        return None if base is None else f"_bpow({base}, {literal(node.inputs[1])})"
    if node.op not in _RULES:
        return None
    inputs = [of(i) for i in node.inputs]
    return None if None in inputs else _RULES[node.op](*inputs)
