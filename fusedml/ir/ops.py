"""The operator set: one enum, traits as sets, and the numeric definition of each elementwise op.

Elementwise semantics are numpy's on float64 (``ELEMENTWISE_FN``); the reference interpreter and
constant folding both use this one table, so there is a single definition of every scalar function.
"""

from __future__ import annotations

import enum

import numpy as np
from scipy.special import expit


class Op(enum.Enum):
    # members are singletons compared by identity: hash them so too (in C), not by Enum's
    # hash of the name (a Python call; ops key the dispatch tables of every step that runs)
    __hash__ = object.__hash__

    # leaves
    DATA = "data"  # an input matrix or runtime scalar, bound when the plan runs
    CONST = "const"  # a float literal known when the expression is built
    # elementwise unary
    NEG = "neg"
    EXP = "exp"
    LOG = "log"
    ABS = "abs"
    SQRT = "sqrt"
    SIGN = "sign"
    SIGMOID = "sigmoid"
    ARCTAN = "arctan"
    # elementwise binary (numpy broadcasting)
    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    DIV = "div"
    POW = "pow"
    MINIMUM = "minimum"
    MAXIMUM = "maximum"
    LT = "lt"
    LE = "le"
    GT = "gt"
    GE = "ge"
    EQ = "eq"
    NE = "ne"
    # elementwise ternary
    WHERE = "where"
    # aggregates; attr ``axis``: None (full -> scalar), 0 (per column -> 1xn), 1 (per row -> mx1)
    SUM = "sum"
    MIN = "min"
    MAX = "max"
    MEAN = "mean"
    ARGMAX = "argmax"  # row-wise only: index of the first maximum, -> mx1 (int64 when returned)
    # row-wise: each row's first maximum as a one-hot row (1.0 there, 0.0 elsewhere), -> mxk;
    # NaN counts as the maximum, as in numpy's argmax
    ONEHOT = "onehot"
    # linear algebra and structure
    MATMUL = "matmul"
    TRANSPOSE = "transpose"
    COLS = "cols"  # column range [start, stop) (attrs ``start``, ``stop``)
    HSTACK = "hstack"  # cbind of any number of inputs with equal row counts
    # a hand-written fused operator (``fusion="hand"``): attrs ``name`` and ``variant`` pick the
    # kernel; ``definition`` is the subexpression it replaces, built over the placeholder leaves
    # ``params`` (one per input), so its meta and its reference value are the definition's
    HAND = "hand"

    def __repr__(self) -> str:
        return f"Op.{self.name}"


LEAF = frozenset({Op.DATA, Op.CONST})
UNARY = frozenset({Op.NEG, Op.EXP, Op.LOG, Op.ABS, Op.SQRT, Op.SIGN, Op.SIGMOID, Op.ARCTAN})
COMPARISON = frozenset({Op.LT, Op.LE, Op.GT, Op.GE, Op.EQ, Op.NE})
BINARY = frozenset({Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.POW, Op.MINIMUM, Op.MAXIMUM} | COMPARISON)
TERNARY = frozenset({Op.WHERE})
ELEMENTWISE = UNARY | BINARY | TERNARY
AGGREGATE = frozenset({Op.SUM, Op.MIN, Op.MAX, Op.MEAN, Op.ARGMAX})
STRUCTURE = frozenset({Op.TRANSPOSE, Op.COLS, Op.HSTACK})
ROWWISE = frozenset({Op.ONEHOT})  # each output row from its input row, not cell by cell
COMMUTATIVE = frozenset({Op.ADD, Op.MUL, Op.MINIMUM, Op.MAXIMUM, Op.EQ, Op.NE})

# f(0) == 0: applied to a sparse operand the result keeps its sparsity pattern.
SPARSE_SAFE_UNARY = frozenset({Op.NEG, Op.ABS, Op.SQRT, Op.SIGN, Op.ARCTAN})
# A zero of a sparse (CSR) operand annihilates, whatever the other operand holds (also inf or NaN),
# as in scipy.sparse and SystemDS: for MUL either operand, for DIV the numerator.
ANNIHILATING_OPERANDS: dict[Op, tuple[int, ...]] = {Op.MUL: (0, 1), Op.DIV: (0,)}

# Floating-point operations per output cell (SystemDS ComputeCost weights; used by the cost model).
FLOPS_PER_CELL: dict[Op, float] = {
    Op.NEG: 1, Op.ABS: 1, Op.SIGN: 1, Op.SQRT: 2, Op.EXP: 18, Op.SIGMOID: 21, Op.LOG: 32,
    Op.ARCTAN: 40,
    Op.ADD: 1, Op.SUB: 1, Op.MUL: 1, Op.MINIMUM: 1, Op.MAXIMUM: 1,
    Op.LT: 1, Op.LE: 1, Op.GT: 1, Op.GE: 1, Op.EQ: 1, Op.NE: 1,
    Op.DIV: 22, Op.POW: 16, Op.WHERE: 2,
    Op.TRANSPOSE: 1, Op.COLS: 1, Op.HSTACK: 1, Op.ONEHOT: 2,
}  # fmt: skip
# Per reduced cell.
FLOPS_PER_AGGREGATED_CELL: dict[Op, float] = {
    Op.SUM: 4, Op.MEAN: 4, Op.MIN: 1, Op.MAX: 1, Op.ARGMAX: 1,
}  # fmt: skip


def _cmp(ufunc: np.ufunc):
    return lambda a, b: ufunc(a, b).astype(np.float64)


# The definition of every elementwise op on float64 numpy values (scalars or arrays).
ELEMENTWISE_FN = {
    Op.NEG: np.negative,
    Op.EXP: np.exp,
    Op.LOG: np.log,
    Op.ABS: np.abs,
    Op.SQRT: np.sqrt,
    Op.SIGN: np.sign,
    Op.SIGMOID: expit,  # 1 / (1 + exp(-x)) without overflow warnings
    Op.ARCTAN: np.arctan,
    Op.ADD: np.add,
    Op.SUB: np.subtract,
    Op.MUL: np.multiply,
    Op.DIV: np.divide,
    Op.POW: np.power,
    Op.MINIMUM: np.minimum,
    Op.MAXIMUM: np.maximum,
    Op.LT: _cmp(np.less),
    Op.LE: _cmp(np.less_equal),
    Op.GT: _cmp(np.greater),
    Op.GE: _cmp(np.greater_equal),
    Op.EQ: _cmp(np.equal),
    Op.NE: _cmp(np.not_equal),
    Op.WHERE: lambda c, a, b: np.where(c != 0, a, b),
}


def apply_elementwise(op: Op, *args):
    """Evaluate an elementwise op with numpy semantics, silencing floating-point warnings (fused
    kernels cannot warn, so no mode does)."""
    with np.errstate(all="ignore"):
        return ELEMENTWISE_FN[op](*args)


def zero_preserving(op: Op, other: float | None = None, zero_position: int = 0) -> bool:
    """Whether ``op`` maps a zero at ``zero_position`` to zero.

    For unary ops: f(0) == 0. For binary ops with a known scalar ``other``: f(0, c) == 0 (or
    f(c, 0) == 0 when the zero is the right operand); with ``other=None`` both operands are zero.
    """
    if op in UNARY:
        return op in SPARSE_SAFE_UNARY
    c = 0.0 if other is None else float(other)
    args = (0.0, c) if zero_position == 0 else (c, 0.0)
    value = float(apply_elementwise(op, *args))
    return value == 0.0  # NaN compares unequal: not zero-preserving
