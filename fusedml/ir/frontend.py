"""The lazy, numpy-like front end: operators and functions build IR nodes, nothing is computed.

Users see numpy shapes (0-D, 1-D or 2-D). The IR is 2-D: a 1-D vector of length n is an (n, 1)
column, a 0-D value is a scalar node. ``Expr.ndim`` remembers which view the user has, and the
functions here translate numpy's rules (broadcasting a 1-D operand as a row, ``v @ X``, reductions
dropping axes) into IR nodes literally; simplifying them is the rewriter's job, not this module's.
Shape errors are raised here, when the expression is built, naming both operands' shapes.
"""

from __future__ import annotations

import builtins
import itertools
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from fusedml._errors import ShapeError
from fusedml.formats import Collection, Format, layout_of, nnz_of
from fusedml.ir.build import const, data, make
from fusedml.ir.node import Node
from fusedml.ir.ops import Op, apply_elementwise

Bindings = Mapping[Node, Any]
_EMPTY: dict[Node, Any] = {}
_leaf_names = itertools.count()


class Expr:
    """A lazy matrix expression. Build with operators and ``fm`` functions; run with
    ``fm.evaluate``."""

    __slots__ = ("bindings", "ndim", "node")
    __hash__ = None  # == builds an expression, so Expr cannot be a dict key

    def __init__(self, node: Node, ndim: int, bindings: Bindings = _EMPTY) -> None:
        self.node = node
        self.ndim = ndim
        self.bindings = bindings

    # -- numpy-visible attributes ------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return user_shape(self.node, self.ndim)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.node.meta.dtype)

    @property
    def format(self) -> str:
        return self.node.meta.format.value

    @property
    def T(self) -> Expr:
        return transpose(self)

    def __repr__(self) -> str:
        return f"<fm.Expr {self.node.op.value} shape={self.shape} {self.format}>"

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d expression")
        return self.shape[0]

    def __bool__(self) -> bool:
        raise TypeError(
            "the truth value of a lazy fusedml expression is not known until it is evaluated; "
            "use fm.evaluate(...)"
        )

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise TypeError("fusedml expressions are lazy: call fm.evaluate(expr) to get an array")

    def __float__(self) -> float:
        raise TypeError("fusedml expressions are lazy: call fm.evaluate(expr) to get a float")

    # -- operators ---------------------------------------------------------------------------
    def __add__(self, other):
        return add(self, other)

    def __radd__(self, other):
        return add(other, self)

    def __sub__(self, other):
        return subtract(self, other)

    def __rsub__(self, other):
        return subtract(other, self)

    def __mul__(self, other):
        return multiply(self, other)

    def __rmul__(self, other):
        return multiply(other, self)

    def __truediv__(self, other):
        return divide(self, other)

    def __rtruediv__(self, other):
        return divide(other, self)

    def __pow__(self, other):
        return power(self, other)

    def __rpow__(self, other):
        return power(other, self)

    def __matmul__(self, other):
        return matmul(self, other)

    def __rmatmul__(self, other):
        return matmul(other, self)

    def __neg__(self):
        return negative(self)

    def __pos__(self):
        return self

    def __abs__(self):
        return absolute(self)

    def __lt__(self, other):
        return less(self, other)

    def __le__(self, other):
        return less_equal(self, other)

    def __gt__(self, other):
        return greater(self, other)

    def __ge__(self, other):
        return greater_equal(self, other)

    def __eq__(self, other):  # type: ignore[override]
        return equal(self, other)

    def __ne__(self, other):  # type: ignore[override]
        return not_equal(self, other)

    def __getitem__(self, key):
        return take_columns(self, key)

    # numpy ufuncs applied to an Expr stay lazy (np.exp(X), ndarray * X, ndarray @ X)
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        fn = _UFUNCS.get(ufunc)
        if method == "__call__" and not kwargs and fn is not None:
            return fn(*inputs)
        call = ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}"
        if kwargs:
            call += f"(..., {', '.join(sorted(kwargs))}=...)"
        raise TypeError(
            f"np.{call} cannot be applied to a lazy fusedml expression; numpy ufuncs with a "
            f"fusedml counterpart ({', '.join(sorted(u.__name__ for u in _UFUNCS))}) stay lazy "
            "when called without keyword arguments; otherwise use the fm function (fm.sum, "
            "fm.where, ...) or compute the array first with fm.evaluate(expr)"
        )

    # numpy-style reduction methods (np.sum(expr) calls these)
    def sum(self, axis=None, keepdims=False, **kwargs):
        _no_extra_kwargs("sum", kwargs)
        return sum(self, axis=axis, keepdims=keepdims)

    def min(self, axis=None, keepdims=False, **kwargs):
        _no_extra_kwargs("min", kwargs)
        return min(self, axis=axis, keepdims=keepdims)

    def max(self, axis=None, keepdims=False, **kwargs):
        _no_extra_kwargs("max", kwargs)
        return max(self, axis=axis, keepdims=keepdims)

    def mean(self, axis=None, keepdims=False, **kwargs):
        _no_extra_kwargs("mean", kwargs)
        return mean(self, axis=axis, keepdims=keepdims)

    def argmax(self, axis=None, keepdims=False, **kwargs):
        _no_extra_kwargs("argmax", kwargs)
        return argmax(self, axis=axis, keepdims=keepdims)


def _no_extra_kwargs(name: str, kwargs: dict) -> None:
    extra = {k: v for k, v in kwargs.items() if v is not None}  # numpy passes dtype=None, out=None
    if extra:
        raise TypeError(f"fm.{name}: unsupported argument(s) {sorted(extra)}")


def user_shape(node: Node, ndim: int) -> tuple[int, ...]:
    if ndim == 0:
        return ()
    if ndim == 1:
        return (node.meta.rows,)
    return node.shape


# -- leaves ----------------------------------------------------------------------------------
def matrix(value: Any) -> Expr:
    """Wrap numpy data (0-D, 1-D or 2-D), a scipy.sparse matrix (any format; becomes CSR), a
    value of another registered format (``fusedml.formats.Format``) or a Dask array of blocks of
    one format, declared by its ``meta`` (plans over it run on Dask, see
    ``fusedml.dask_backend``).

    Integer, boolean and float32 data are converted to float64.
    """
    if isinstance(value, Expr):
        return value
    name = f"m{next(_leaf_names)}"
    fmt, value = Format.convert(value)
    collection = Collection.of(value)
    ndim = value.ndim if isinstance(value, np.ndarray) or collection else 2
    if ndim == 0:
        node = data(name, (), fmt)
        return Expr(node, 0, {node: float(value)})
    ir_value = value.reshape(-1, 1) if ndim == 1 else value
    blocks = collection.blocks(ir_value) if collection else 0
    nnz = nnz_of(fmt, ir_value)
    node = data(name, ir_value.shape, fmt, nnz, layout_of(fmt, ir_value), blocks)
    return Expr(node, ndim, {node: ir_value})


def placeholder(
    name: str,
    shape: tuple[int, ...],
    fmt: Format,
    nnz: int | None = None,
    layout: tuple = (),
    blocks: int = 0,
) -> Expr:
    """An unbound input of numpy shape ``shape``, for tracing (its value comes at run time)."""
    ir_shape = {0: (), 1: (shape[0], 1) if shape else (), 2: shape}[len(shape)]
    return Expr(data(name, ir_shape, fmt, nnz, layout, blocks), len(shape))


def _is_scalar(x: Any) -> bool:
    return isinstance(x, numbers.Number | np.bool_) or (isinstance(x, np.ndarray) and x.ndim == 0)


def _scalar_value(x: Any, what: str) -> float:
    return float(Format.convert(x, what)[1])


def as_expr(x: Any, what: str = "operand") -> Expr:
    if isinstance(x, Expr):
        return x
    if _is_scalar(x):
        return Expr(const(_scalar_value(x, what)), 0)
    if Format.of(x) is not None:
        return matrix(x)
    raise TypeError(f"{what}: cannot use a {type(x).__name__} as a matrix operand")


def _merge(*exprs: Expr) -> Bindings:
    nonempty = [e.bindings for e in exprs if e.bindings]
    if len(nonempty) <= 1 or all(b is nonempty[0] for b in nonempty):
        return nonempty[0] if nonempty else _EMPTY
    merged: dict[Node, Any] = {}
    for b in nonempty:
        merged.update(b)
    return merged


def _ir_view(e: Expr, ndim: int) -> Node:
    """The IR node of ``e`` as an operand of an ``ndim``-D elementwise result: numpy broadcasts a
    1-D vector against a matrix as a row, so its (n, 1) column is transposed."""
    if e.ndim == 1 and ndim == 2:
        return make(Op.TRANSPOSE, (e.node,))
    return e.node


def _broadcast(name: str, exprs: Sequence[Expr]) -> tuple[int, ...]:
    try:
        return np.broadcast_shapes(*(e.shape for e in exprs))
    except ValueError:
        shapes = " and ".join(str(e.shape) for e in exprs)
        raise ShapeError(
            f"fm.{name}: operands could not be broadcast together: shapes {shapes}"
        ) from None


def _elementwise(op: Op, name: str, *operands: Any) -> Expr | float:
    if all(_is_scalar(x) for x in operands):  # numpy computes scalars eagerly; so do we
        return float(apply_elementwise(op, *(_scalar_value(x, f"fm.{name}") for x in operands)))
    exprs = [as_expr(x, f"fm.{name}") for x in operands]
    shape = _broadcast(name, exprs)
    ndim = len(shape)
    node = make(op, tuple(_ir_view(e, ndim) for e in exprs))
    return Expr(node, ndim, _merge(*exprs))


def _unary(op: Op, name: str):
    def fn(x):
        return _elementwise(op, name, x)

    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name} (numpy semantics, float64), lazy."
    return fn


def _binary(op: Op, name: str):
    def fn(a, b):
        return _elementwise(op, name, a, b)

    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name} with numpy broadcasting, lazy."
    return fn


negative = _unary(Op.NEG, "negative")
exp = _unary(Op.EXP, "exp")
log = _unary(Op.LOG, "log")
absolute = _unary(Op.ABS, "abs")
abs = absolute
sqrt = _unary(Op.SQRT, "sqrt")
sign = _unary(Op.SIGN, "sign")
sigmoid = _unary(Op.SIGMOID, "sigmoid")
arctan = _unary(Op.ARCTAN, "arctan")
add = _binary(Op.ADD, "add")
subtract = _binary(Op.SUB, "subtract")
multiply = _binary(Op.MUL, "multiply")
divide = _binary(Op.DIV, "divide")
power = _binary(Op.POW, "power")
minimum = _binary(Op.MINIMUM, "minimum")
maximum = _binary(Op.MAXIMUM, "maximum")
less = _binary(Op.LT, "less")
less_equal = _binary(Op.LE, "less_equal")
greater = _binary(Op.GT, "greater")
greater_equal = _binary(Op.GE, "greater_equal")
equal = _binary(Op.EQ, "equal")
not_equal = _binary(Op.NE, "not_equal")


def where(cond, a, b):
    """``a`` where ``cond`` is non-zero, else ``b`` (numpy broadcasting), lazy."""
    return _elementwise(Op.WHERE, "where", cond, a, b)


# -- linear algebra and structure --------------------------------------------------------------
def transpose(x) -> Expr:
    e = as_expr(x, "fm.transpose")
    if e.ndim < 2:
        return e  # numpy: .T of a 0-D or 1-D array is itself
    return Expr(make(Op.TRANSPOSE, (e.node,)), 2, e.bindings)


def matmul(a, b) -> Expr:
    ea, eb = as_expr(a, "fm.matmul"), as_expr(b, "fm.matmul")
    if ea.ndim == 0 or eb.ndim == 0:
        k = 0 if ea.ndim == 0 else 1
        raise ShapeError(
            f"fm.matmul: operand {k} is a scalar (shapes {ea.shape} and {eb.shape}); "
            "use * for scaling"
        )
    k_a, k_b = ea.shape[-1], eb.shape[0]
    if k_a != k_b:
        raise ShapeError(
            f"fm.matmul: shapes {ea.shape} and {eb.shape} are not aligned ({k_a} != {k_b})"
        )
    bindings = _merge(ea, eb)
    if ea.ndim == 2:  # (m,k)@(k,n) -> (m,n); (m,k)@(k,) -> (m,)
        return Expr(make(Op.MATMUL, (ea.node, eb.node)), eb.ndim, bindings)
    row = make(Op.TRANSPOSE, (ea.node,))  # a 1-D left operand acts as a row vector
    product = make(Op.MATMUL, (row, eb.node))
    if eb.ndim == 2:  # (k,)@(k,n) -> (n,)
        return Expr(make(Op.TRANSPOSE, (product,)), 1, bindings)
    return Expr(make(Op.SUM, (product,), axis=None), 0, bindings)  # (k,)@(k,) -> scalar


def take_columns(x, key) -> Expr:
    """``X[:, j0:j1]`` (a column range) or ``X[:, j]`` (one column, 1-D) of a 2-D expression."""
    e = as_expr(x, "indexing")
    if e.ndim != 2 or not (isinstance(key, tuple) and len(key) == 2 and key[0] == slice(None)):
        raise IndexError(
            f"fusedml supports column selection X[:, j0:j1] and X[:, j] on 2-D expressions only; "
            f"got key {key!r} on shape {e.shape}"
        )
    cols = e.shape[1]
    col = key[1]
    if isinstance(col, slice):
        start, stop, step = col.indices(cols)
        if step != 1:
            raise IndexError(f"column ranges must have step 1, got {col!r}")
        node = make(Op.COLS, (e.node,), start=start, stop=builtins.max(start, stop))
        return Expr(node, 2, e.bindings)
    if isinstance(col, numbers.Integral) and not isinstance(col, bool):
        j = int(col)
        if not -cols <= j < cols:
            raise IndexError(f"column index {j} is out of bounds for shape {e.shape}")
        j %= cols
        return Expr(make(Op.COLS, (e.node,), start=j, stop=j + 1), 1, e.bindings)
    raise IndexError(f"unsupported column key {col!r}: use an int or a slice")


def hstack(items: Sequence[Any]) -> Expr:
    """numpy.hstack: concatenates 2-D inputs along columns, 1-D inputs end to end."""
    if isinstance(items, Expr) or not isinstance(items, Sequence) or len(items) == 0:
        raise TypeError("fm.hstack takes a non-empty list or tuple of operands")
    exprs = [as_expr(x, "fm.hstack") for x in items]
    ndims = {e.ndim for e in exprs}
    if ndims == {2}:
        rows = {e.shape[0] for e in exprs}
        if len(rows) != 1:
            shapes = ", ".join(str(e.shape) for e in exprs)
            raise ShapeError(f"fm.hstack: all inputs need the same number of rows, got {shapes}")
        return Expr(make(Op.HSTACK, tuple(e.node for e in exprs)), 2, _merge(*exprs))
    if ndims == {1}:  # concatenate columns as rows, then back to a column
        rows = tuple(make(Op.TRANSPOSE, (e.node,)) for e in exprs)
        stacked = make(Op.TRANSPOSE, (make(Op.HSTACK, rows),))
        return Expr(stacked, 1, _merge(*exprs))
    shapes = ", ".join(str(e.shape) for e in exprs)
    raise ShapeError(f"fm.hstack: inputs must be all 1-D or all 2-D, got shapes {shapes}")


# -- reductions --------------------------------------------------------------------------------
def _normalize_axis(name: str, axis: Any, ndim: int) -> int | None:
    if axis is None:
        return None
    if isinstance(axis, tuple):
        if sorted(a % ndim if ndim else a for a in axis) == list(range(ndim)):
            return None
        raise np.exceptions.AxisError(f"fm.{name}: unsupported axis {axis!r} for {ndim}-D input")
    if not isinstance(axis, numbers.Integral) or not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(f"fm.{name}: axis {axis!r} is out of bounds for {ndim}-D")
    return int(axis) % ndim


def _reduce(op: Op, name: str, x, axis, keepdims: bool) -> Expr | float:
    if _is_scalar(x):
        _normalize_axis(name, axis, 0)
        return _scalar_value(x, f"fm.{name}")
    e = as_expr(x, f"fm.{name}")
    ax = _normalize_axis(name, axis, e.ndim)
    if e.ndim == 0:
        return e
    if e.ndim == 1:  # the (n, 1) column: axis 0 is the IR's column-wise reduction
        if keepdims:
            return Expr(make(op, (e.node,), axis=0), 1, e.bindings)
        return Expr(make(op, (e.node,), axis=None), 0, e.bindings)
    if ax is None:
        if keepdims:
            inner = make(op, (e.node,), axis=0)
            return Expr(make(op, (inner,), axis=1), 2, e.bindings)
        return Expr(make(op, (e.node,), axis=None), 0, e.bindings)
    node = make(op, (e.node,), axis=ax)
    if keepdims:
        return Expr(node, 2, e.bindings)
    if ax == 0:  # (1, n) row -> the IR's (n, 1) column of a 1-D result
        node = make(Op.TRANSPOSE, (node,))
    return Expr(node, 1, e.bindings)


def sum(x, axis=None, keepdims=False):
    """Sum over all cells (axis=None), columns (axis=0) or rows (axis=1), lazy."""
    return _reduce(Op.SUM, "sum", x, axis, keepdims)


def min(x, axis=None, keepdims=False):
    return _reduce(Op.MIN, "min", x, axis, keepdims)


def max(x, axis=None, keepdims=False):
    return _reduce(Op.MAX, "max", x, axis, keepdims)


def mean(x, axis=None, keepdims=False):
    return _reduce(Op.MEAN, "mean", x, axis, keepdims)


def argmax(x, axis=1, keepdims=False) -> Expr:
    """Index of the first maximum along ``axis`` (0 or 1) of a 2-D expression (int64 result)."""
    e = as_expr(x, "fm.argmax")
    if e.ndim != 2 or axis is None:
        raise ValueError(
            f"fm.argmax supports 2-D inputs with axis=0 or axis=1, got shape {e.shape}, axis={axis}"
        )
    ax = _normalize_axis("argmax", axis, 2)
    source = e.node if ax == 1 else make(Op.TRANSPOSE, (e.node,))
    node = make(Op.ARGMAX, (source,), axis=1)
    if keepdims:
        return Expr(node if ax == 1 else make(Op.TRANSPOSE, (node,)), 2, e.bindings)
    return Expr(node, 1, e.bindings)


def one_hot(labels, num_classes=None) -> Expr:
    """``np.eye(k)[labels]`` for the 1-D labels of ``fm.argmax(S, axis)``: each row of S (axis=1;
    columns for axis=0) as a one-hot row of 1.0 at its first maximum (NaN counting as the
    maximum) and 0.0 elsewhere; k is the length of the reduced axis. Other labels are not
    accepted: these are in range by construction, so a fused kernel never indexes outside its
    output."""
    e = as_expr(labels, "fm.one_hot")
    if e.node.op is not Op.ARGMAX or e.ndim != 1:
        raise ValueError("fm.one_hot takes the 1-D labels of fm.argmax(S, axis)")
    source = e.node.inputs[0]
    k = source.shape[1]
    if num_classes is not None and num_classes != k:
        raise ValueError(f"num_classes={num_classes}: the labels of argmax over {k} columns")
    return Expr(make(Op.ONEHOT, (source,)), 2, e.bindings)


_UFUNCS = {
    np.add: add, np.subtract: subtract, np.multiply: multiply, np.divide: divide,
    np.power: power, np.negative: negative, np.exp: exp, np.log: log, np.absolute: absolute,
    np.sqrt: sqrt, np.sign: sign, np.minimum: minimum, np.maximum: maximum, np.less: less,
    np.less_equal: less_equal, np.greater: greater, np.greater_equal: greater_equal,
    np.equal: equal, np.not_equal: not_equal, np.matmul: matmul, np.arctan: arctan,
}  # fmt: skip
