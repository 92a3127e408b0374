"""Hypothesis strategies for random, well-shaped expression trees (see ``oracle.py``) and their
leaf data: dense and CSR leaves of random shapes and densities, including 1xN, Nx1 and zero-row
matrices, all-zero data, NaN/inf/-0.0 values, and extremes: 1e+-300 (overflow and underflow in one
cell's arithmetic), negatives that log, sqrt and fractional powers turn into NaN, and arguments
that overflow exp."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from hypothesis import strategies as st

import fusedml as fm
from tests import oracle
from tests.oracle import AGG, BINARY, UNARY

DIMS = st.sampled_from([0, 1, 1, 2, 3, 3, 4, 5])
SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0]
EXTREMES = [1e300, -1e300, 1e-300, -1e-300, 1e200, 800.0, -800.0, -2.0, -0.5, 2.5, -0.0]
LEAF_KINDS = ("normal", "normal", "ints", "zeros", "special", "extreme")
CONSTS = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 3.0, -2.5, 2.5, 1e200, 1e-300, np.inf, np.nan]


@st.composite
def leaf_data(draw, shape, allow_sparse, kinds=LEAF_KINDS):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if shape == ():
        return np.array(draw(st.sampled_from([*CONSTS, float(rng.normal())])))
    kind = draw(st.sampled_from(kinds))
    if kind == "normal":
        values = rng.normal(size=shape) * draw(st.sampled_from([1.0, 1e-3, 1e3]))
    elif kind == "ints":
        values = rng.integers(-2, 3, size=shape).astype(np.float64)
    elif kind == "zeros":
        values = np.zeros(shape)
    else:
        values = rng.normal(size=shape)
        mask = rng.random(shape) < (0.3 if kind == "special" else 0.7)
        pool = SPECIALS if kind == "special" else EXTREMES + SPECIALS
        values[mask] = rng.choice(pool, size=int(mask.sum()))
    if len(shape) == 2 and allow_sparse and draw(st.booleans()):
        density = draw(st.sampled_from([0.0, 0.2, 0.5, 1.0]))
        values[rng.random(shape) >= density] = 0.0
        csr = sp.csr_array(values)
        if draw(st.booleans()):  # explicit stored zeros must behave like structural ones
            csr.data[rng.random(csr.nnz) < 0.3] = 0.0
        return csr
    return values


class Builder:
    """Draws a tree and its leaves; leaves of equal shape are sometimes shared (CSE)."""

    def __init__(self, draw, allow_sparse: bool, kinds=LEAF_KINDS):
        self.draw = draw
        self.allow_sparse = allow_sparse
        self.kinds = kinds
        self.leaves: list = []

    def leaf(self, shape):
        same = [k for k, v in enumerate(self.leaves) if np.shape(v) == shape]
        if same and self.draw(st.integers(0, 3)) == 0:
            return ("leaf", self.draw(st.sampled_from(same)))
        if shape == () and self.draw(st.booleans()):
            return ("const", self.draw(st.sampled_from(CONSTS)))
        self.leaves.append(self.draw(leaf_data(shape, self.allow_sparse, self.kinds)))
        return ("leaf", len(self.leaves) - 1)

    def tree(self, shape, depth):
        d = self.draw
        if depth == 0:
            return self.leaf(shape)
        options = ["leaf", "un", "bin", "bin", "bin", "where", "matmul", "agg", "fold"]
        if shape:
            options += ["T", "hstack", "cols", "argmax"]
        if len(shape) == 2 and shape[1]:
            options.append("onehot")
        kind = d(st.sampled_from(options))
        sub = depth - 1
        if kind == "leaf":
            return self.leaf(shape)
        if kind == "un":
            return ("un", d(st.sampled_from(sorted(UNARY))), self.tree(shape, sub))
        if kind == "fold":
            return d(st.sampled_from(FOLDS))(self.tree(shape, sub))
        if kind in ("bin", "where"):
            n_ops = 2 if kind == "bin" else 3
            shapes = [shape] + [
                d(st.sampled_from(_broadcastable_to(shape))) for _ in range(1, n_ops)
            ]
            shapes = d(st.permutations(shapes))
            args = [self.tree(s, sub) for s in shapes]
            if kind == "bin":
                return ("bin", d(st.sampled_from(sorted(BINARY))), *args)
            return ("where", *args)
        if kind == "matmul":
            k = d(DIMS)
            if shape == ():
                return ("matmul", self.tree((k,), sub), self.tree((k,), sub))
            if len(shape) == 1:
                if d(st.booleans()):
                    return ("matmul", self.tree((shape[0], k), sub), self.tree((k,), sub))
                return ("matmul", self.tree((k,), sub), self.tree((k, shape[0]), sub))
            return ("matmul", self.tree((shape[0], k), sub), self.tree((k, shape[1]), sub))
        if kind == "T":
            return ("T", self.tree(shape[::-1], sub))
        if kind == "hstack":
            n = shape[-1]
            cut = d(st.integers(0, n))
            parts = [(*shape[:-1], cut), (*shape[:-1], n - cut)]
            return ("hstack", [self.tree(p, sub) for p in parts])
        if kind == "cols":
            if len(shape) == 1:
                extra = d(st.integers(1, 3))
                j = d(st.integers(-extra, extra - 1))
                return ("cols", j, self.tree((shape[0], extra), sub))
            extra = d(st.integers(0, 2))
            start = d(st.integers(0, extra))
            key = slice(start, start + shape[1])
            return ("cols", key, self.tree((shape[0], shape[1] + extra), sub))
        if kind == "onehot":
            return ("onehot", self.tree(shape, sub))
        if kind == "argmax":
            if len(shape) == 1:
                axis, keepdims, k = d(st.sampled_from([0, 1])), False, d(DIMS.filter(bool))
                src = (shape[0], k) if axis == 1 else (k, shape[0])
                return ("argmax", axis, keepdims, self.tree(src, sub))
            if shape[1] == 1:
                return ("argmax", 1, True, self.tree((shape[0], d(DIMS.filter(bool))), sub))
            if shape[0] == 1:
                return ("argmax", 0, True, self.tree((d(DIMS.filter(bool)), shape[1]), sub))
            return self.leaf(shape)
        return self._aggregate(shape, sub)

    def _aggregate(self, shape, sub):
        d = self.draw
        name = d(st.sampled_from(sorted(AGG)))
        if shape == ():
            src = d(st.sampled_from([(d(DIMS), d(DIMS)), (d(DIMS),)]))
            axis, keepdims = None, False
        elif len(shape) == 1:
            axis, keepdims = d(st.sampled_from([0, 1])), False
            src = (shape[0], d(DIMS)) if axis == 1 else (d(DIMS), shape[0])
        elif shape == (1, 1) and d(st.booleans()):
            src, axis, keepdims = (d(DIMS), d(DIMS)), None, True
        elif shape[1] == 1:
            src, axis, keepdims = (shape[0], d(DIMS)), 1, True
        elif shape[0] == 1:
            src, axis, keepdims = (d(DIMS), shape[1]), 0, True
        else:
            return self.leaf(shape)
        reduced = int(np.prod(src)) if axis is None else src[axis]
        if name in ("min", "max") and reduced == 0:
            name = "sum"  # numpy raises for an empty min/max; tests of that error live elsewhere
        return ("agg", name, axis, keepdims, self.tree(src, sub))


def _const(c):
    return ("const", c)


# Identities that hold for reals but not at NaN, inf, overflow or negatives, which a compiler
# allowed to reassociate (fast-math) folds: a kernel must compute each one as written.
FOLDS = [
    lambda x: ("un", "exp", ("un", "log", x)),  # exp(log(x)) -> x
    lambda x: ("un", "log", ("un", "exp", x)),  # log(exp(x)) -> x
    lambda x: ("bin", "multiply", ("un", "exp", x), ("un", "exp", ("un", "negative", x))),
    lambda x: (
        "bin",
        "multiply",
        ("bin", "power", x, _const(2.5)),
        ("bin", "power", x, _const(0.5)),
    ),
    lambda x: ("bin", "multiply", ("bin", "multiply", x, _const(1e200)), _const(1e200)),
    lambda x: ("bin", "divide", ("bin", "multiply", x, _const(1e200)), _const(1e200)),
    lambda x: ("bin", "add", ("bin", "add", x, _const(1e200)), _const(-1e200)),
    lambda x: ("bin", "multiply", ("un", "sqrt", x), ("un", "sqrt", x)),
    lambda x: ("bin", "subtract", ("bin", "multiply", x, x), ("bin", "multiply", x, x)),
    lambda x: ("bin", "add", x, _const(0.0)),  # -0.0 + 0.0 is 0.0
    lambda x: ("bin", "power", ("un", "negative", x), _const(0.5)),  # numpy: sqrt, NaN at -inf
]


def _broadcastable_to(shape):
    if shape == ():
        return [()]
    if len(shape) == 1:
        return [shape, (1,), ()]
    m, n = shape
    return [shape, (1, n), (m, 1), (n,), (1, 1), ()]


@st.composite
def expressions(draw, max_depth=6, allow_sparse=True):
    builder = Builder(draw, allow_sparse)
    shape = draw(st.sampled_from([(), (DIMS,), (DIMS, DIMS)]))
    shape = tuple(draw(s) for s in shape)
    depth = draw(st.integers(1, max_depth))
    return builder.tree(shape, depth), builder.leaves


@st.composite
def special_value_expressions(draw):
    """A fast-math-sensitive identity (``FOLDS``) over special and extreme data, as the cell
    values of a Cell (elementwise), an aggregate or a Row (``... @ v``) operator."""
    builder = Builder(draw, allow_sparse=True, kinds=("special", "extreme", "extreme"))
    shape = (draw(DIMS.filter(bool)), draw(DIMS.filter(bool)))
    cells = draw(st.sampled_from(FOLDS))(builder.tree(shape, draw(st.integers(0, 2))))
    root = draw(st.sampled_from(["cells", "sum", "row_sum", "product"]))
    if root == "sum":
        return ("agg", "sum", None, False, cells), builder.leaves
    if root == "row_sum":
        return ("agg", "sum", 1, True, cells), builder.leaves
    if root == "product":
        return ("matmul", cells, builder.leaf((shape[1],))), builder.leaves
    return cells, builder.leaves


def fm_leaves(leaves, sparse=None, dense=None):
    """The drawn leaf data as fusedml inputs; 0-D leaves become runtime scalars (fm.matrix of a
    0-D array), not literals; ``sparse`` converts CSR leaves (into another sparse format),
    ``dense`` 2-D dense leaves (into another format with dense semantics)."""
    out = []
    for v in leaves:
        if np.ndim(v) == 0:
            v = np.asarray(v)
        elif sparse is not None and sp.issparse(v):
            v = sparse(v)
        elif dense is not None and not sp.issparse(v) and np.ndim(v) == 2:
            v = dense(v)
        out.append(fm.matrix(v))
    return out


def check(tree, leaves, fusion="none", sparse=None, dense=None):
    """``tree`` through ``fm.evaluate`` in a fusion mode against the numpy oracle: the same
    shapes, dtypes and result format, NaN and +-inf at the same positions, finite values up to
    reassociated sums. ``sparse`` gives CSR leaves to fusedml in another sparse format, ``dense``
    2-D dense leaves in another dense-semantics format."""
    expected = oracle.evaluate(tree, leaves)
    got = fm.evaluate(build(tree, fm_leaves(leaves, sparse, dense)), fusion=fusion)
    if hasattr(got, "dask"):  # a distributed (Dask) result: fetched to compare
        got = got.compute()
    want = expected.value
    if np.ndim(want) == 0:
        assert isinstance(got, float), type(got)
    elif np.ndim(want) == 2 and expected.csr:
        assert sp.issparse(got) and got.format == "csr", f"expected CSR, got {type(got)}"
        got = got.toarray()
    else:
        if isinstance(got, fm.CompressedMatrix) and dense is not None:
            got = got.decompress()  # a dense-semantics result of compressed leaves stays so
        assert isinstance(got, np.ndarray), f"expected ndarray, got {type(got)}"
        assert got.dtype == (np.int64 if expected.index else np.float64), got.dtype
    assert np.shape(got) == np.shape(want)
    atol = max(1e-12, 1e-13 * oracle.magnitude(tree, leaves))
    if not np.allclose(got, want, rtol=1e-9, atol=atol, equal_nan=True):
        with oracle.products_rounded():
            rounded = oracle.evaluate(tree, leaves).value
        assert_close_to_any(got, [want, rounded], rtol=1e-9, atol=atol)


def assert_close_to_any(got, wants, rtol: float, atol: float) -> None:
    """Each cell of ``got`` is close to the same cell of one of ``wants`` (NaN equal to NaN,
    infinities equal to themselves): one oracle value per way of contracting products' sums."""
    ok = np.zeros(np.shape(got), dtype=bool)
    for want in wants:
        ok |= np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    if not np.all(ok):
        np.testing.assert_allclose(got, wants[0], rtol=rtol, atol=atol, equal_nan=True)


def build(tree, inputs):
    """The same tree through fusedml's public API (operators and fm functions mixed)."""
    kind = tree[0]
    if kind == "leaf":
        return inputs[tree[1]]
    if kind == "const":
        return float(tree[1])
    if kind == "un":
        return getattr(fm, tree[1])(build(tree[2], inputs))
    if kind == "bin":
        a, b = build(tree[2], inputs), build(tree[3], inputs)
        operator = {"add": "__add__", "subtract": "__sub__", "multiply": "__mul__"}.get(tree[1])
        if operator and isinstance(a, fm.Expr):
            return getattr(a, operator)(b)
        return getattr(fm, tree[1])(a, b)
    if kind == "where":
        return fm.where(*(build(t, inputs) for t in tree[1:]))
    if kind == "matmul":
        return build(tree[1], inputs) @ build(tree[2], inputs)
    if kind == "T":
        return build(tree[1], inputs).T
    if kind == "agg":
        _, name, axis, keepdims, sub = tree
        return getattr(fm, name)(build(sub, inputs), axis=axis, keepdims=keepdims)
    if kind == "argmax":
        _, axis, keepdims, sub = tree
        return fm.argmax(build(sub, inputs), axis=axis, keepdims=keepdims)
    if kind == "onehot":
        return fm.one_hot(fm.argmax(build(tree[1], inputs), axis=1))
    if kind == "cols":
        return build(tree[2], inputs)[:, tree[1]]
    if kind == "hstack":
        return fm.hstack([build(t, inputs) for t in tree[1]])
    raise ValueError(kind)


def check_in_modes(tree, leaves, modes, fmt, runs, label, sparse=None, dense=None):
    """``check`` in each (fusion mode, config overrides) of ``modes`` with leaves converted
    (``sparse``/``dense`` as ``check`` takes them); every fused operator ran as a kernel. Adds the
    fused operators to ``runs["fused"]`` and those an input of format ``fmt`` drives to
    ``runs[label]``."""
    counters = ("fused_ops_executed", "kernels_executed", "fused_ops_by_reference")
    for mode, overrides in modes:
        before = fm.stats()
        with fm.config(**overrides):
            check(tree, leaves, fusion=mode, sparse=sparse, dense=dense)
            expr = build(tree, fm_leaves(leaves, sparse, dense))
            plan = fm.explain(expr, fusion=mode)
        after = fm.stats()
        ran = {k: after.get(k, 0) - before.get(k, 0) for k in counters}
        assert ran["kernels_executed"] == ran["fused_ops_executed"], ran
        assert ran["fused_ops_by_reference"] == 0, ran
        runs["fused"] += ran["fused_ops_executed"]
        runs[label] += sum(op.main_input.meta.format is fmt for op in plan.operators)
