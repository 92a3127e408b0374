"""Tracing a Python function into a DAG, once per input signature.

A signature names, per argument: a runtime scalar (python/numpy number: its value is bound at each
call, never baked in), a dense array (shape), a CSR matrix (shape and order of magnitude of its
density, since plans depend on sparsity) or a static value (given in ``static_argnames``, or a
bool/str/None/tuple, compared by value).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from fusedml.formats import Format, to_csr, to_dense
from fusedml.ir.frontend import Expr, as_expr, placeholder
from fusedml.ir.node import Node


@dataclass(frozen=True)
class ArgSpec:
    kind: str  # "scalar" | "dense" | "csr" | "static"
    shape: tuple[int, ...] = ()
    density_decade: int | None = None  # floor(log10(nnz / cells)) for CSR, None if empty
    value: Any = None  # static arguments only


def normalize_arg(name: str, value: Any, static: bool) -> tuple[ArgSpec, Any]:
    """(signature entry, value in the form the plan binds)."""
    what = f"argument {name!r}"
    if static or isinstance(value, bool | str | type(None) | tuple):
        try:
            hash(value)
        except TypeError:
            raise TypeError(f"static {what} must be hashable, got {type(value).__name__}") from None
        return ArgSpec("static", value=value), value
    if isinstance(value, Expr):
        raise TypeError(f"{what}: pass concrete arrays to a jit function, not lazy expressions")
    if sp.issparse(value):
        csr = to_csr(value, what)
        cells = csr.shape[0] * csr.shape[1]
        decade = math.floor(math.log10(csr.nnz / cells)) if csr.nnz else None
        return ArgSpec("csr", csr.shape, decade), csr
    if isinstance(value, numbers.Number | np.generic):
        return ArgSpec("scalar"), float(to_dense(value, what))
    arr = to_dense(value, what)
    if arr.ndim == 0:
        return ArgSpec("scalar"), float(arr)
    return ArgSpec("dense", arr.shape), arr


def _placeholder(name: str, spec: ArgSpec, value: Any) -> Expr:
    if spec.kind == "csr":
        return placeholder(name, spec.shape, Format.CSR, value.nnz)
    return placeholder(name, spec.shape, Format.DENSE)


def bind_value(node: Node, value: Any) -> Any:
    """The IR form of an argument value for its placeholder (1-D arrays are (n, 1) columns)."""
    if isinstance(value, np.ndarray) and value.ndim == 1:
        return value.reshape(-1, 1)
    return value


@dataclass(frozen=True)
class Traced:
    params: tuple[tuple[str, Node | None], ...]  # placeholder per argument, None if static
    outputs: tuple[Expr, ...]
    structure: type | None  # tuple or list if the function returned several values, else None
    captured: Mapping[Node, Any]  # data the function closed over (fm.matrix inside the body)


def trace(fn: Callable[..., Any], arguments: Mapping[str, tuple[ArgSpec, Any]]) -> Traced:
    args: list[Any] = []
    params: list[tuple[str, Node | None]] = []
    for name, (spec, value) in arguments.items():
        if spec.kind == "static":
            args.append(value)
            params.append((name, None))
        else:
            expr = _placeholder(name, spec, value)
            args.append(expr)
            params.append((name, expr.node))
    result = fn(*args)
    structure = type(result) if isinstance(result, tuple | list) else None
    items = result if structure is not None else (result,)
    outputs = tuple(as_expr(r, f"output of {getattr(fn, '__name__', 'fn')}") for r in items)
    captured: dict[Node, Any] = {}
    for out in outputs:
        captured.update(out.bindings)
    return Traced(tuple(params), outputs, structure, captured)
