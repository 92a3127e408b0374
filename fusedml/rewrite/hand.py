"""Pattern rewrites for ``fusion="hand"``: known subexpressions become hand-written fused operators.

This is the paper's *Fused* baseline (SystemML with codegen off and its hand-coded operators on,
reference/paper.md section 2). Each rule names one operator and one variant; the matched
subexpression is replaced by an ``Op.HAND`` node over the match's inputs whose ``definition`` is the
subexpression rebuilt over placeholder leaves, so the reference interpreter still defines its value.

Matching is greedy from the outputs down (the largest pattern wins: ``W * sigmoid(U @ V.T)`` is one
``wsigmoid``, not ``W *`` a ``sigmoid``), and a match never swallows an intermediate that something
outside it also reads (as SystemML's rewrites require single-consumer intermediates).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fusedml.ir.build import make, placeholder, rebuild
from fusedml.ir.dag import Dag
from fusedml.ir.node import Node
from fusedml.ir.ops import LEAF, Op
from fusedml.rewrite.pattern import P, const_value


@dataclass(frozen=True)
class HandRule:
    name: str  # the SystemML opcode family (tak+*, mmchain, wsloss, ...)
    variant: str
    pattern: P
    inputs: tuple[str, ...]  # pattern names bound to the operator's inputs, in kernel order
    guard: Callable[[dict[str, Node]], bool] = lambda b: True


def _matrix(n: Node) -> bool:
    """A matrix in a format the hand-written kernels read: the built-in (canonical) ones."""
    return not n.meta.is_scalar and n.meta.format is n.meta.format.canonical


def _scalar(n: Node) -> bool:
    return n.meta.is_scalar


def _dense(n: Node) -> bool:
    return _matrix(n) and not n.meta.format.zeros_annihilate


def _column(n: Node) -> bool:
    return _dense(n) and n.meta.cols == 1


X, Y, Z, W = (P(name=k, guard=_matrix) for k in "XYZW")
S = P(name="s", guard=_scalar)
U, V = P(name="U", guard=_dense), P(name="V", guard=_dense)
v, w, y = P(name="v", guard=_column), P(name="w", guard=_column), P(name="y", guard=_column)
UVt = P(Op.MATMUL, U, P(Op.TRANSPOSE, V), name="UVt")  # the low-rank product U @ V.T
ONE = const_value(1.0)
SUM = {None: "full", 0: "col", 1: "row"}


def _square(x: P) -> tuple[P, ...]:
    """``x ** 2`` and ``x * x`` (the same node twice)."""
    return (P(Op.POW, x, const_value(2.0)), P(Op.MUL, x, x))


def _same_shape(*names: str) -> Callable[[dict[str, Node]], bool]:
    return lambda b: len({b[k].shape for k in names}) == 1


def _low_rank(b: dict[str, Node]) -> bool:
    # an outer-product-like U @ V.T: rank below both sides (else it is just a product)
    uv = b["UVt"]
    return b["U"].meta.cols <= min(uv.meta.rows, uv.meta.cols)


TSMM_SPARSE_MAX = 4096  # a sparse tsmm accumulates its (symmetric) result densely


def _tsmm_fits(side: int) -> Callable[[dict[str, Node]], bool]:
    def fits(b: dict[str, Node]) -> bool:
        x = b["X"].meta
        return not x.format.iterates_nonzeros or x.shape[side] <= TSMM_SPARSE_MAX

    return fits


def _and(*guards: Callable[[dict[str, Node]], bool]) -> Callable[[dict[str, Node]], bool]:
    return lambda b: all(g(b) for g in guards)


def _rules() -> tuple[HandRule, ...]:
    rules: list[HandRule] = []
    add = rules.append
    # most specific first: the low-rank operators contain patterns of the others
    # wsloss: sum of squared residuals of the low-rank model, weighted in three ways
    for diff in (P(Op.SUB, X, UVt), P(Op.SUB, UVt, X)):
        for sq in _square(diff):
            low = _and(_low_rank, _same_shape("X", "UVt"))
            nz = P(Op.NE, X, const_value(0.0))
            add(HandRule("wsloss", "post_nz", P(Op.SUM, P(Op.MUL, nz, sq), axis=None),
                         ("X", "U", "V"), low))  # fmt: skip
            add(HandRule("wsloss", "post", P(Op.SUM, P(Op.MUL, W, sq), axis=None),
                         ("W", "X", "U", "V"), _and(low, _same_shape("W", "X"))))  # fmt: skip
            add(HandRule("wsloss", "none", P(Op.SUM, sq, axis=None), ("X", "U", "V"), low))
    w_uv = _and(_low_rank, _same_shape("W", "UVt"))
    for inner, tag in ((UVt, ""), (P(Op.NEG, UVt), "_minus")):  # wsigmoid
        sig = P(Op.SIGMOID, inner)
        add(HandRule("wsigmoid", "basic" + tag, P(Op.MUL, W, sig), ("W", "U", "V"), w_uv))
        add(HandRule("wsigmoid", "log" + tag, P(Op.MUL, W, P(Op.LOG, sig)), ("W", "U", "V"),
                     w_uv))  # fmt: skip
    for op, tag in ((Op.MUL, "mult"), (Op.DIV, "div")):  # wdivmm: right and left products
        wuv = P(op, W, UVt)
        add(HandRule("wdivmm", f"{tag}_right", P(Op.MATMUL, wuv, V), ("W", "U", "V"), w_uv))
        add(HandRule("wdivmm", f"{tag}_left", P(Op.MATMUL, P(Op.TRANSPOSE, wuv), U),
                     ("W", "U", "V"), w_uv))  # fmt: skip
        add(HandRule("wdivmm", f"{tag}_left_t", P(Op.MATMUL, P(Op.TRANSPOSE, U), wuv),
                     ("W", "U", "V"), w_uv))  # fmt: skip
    # the ALS-CG gradients: (W * (U V' - X)) @ V and its left forms
    wuvx = P(Op.MUL, W, P(Op.SUB, UVt, X))
    w_uv_x = _and(w_uv, _same_shape("W", "X"))
    add(HandRule("wdivmm", "mult_minus_right", P(Op.MATMUL, wuvx, V), ("W", "U", "V", "X"),
                 w_uv_x))  # fmt: skip
    add(HandRule("wdivmm", "mult_minus_left", P(Op.MATMUL, P(Op.TRANSPOSE, wuvx), U),
                 ("W", "U", "V", "X"), w_uv_x))  # fmt: skip
    add(HandRule("wdivmm", "mult_minus_left_t", P(Op.MATMUL, P(Op.TRANSPOSE, U), wuvx),
                 ("W", "U", "V", "X"), w_uv_x))  # fmt: skip
    x_uv = _and(_low_rank, _same_shape("X", "UVt"))
    log_eps = P(Op.LOG, P(Op.ADD, UVt, S))
    add(HandRule("wcemm", "eps", P(Op.SUM, P(Op.MUL, X, log_eps), axis=None),
                 ("X", "U", "V", "s"), x_uv))  # fmt: skip
    add(HandRule("wcemm", "basic", P(Op.SUM, P(Op.MUL, X, P(Op.LOG, UVt)), axis=None),
                 ("X", "U", "V"), x_uv))  # fmt: skip
    for fn in (Op.EXP, Op.LOG, Op.ABS, Op.SQRT, Op.SIGN, Op.NEG, Op.SIGMOID):  # wumm
        for op, tag in ((Op.MUL, "mult"), (Op.DIV, "div")):
            add(HandRule("wumm", f"{tag}_{fn.value}", P(op, X, P(fn, UVt)), ("X", "U", "V"),
                         x_uv))  # fmt: skip
    for op, tag in ((Op.MUL, "mult"), (Op.DIV, "div")):
        add(HandRule("wumm", f"{tag}_pow2", P(op, X, P(Op.POW, UVt, const_value(2.0))),
                     ("X", "U", "V"), x_uv))  # fmt: skip

    xyz = _same_shape("X", "Y", "Z")
    for axis, variant in ((None, "full"), (0, "col")):  # tak+* / tack+*
        add(HandRule("tak+*", variant, P(Op.SUM, P(Op.MUL, P(Op.MUL, X, Y), Z), axis=axis),
                     ("X", "Y", "Z"), xyz))  # fmt: skip
    for axis, variant in SUM.items():  # uasqk+ / uarsqk+ / uacsqk+
        for sq in _square(X):
            add(HandRule("uasqk+", variant, P(Op.SUM, sq, axis=axis), ("X",)))
    xt = P(Op.TRANSPOSE, X)
    xv = P(Op.MATMUL, X, v)
    add(HandRule("mmchain", "XtXv", P(Op.MATMUL, xt, xv), ("X", "v")))
    add(HandRule("mmchain", "XtwXv", P(Op.MATMUL, xt, P(Op.MUL, w, xv)), ("X", "v", "w")))
    add(HandRule("mmchain", "XtXv-y", P(Op.MATMUL, xt, P(Op.SUB, xv, y)), ("X", "v", "y")))
    add(HandRule("tsmm", "left", P(Op.MATMUL, xt, X), ("X",), _tsmm_fits(1)))
    add(HandRule("tsmm", "right", P(Op.MATMUL, X, xt), ("X",), _tsmm_fits(0)))

    def not_both_sparse(b: dict[str, Node]) -> bool:
        return not (b["X"].meta.format.zeros_annihilate and b["Y"].meta.format.zeros_annihilate)

    axpy = _and(_same_shape("X", "Y"), not_both_sparse)
    for op, tag in ((Op.ADD, "plus"), (Op.SUB, "minus")):  # +* / -*
        add(HandRule("axpy", tag, P(op, X, P(Op.MUL, S, Y)), ("X", "s", "Y"), axpy))
    add(
        HandRule("1-*", "basic", P(Op.SUB, ONE, P(Op.MUL, X, Y)), ("X", "Y"), _same_shape("X", "Y"))
    )
    add(HandRule("sprop", "basic", P(Op.MUL, X, P(Op.SUB, ONE, X)), ("X",)))
    add(HandRule("sigmoid", "basic", P(Op.SIGMOID, X), ("X",)))
    return tuple(rules)


HAND_RULES: tuple[HandRule, ...] = _rules()


def _covered(root: Node, inputs: tuple[Node, ...]) -> set[Node]:
    """The nodes of a match: everything between ``root`` and ``inputs``."""
    stop, seen, stack = set(inputs), set(), [root]
    while stack:
        n = stack.pop()
        if n in seen or n in stop:
            continue
        seen.add(n)
        stack.extend(n.inputs)
    return seen


def _definition(root: Node, inputs: tuple[Node, ...]) -> tuple[Node, tuple[Node, ...]]:
    params = tuple(placeholder(k, i.meta) for k, i in enumerate(inputs))
    mapped: dict[Node, Node] = dict(zip(inputs, params, strict=True))

    def build(n: Node) -> Node:
        if n not in mapped:
            mapped[n] = rebuild(n, tuple(build(i) for i in n.inputs))
        return mapped[n]

    return build(root), params


def _match(node: Node, consumers: dict[Node, list[Node]], roots: set[Node]):
    for rule in HAND_RULES:
        bound = rule.pattern.match(node)
        if bound is None or not rule.guard(bound):
            continue
        inputs = tuple(bound[k] for k in rule.inputs)
        if any(i.meta.dtype != "float64" for i in inputs):
            continue  # kernels read float64; an int input (argmax) stays unfused
        covered = _covered(node, inputs)
        inner = {n for n in covered if n is not node and n.op not in LEAF}  # literals are free
        if any(n in roots or any(c not in covered for c in consumers[n]) for n in inner):
            continue  # an intermediate is read outside the match: it must stay materialized
        return rule, inputs, covered
    return None


def hand_rewrite(dag: Dag) -> Dag:
    """``dag`` with every hand-operator pattern replaced by an ``Op.HAND`` node."""
    consumers, roots = dag.consumers, set(dag.roots)
    chosen: dict[Node, tuple[HandRule, tuple[Node, ...]]] = {}
    covered: set[Node] = set()
    for node in reversed(dag.nodes):  # consumers before producers: largest patterns first
        if node in covered:
            continue
        found = _match(node, consumers, roots)
        if found is not None:
            rule, inputs, nodes = found
            chosen[node] = (rule, inputs)
            covered |= {n for n in nodes if n is not node and n.op not in LEAF}
    if not chosen:
        return dag
    mapped: dict[Node, Node] = {}
    for node in dag.nodes:
        if node in covered:
            continue
        if node in chosen:
            rule, inputs = chosen[node]
            definition, params = _definition(node, inputs)
            mapped[node] = make(
                Op.HAND,
                tuple(mapped[i] for i in inputs),
                name=rule.name,
                variant=rule.variant,
                definition=definition,
                params=params,
            )
        else:
            mapped[node] = rebuild(node, tuple(mapped[i] for i in node.inputs))
    return Dag(mapped[r] for r in dag.roots)
