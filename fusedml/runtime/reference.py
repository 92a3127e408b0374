"""The reference interpreter: the definition of every op, and the paper's Base baseline.

Values are python floats (scalars), 2-D float64 numpy arrays, or canonical ``scipy.sparse``
``csr_array``s. Each op produces exactly the format its node's meta names, materializes its result
(that is what Base measures) and uses numpy/scipy's fastest routine for it: BLAS for dense
products, scipy's sparse kernels for CSR, vectorized gathers for sparse-safe elementwise ops.

Semantics are numpy's on the dense values, with one rule from scipy.sparse and SystemDS: a zero of a
CSR operand annihilates in multiplication (``X * Y``, ``X @ Y``) and as a numerator (``X / Y``),
even where the other operand holds inf or NaN. Floating-point warnings are silenced.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from fusedml.formats import Format
from fusedml.ir.dag import Dag
from fusedml.ir.node import Node
from fusedml.ir.ops import (
    AGGREGATE,
    ANNIHILATING_OPERANDS,
    BINARY,
    ELEMENTWISE,
    ELEMENTWISE_FN,
    Op,
    apply_elementwise,
)

Value = Any  # float | np.ndarray | sp.csr_array


def _dense(v: Value) -> Value:
    """v as an ndarray; a stored -0.0 stays -0.0 (scipy's ``toarray`` adds stored values into
    zeros, and 0.0 + -0.0 is 0.0)."""
    if not sp.issparse(v):
        return v
    out = v.toarray()
    negative_zero = (v.data == 0) & np.signbit(v.data)
    if negative_zero.any():
        rows, cols = _coords(v)
        out[rows[negative_zero], cols[negative_zero]] = -0.0
    return out


def _csr(data: np.ndarray, like: sp.csr_array) -> sp.csr_array:
    return sp.csr_array((data, like.indices, like.indptr), shape=like.shape)


def _coords(x: sp.csr_array) -> tuple[np.ndarray, np.ndarray]:
    rows = np.repeat(np.arange(x.shape[0]), np.diff(x.indptr))
    return rows, x.indices


def _gather(v: Value, shape: tuple[int, int], rows: np.ndarray, cols: np.ndarray) -> Value:
    """Values of ``v`` broadcast to ``shape``, read at (rows, cols) only."""
    if np.ndim(v) == 0:
        return v
    v = _dense(v)
    return v[rows if v.shape[0] == shape[0] else 0, cols if v.shape[1] == shape[1] else 0]


def _from_keys(keys: np.ndarray, data: np.ndarray, shape: tuple[int, int]) -> sp.csr_array:
    """CSR from sorted linear indices (row * ncols + col)."""
    rows, cols = np.divmod(keys, shape[1]) if shape[1] else (keys, keys)
    indptr = np.concatenate(([0], np.cumsum(np.bincount(rows, minlength=shape[0]))))
    return sp.csr_array((data, cols, indptr), shape=shape)


def _keys(x: sp.csr_array) -> np.ndarray:
    rows, cols = _coords(x)
    return rows.astype(np.int64) * x.shape[1] + cols


def _elementwise_dense_then_csr(node: Node, args: Sequence[Value]) -> sp.csr_array:
    """General path for CSR results with broadcasting: compute densely, zero what annihilates."""
    dense_args = [_dense(a) for a in args]
    out = np.broadcast_to(apply_elementwise(node.op, *dense_args), node.shape).copy()
    for k in ANNIHILATING_OPERANDS.get(node.op, ()):
        if sp.issparse(args[k]):
            out[np.broadcast_to(dense_args[k] == 0, node.shape)] = 0.0
    # a computed -0.0 stays stored (scipy's dense-to-CSR drops it, and its sign: x / -0.0 is
    # -inf, x / 0.0 inf); +0.0 is the implicit zero
    rows, cols = np.nonzero((out != 0) | np.signbit(out))
    return sp.csr_array((out[rows, cols], (rows, cols)), shape=node.shape)


def _annihilating(node: Node, a: Value, b: Value) -> sp.csr_array:
    shape = node.shape
    if a is b and node.op is Op.MUL:  # x * x: same pattern, no intersection needed
        return _csr(apply_elementwise(Op.MUL, a.data, a.data) * (a.data != 0), a)
    if sp.issparse(a) and sp.issparse(b) and a.shape == b.shape == shape and node.op is Op.MUL:
        keys, ia, ib = np.intersect1d(_keys(a), _keys(b), assume_unique=True, return_indices=True)
        va, vb = a.data[ia], b.data[ib]
        out = apply_elementwise(Op.MUL, va, vb)
        out[(va == 0) | (vb == 0)] = 0.0
        return _from_keys(keys, out, shape)
    driver = 0 if sp.issparse(a) and a.shape == shape else 1
    x = (a, b)[driver]
    if not (sp.issparse(x) and x.shape == shape and driver in ANNIHILATING_OPERANDS[node.op]):
        return _elementwise_dense_then_csr(node, (a, b))
    rows, cols = _coords(x)
    other = _gather((b, a)[driver], shape, rows, cols)
    if sp.issparse(other):
        other = _dense(other)
    pair = (x.data, other) if driver == 0 else (other, x.data)
    out = np.asarray(apply_elementwise(node.op, *pair), dtype=np.float64)
    out = np.broadcast_to(out, x.data.shape).copy()
    out[x.data == 0] = 0.0
    if sp.issparse((b, a)[driver]) and 1 - driver in ANNIHILATING_OPERANDS[node.op]:
        out[other == 0] = 0.0  # the other operand is sparse too: its zeros annihilate as well
    return _csr(out, x)


def _union(node: Node, a: sp.csr_array, b: sp.csr_array) -> sp.csr_array:
    ka, kb = _keys(a), _keys(b)
    keys = np.union1d(ka, kb)
    va = np.zeros(len(keys))
    vb = np.zeros(len(keys))
    va[np.searchsorted(keys, ka)] = a.data
    vb[np.searchsorted(keys, kb)] = b.data
    return _from_keys(keys, apply_elementwise(node.op, va, vb), node.shape)


def _elementwise(node: Node, args: Sequence[Value]) -> Value:
    if node.meta.format is Format.DENSE:  # meta guarantees no CSR operand annihilates here
        return ELEMENTWISE_FN[node.op](*(_dense(a) for a in args))  # silenced by the caller
    if node.op in ANNIHILATING_OPERANDS:
        return _annihilating(node, *args)
    if len(args) == 1:
        (x,) = args
        return _csr(apply_elementwise(node.op, x.data), x)
    a, b = args
    if node.op in BINARY and sp.issparse(a) and sp.issparse(b) and a.shape == b.shape:
        return _union(node, a, b)
    if sp.issparse(a) and a.shape == node.shape and np.ndim(b) == 0:
        return _csr(apply_elementwise(node.op, a.data, b), a)
    if sp.issparse(b) and b.shape == node.shape and np.ndim(a) == 0:
        return _csr(apply_elementwise(node.op, a, b.data), b)
    return _elementwise_dense_then_csr(node, args)


# -- aggregates -------------------------------------------------------------------------------
def _safe_div(a: Value, b: Value) -> Value:
    with np.errstate(all="ignore"):
        return np.divide(a, b)


def _csr_rowwise_extreme(x: sp.csr_array, ufunc: np.ufunc) -> np.ndarray:
    counts = np.diff(x.indptr)
    out = np.zeros(x.shape[0])
    nonempty = counts > 0
    if nonempty.any():
        out[nonempty] = ufunc.reduceat(x.data, x.indptr[:-1][nonempty])
    partial = nonempty & (counts < x.shape[1])  # rows with implicit zeros
    out[partial] = ufunc(out[partial], 0.0)
    return out


def _csr_extreme(x: sp.csr_array, axis: int | None, ufunc: np.ufunc) -> Value:
    if axis is None:
        value = ufunc.reduce(x.data) if x.nnz else 0.0
        return float(ufunc(value, 0.0) if 0 < x.nnz < x.shape[0] * x.shape[1] else value)
    if axis == 0:
        return _csr_rowwise_extreme(x.T.tocsr(), ufunc).reshape(1, -1)
    return _csr_rowwise_extreme(x, ufunc).reshape(-1, 1)


def _argmax_rows(x: Value) -> np.ndarray:
    if not sp.issparse(x):
        return np.argmax(x, axis=1).astype(np.float64).reshape(-1, 1)
    # rows are densified in bounded blocks: argmax semantics (first max, NaN wins) stay numpy's
    step = max(1, (1 << 22) // max(x.shape[1], 1))
    parts = [np.argmax(x[i : i + step].toarray(), axis=1) for i in range(0, x.shape[0], step)]
    out = np.concatenate(parts) if parts else np.zeros(0)
    return out.astype(np.float64).reshape(-1, 1)


def _dense_axis_sum(x: Value, axis: int) -> Value:
    """``x.sum(axis, keepdims=True)``; for float64 arrays as a product with a ones vector, which
    BLAS runs 2-10x faster than numpy's reduction over short rows or columns (1,797 x 10: 6
    against 40 us; 1M x 10 along rows: 5 against 24 ms). Multiplying by one is exact, so only
    the order of the sum differs (both start from +0.0: a sum of -0.0 alone is +0.0)."""
    if type(x) is not np.ndarray or x.dtype != np.float64 or x.ndim != 2:
        return x.sum(axis=axis, keepdims=True)
    if axis == 0:
        return (np.ones(x.shape[0]) @ x).reshape(1, -1)
    return (x @ np.ones(x.shape[1])).reshape(-1, 1)


def _aggregate(node: Node, x: Value) -> Value:
    axis = node.attr("axis")
    op = node.op
    if op is Op.ARGMAX:
        return _argmax_rows(x)
    if op in (Op.SUM, Op.MEAN):
        if axis is None:
            total = x.sum()
        elif sp.issparse(x):
            total = np.asarray(x.sum(axis=axis)).reshape(node.shape)
        else:
            total = _dense_axis_sum(x, axis)
        if op is Op.MEAN:  # sum / count: an empty mean is NaN, like numpy, but silently
            count = x.shape[0] * x.shape[1] if axis is None else x.shape[axis]
            total = _safe_div(total, count)
        return float(total) if axis is None else total
    ufunc = np.minimum if op is Op.MIN else np.maximum
    if sp.issparse(x):
        return _csr_extreme(x, axis, ufunc)
    result = ufunc.reduce(x, axis=axis, keepdims=axis is not None)
    return float(result) if axis is None else result


# -- linear algebra and structure --------------------------------------------------------------
def _without_stored_zeros(x: Value) -> Value:
    # scipy multiplies stored zeros (0 * inf = nan); our rule is that every zero of a CSR
    # operand annihilates, stored or not
    if sp.issparse(x) and x.nnz and not x.data.all():
        x = x.copy()
        x.eliminate_zeros()
    return x


def dense_product(a: Value, b: Value) -> Value:
    """A product of two dense values: their own ``@``, which for ndarrays is BLAS. Its fused
    multiply-adds may keep a term whose rounded product would overflow (inf + x * y stays inf
    where a loop that rounds x * y to -inf first gives NaN); both are the product up to the
    contraction of its sums, which the tests accept by swapping this function."""
    return a @ b


def _matmul(node: Node, a: Value, b: Value) -> Value:
    a, b = _without_stored_zeros(a), _without_stored_zeros(b)
    if sp.issparse(a) and sp.issparse(b):
        out = (a @ b).tocsr()
        out.sort_indices()
        return out
    if sp.issparse(b):  # dense @ CSR via the transposed product scipy implements natively
        return np.asarray((b.T @ a.T).T)
    if sp.issparse(a):
        return np.asarray(a @ b)
    return dense_product(a, b)  # no conversion: any dense array type keeps its own product


def _transpose(node: Node, x: Value) -> Value:
    return x.T.tocsr() if sp.issparse(x) else x.T


def _cols(node: Node, x: Value) -> Value:
    return x[:, node.attr("start") : node.attr("stop")]


def _hstack(node: Node, *xs: Value) -> Value:
    if node.meta.format is Format.CSR:
        return sp.hstack(xs, format="csr")
    return np.hstack([_dense(x) for x in xs])


def _onehot(node: Node, x: Value) -> Value:
    out = np.zeros(node.shape)
    hot = np.argmax(x, axis=1) if type(x) is np.ndarray else _argmax_rows(x).ravel()
    if out.size:  # the flat positions of row i's hot cell: one index array, not two
        out.ravel()[np.arange(0, out.size, out.shape[1]) + hot.astype(np.int64)] = 1.0
    return out


_STRUCTURAL: dict[Op, Callable[..., Value]] = {
    Op.ONEHOT: _onehot,
    Op.MATMUL: _matmul,
    Op.TRANSPOSE: _transpose,
    Op.COLS: _cols,
    Op.HSTACK: _hstack,
}


def _hand(node: Node, args: Sequence[Value]) -> Value:
    """A hand operator's value is its definition's, evaluated over its inputs."""
    values: dict[Node, Value] = dict(zip(node.attr("params"), args, strict=True))
    for n in Dag([node.attr("definition")]).nodes:
        if n not in values:
            values[n] = evaluate_node(n, [values[i] for i in n.inputs])
    return values[node.attr("definition")]


# operations a format implements on its own values: (node, args) -> value, or NotImplemented
Native = Callable[[Node, Sequence[Value]], Value]
_NATIVE: dict[Format, Native] = {}


def register_native(fmt: Format, native: Native) -> None:
    """Run nodes with an input of ``fmt`` through ``native`` first (a format's own operations,
    e.g. products on compressed column groups); where it returns NotImplemented, the inputs
    are computed in their canonical format."""
    _NATIVE[fmt] = native


def _native(node: Node, args: Sequence[Value]) -> Value:
    for fmt in dict.fromkeys(i.meta.format for i in node.inputs):
        if fmt not in _NATIVE:
            continue
        value = _NATIVE[fmt](node, args)
        if value is not NotImplemented:
            return value
    return NotImplemented


def plain(args: Sequence[Value]) -> bool:
    """Whether every value is a numpy array or a float: nothing to convert, nothing sparse."""
    for a in args:  # noqa: SIM110 (a loop, not all() over a generator: runs once per node)
        if type(a) is not np.ndarray and type(a) is not float:
            return False
    return True


def _plain_dense(node: Node, args: Sequence[Value]) -> Value:
    """The common ops on ``plain`` values, without the format dispatch below (which cost
    several times numpy's own call on small data); NotImplemented for the rest."""
    run = plain_runner(node)
    return NotImplemented if run is None else run(*args)


def _transposed(x: Value) -> Value:
    return x.T


def _product(a: Value, b: Value) -> Value:
    return dense_product(a, b)  # looked up per call: tests swap ``dense_product``


def plain_runner(node: Node) -> Callable[..., Value] | None:
    """The function computing ``node`` from ``plain`` arguments when it is a dense elementwise
    op, product, transpose or aggregate (None otherwise): chosen once, a plan runs it without
    this module's dispatch."""
    if node.meta.format is not Format.DENSE or node.op is Op.CONST:
        return None
    op = node.op
    if op in ELEMENTWISE_FN:
        return ELEMENTWISE_FN[op]
    if op is Op.MATMUL:
        return _product
    if op is Op.TRANSPOSE:
        return _transposed
    if op in AGGREGATE:
        return functools.partial(_aggregate, node)
    return None


_silent = contextvars.ContextVar("fusedml_fp_warnings_silenced", default=False)


class silenced:
    """Floating-point warnings off for a block that evaluates many nodes (a plan's run):
    ``evaluate_node`` then skips entering its own ``np.errstate``, which cost a few
    microseconds per node, a third of a small unfused node's time. Nested blocks are free. (A
    class, not a generator: entered once per plan run, where a generator cost 2 us more.)"""

    __slots__ = ("_errstate", "_token")

    def __enter__(self) -> None:
        self._token = None
        if not _silent.get():
            self._token = _silent.set(True)
            self._errstate = np.errstate(all="ignore")
            self._errstate.__enter__()

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            self._errstate.__exit__(*exc)
            _silent.reset(self._token)


def evaluate_node(node: Node, args: Sequence[Value]) -> Value:
    """The value of ``node`` given the values of its inputs (leaves are bound by the caller).
    Inputs of a format without operations here are computed in their canonical format, unless
    the format runs the node itself (``register_native``). Floating-point warnings are
    silenced."""
    if node.op is Op.CONST:
        return node.attr("value")
    if _silent.get():
        return _evaluate(node, args)
    with silenced():
        return _evaluate(node, args)


def _evaluate(node: Node, args: Sequence[Value]) -> Value:
    # plain values first: none of them is of a format with native operations or a hand
    # operator's, and most small unfused nodes are of this kind
    if node.meta.format is Format.DENSE and plain(args):
        value = _plain_dense(node, args)
        if value is not NotImplemented:
            return value
    if _NATIVE:
        for i in node.inputs:
            if i.meta.format in _NATIVE:
                value = _native(node, args)
                if value is not NotImplemented:
                    return value
                break
    if node.op is Op.HAND:  # its definition, node by node (each may run natively)
        return _hand(node, args)
    args = [i.meta.format.to_canonical(a) for i, a in zip(node.inputs, args, strict=True)]
    if node.op in ELEMENTWISE:
        return _elementwise(node, args)
    if node.op in AGGREGATE:
        return _aggregate(node, args[0])
    return _STRUCTURAL[node.op](node, *args)
