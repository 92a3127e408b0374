"""Tracing a Python function into a DAG, once per input signature.

A signature names, per argument: a runtime scalar (python/numpy number: its value is bound at each
call, never baked in), a matrix (format and shape, and for sparse layouts the order of magnitude of
its density, since plans depend on sparsity; for compressed ones the size class of its layout)
or a static value (given in ``static_argnames``, or a
bool/str/None/tuple, compared by value).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from fusedml.formats import Collection, Format, density_decade, layout_of, nnz_of
from fusedml.ir.frontend import Expr, as_expr, placeholder
from fusedml.ir.node import Node


@dataclass(frozen=True)
class ArgSpec:
    kind: str  # "scalar" | "matrix" | "static"
    shape: tuple[int, ...] = ()
    format: Format | None = None  # None for static arguments
    density_decade: int | None = None  # floor(log10(nnz / cells)) of a sparse layout
    size_class: Any = None  # the format's class of the value's layout (``Format.size_class``)
    value: Any = None  # static arguments only
    blocks: int = 0  # row blocks of a distributed value (a collection's), 0 for a local one

    def __post_init__(self) -> None:
        # each call hashes its signature: computed once, not per lookup
        object.__setattr__(self, "_hash", hash(self._fields()))

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple:
        # the hash is this process's (formats hash by identity): rebuilt, never pickled
        return (ArgSpec, self._fields())

    def _fields(self) -> tuple:
        return tuple(getattr(self, f.name) for f in dataclasses.fields(self))


_STATIC_TYPES = (bool, str, type(None), tuple)
_SCALAR_SPEC = ArgSpec("scalar", (), Format.DENSE)


@functools.lru_cache(maxsize=4096)
def _dense_spec(shape: tuple[int, ...]) -> ArgSpec:
    return ArgSpec("matrix", shape, Format.DENSE, None, Format.DENSE.size_class(shape, ()))


@functools.lru_cache(maxsize=1024)
def _static_spec(kind: type, value: Any) -> ArgSpec:
    return ArgSpec("static", value=value)  # kind in the key: True, 1 and 1.0 are equal


def normalize_arg(name: str, value: Any, static: bool) -> tuple[ArgSpec, Any]:
    """(signature entry, value in the form the plan binds)."""
    # the common arguments of an iterative fit, decided without the format registry's
    # conversions (a few microseconds per argument and call)
    kind = type(value)
    if not static and kind is float:
        return _SCALAR_SPEC, value
    if (
        not static
        and kind is np.ndarray
        and value.dtype == np.float64
        and 1 <= value.ndim <= 2
        and Format.of(value) is Format.DENSE
    ):
        return _dense_spec(value.shape), value
    what = f"argument {name!r}"
    if static or isinstance(value, _STATIC_TYPES):
        try:
            return _static_spec(kind, value), value
        except TypeError:
            raise TypeError(f"static {what} must be hashable, got {type(value).__name__}") from None
    if isinstance(value, Expr):
        raise TypeError(f"{what}: pass concrete arrays to a jit function, not lazy expressions")
    fmt, value = Format.convert(value, what)
    shape = value.shape
    if not shape:
        return ArgSpec("scalar", (), fmt), float(value)
    decade = None
    if fmt.iterates_nonzeros:
        decade = density_decade(nnz_of(fmt, value), shape[0] * shape[1])
    collection = Collection.of(value)
    blocks = collection.blocks(value) if collection else 0
    size_class = fmt.size_class(shape, layout_of(fmt, value))
    return ArgSpec("matrix", shape, fmt, decade, size_class, blocks=blocks), value


def _placeholder(name: str, spec: ArgSpec, value: Any) -> Expr:
    nnz = nnz_of(spec.format, value) if spec.format.iterates_nonzeros else None
    layout = layout_of(spec.format, value) if value is not None and spec.shape else ()
    return placeholder(name, spec.shape, spec.format, nnz, layout, spec.blocks)


def bind_value(node: Node, value: Any) -> Any:
    """The IR form of an argument value for its placeholder (1-D arrays are (n, 1) columns)."""
    if isinstance(value, np.ndarray) and value.ndim == 1:
        return value.reshape(-1, 1)  # a collection's vector: its backend binds it
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
