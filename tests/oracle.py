"""An independent numpy evaluator of test expression trees, used as the differential oracle.

It works on numpy's own shapes (0-, 1- and 2-D), not fusedml's 2-D IR, and implements the
documented semantics directly: numpy on dense float64 values (argmax gives int64, arithmetic on it
float64), plus "a zero of a CSR operand annihilates in multiplication, matrix products and as a
numerator". Which values are CSR follows the README's
rules, restated here from the spec rather than imported.

A tree is a tuple: ("leaf", k) | ("const", c) | ("un", name, a) | ("bin", name, a, b)
| ("where", c, a, b) | ("matmul", a, b) | ("T", a) | ("agg", name, axis, keepdims, a)
| ("argmax", axis, keepdims, a) | ("onehot", a) | ("cols", key, a) | ("hstack", [a, ...]).
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.special import expit

UNARY = {
    "negative": np.negative, "exp": np.exp, "log": np.log, "abs": np.abs,
    "sqrt": np.sqrt, "sign": np.sign, "sigmoid": expit, "arctan": np.arctan,
}  # fmt: skip
BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "power": np.power, "minimum": np.minimum, "maximum": np.maximum, "less": np.less,
    "less_equal": np.less_equal, "greater": np.greater, "greater_equal": np.greater_equal,
    "equal": np.equal, "not_equal": np.not_equal,
}  # fmt: skip
AGG = {"sum": np.sum, "min": np.min, "max": np.max, "mean": np.mean}


@dataclass
class V:
    value: object  # np.ndarray (numpy shape) or np.float64
    csr: bool = False
    const: bool = False  # a literal known when the expression is built
    index: bool = False  # argmax output (int64), kept by transpose, column selection and hstack


def _f(fn, *args):
    with np.errstate(all="ignore"):
        return np.asarray(fn(*args), dtype=np.float64)


def _zero_kept(fn, a: float, b: float | None = None) -> bool:
    out = _f(fn, a) if b is None else _f(fn, a, b)
    return bool(out == 0)


def evaluate(tree, leaves) -> V:
    kind = tree[0]
    if kind == "leaf":
        value = leaves[tree[1]]
        if sp.issparse(value):
            return V(value.toarray().astype(np.float64), csr=True)
        return V(np.asarray(value, dtype=np.float64))
    if kind == "const":
        return V(np.float64(tree[1]), const=True)
    if kind == "un":
        a = evaluate(tree[2], leaves)
        fn = UNARY[tree[1]]
        return V(_f(fn, a.value), csr=a.csr and _zero_kept(fn, 0.0), const=a.const)
    if kind == "bin":
        return _binary(tree[1], evaluate(tree[2], leaves), evaluate(tree[3], leaves))
    if kind == "where":
        c, a, b = (evaluate(t, leaves) for t in tree[1:])
        out = np.where(np.asarray(c.value) != 0, a.value, b.value).astype(np.float64)
        return V(out, const=c.const and a.const and b.const)
    if kind == "matmul":
        return _matmul(evaluate(tree[1], leaves), evaluate(tree[2], leaves))
    if kind == "T":
        a = evaluate(tree[1], leaves)
        return V(np.asarray(a.value).T, a.csr, a.const, a.index)
    if kind == "agg":
        _, name, axis, keepdims, sub = tree
        a = evaluate(sub, leaves)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # mean of an empty slice is NaN
            out = AGG[name](a.value, axis=axis, keepdims=keepdims)
        return V(np.asarray(out, dtype=np.float64) if np.ndim(out) else np.float64(out))
    if kind == "argmax":
        _, axis, keepdims, sub = tree
        a = evaluate(sub, leaves)
        return V(np.argmax(a.value, axis=axis, keepdims=keepdims), index=True)
    if kind == "onehot":
        a = np.asarray(evaluate(tree[1], leaves).value)
        return V(np.eye(a.shape[1])[np.argmax(a, axis=1)])
    if kind == "cols":
        _, key, sub = tree
        a = evaluate(sub, leaves)
        return V(np.asarray(a.value)[:, key], a.csr, index=a.index)
    if kind == "hstack":
        parts = [evaluate(t, leaves) for t in tree[1]]
        index = all(p.index for p in parts)
        out = np.hstack([p.value for p in parts]).astype(np.int64 if index else np.float64)
        return V(out, all(p.csr for p in parts), index=index)
    raise ValueError(kind)


def _children(tree) -> list:
    kind = tree[0]
    if kind in ("leaf", "const"):
        return []
    if kind == "hstack":
        return list(tree[1])
    return [t for t in tree[1:] if isinstance(t, tuple)]


def magnitude(tree, leaves) -> float:
    """The largest finite |value| of any subexpression: sums over cells may be reassociated, and
    their rounding error (cancellation included) is bounded by terms * eps * this."""
    value = np.asarray(evaluate(tree, leaves).value, dtype=np.float64)
    finite = np.abs(value[np.isfinite(value)])
    here = float(finite.max()) if finite.size else 0.0
    return max([here, *(magnitude(t, leaves) for t in _children(tree))])


def _binary(name: str, a: V, b: V) -> V:
    fn = BINARY[name]
    out = _f(fn, a.value, b.value)
    if out.ndim == 0:
        return V(np.float64(out), const=a.const and b.const)
    if name == "multiply":
        csr = a.csr or b.csr
        mask = np.zeros(out.shape, bool)
        if a.csr:
            mask |= np.broadcast_to(np.asarray(a.value) == 0, out.shape)
        if b.csr:
            mask |= np.broadcast_to(np.asarray(b.value) == 0, out.shape)
        out = np.where(mask, 0.0, out)
    elif name == "divide":
        csr = a.csr
        if a.csr:
            out = np.where(np.broadcast_to(np.asarray(a.value) == 0, out.shape), 0.0, out)
    elif a.csr and b.csr:
        csr = _zero_kept(fn, 0.0, 0.0)
    elif a.csr and b.const:
        csr = _zero_kept(fn, 0.0, float(b.value))
    elif b.csr and a.const:
        csr = _zero_kept(fn, float(a.value), 0.0)
    else:
        csr = False
    return V(out, csr=csr)


# dense products through BLAS (True), or with every term rounded before it is summed (False):
# the two may differ where a term overflows beside an infinite one (fused multiply-adds keep
# inf + x * y at inf, a rounded x * y = -inf gives NaN); ``products_rounded`` switches
_BLAS = [True]


@contextlib.contextmanager
def products_rounded() -> Iterator[None]:
    """Evaluate dense products with rounded terms in the block (as scalar loops do)."""
    _BLAS.append(False)
    try:
        yield
    finally:
        _BLAS.pop()


def _matmul(a: V, b: V) -> V:
    A, B = np.asarray(a.value), np.asarray(b.value)
    if not (a.csr or b.csr) and _BLAS[-1]:
        with np.errstate(all="ignore"):
            out = np.matmul(A, B)
        return V(np.float64(out) if out.ndim == 0 else out)
    A2 = A if A.ndim == 2 else A[None, :]
    B2 = B if B.ndim == 2 else B[:, None]
    with np.errstate(all="ignore"):
        products = A2[:, :, None] * B2[None, :, :]
    mask = np.zeros(products.shape, bool)
    if a.csr:
        mask |= (A2 == 0)[:, :, None]
    if b.csr:
        mask |= (B2 == 0)[None, :, :]
    with np.errstate(all="ignore"):
        out = np.where(mask, 0.0, products).sum(axis=1)
    if A.ndim == 1:
        out = out[0]
    if B.ndim == 1:
        out = out[..., 0]
    if np.ndim(out) == 0:
        return V(np.float64(out))
    return V(out, csr=a.csr and b.csr)
