"""The frame: every value a kernel's chunk function reads, packed into one array of int64 words.

A chunk function has one signature for every kernel, ``chunk(c, frame_address)``, so that one
launcher (``runtime/launch.py``) runs any kernel's chunks on the shared threads without numba
compiling a parallel loop per kernel. Its values (the row and column counts, the operands'
arrays, the literals, what ``setup`` allocated) travel in the frame:

- an int or a bool is one word; a float is one word holding its bits;
- a C-contiguous array is its address and then its shape (one word per dimension);
- a tuple is its items, one after the other.

``describe`` gives each value's *kind* (the chunk function's source depends on the kinds: numba
specializes on the arrays' dtypes and dimensions) and the words; ``unpack`` renders the lines that
read the values back in the chunk function.
"""

from __future__ import annotations

import ctypes
import hashlib
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fusedml import _native

NATIVE_DIGEST = hashlib.sha256(Path(_native.__file__).read_bytes()).hexdigest()[:16]

_DOUBLE, _WORD = struct.Struct("<d"), struct.Struct("<q")
_INTS = (int, np.integer, bool, np.bool_)
_FLOATS = (float, np.floating)


def _probe_data_offset() -> int | None:
    """Where an ndarray object holds its data pointer (numpy's ``PyArrayObject`` layout: right
    after the object header); None if this build disagrees, then ``.ctypes.data`` is read."""
    a = np.empty(3)
    offset = object.__sizeof__(object())  # the object header: 16 bytes on CPython
    word = ctypes.c_void_p.from_address(id(a) + offset).value
    return offset if word == a.ctypes.data else None


_DATA_OFFSET = _probe_data_offset()
_read = ctypes.c_void_p.from_address


def address(a: np.ndarray) -> int:
    """The address of an array's first element (0 for an empty array)."""
    if _DATA_OFFSET is None:
        return a.ctypes.data
    return _read(id(a) + _DATA_OFFSET).value or 0


def float_word(x: float) -> int:
    """The int64 word holding a float's bits."""
    return _WORD.unpack(_DOUBLE.pack(x))[0]


def describe(values: Sequence[Any]) -> tuple[tuple, list[int], list[np.ndarray]]:
    """(kinds, words, copies) of ``values`` (see the module docstring). Arrays that are not
    C-contiguous are copied (the chunk function reads every array as C-contiguous): the caller
    keeps ``copies`` alive while the words are in use."""
    kinds: list = []
    words: list[int] = []
    copies: list[np.ndarray] = []
    for v in values:
        t = type(v)
        if t is np.ndarray and v.ndim:
            kinds.append(_array(v, words, copies))
        elif t is float:
            kinds.append("f")
            words.append(_WORD.unpack(_DOUBLE.pack(v))[0])
        elif t is int:
            kinds.append("i")
            words.append(v)
        elif t is tuple:
            kinds.append(_tuple(v, words, copies))
        else:
            kinds.append(_scalar(v, words))
    return tuple(kinds), words, copies


def _scalar(v: Any, words: list[int]) -> str:
    if isinstance(v, (bool, np.bool_)):
        words.append(int(v))
        return "b"
    if isinstance(v, _INTS):
        words.append(int(v))
        return "i"
    if isinstance(v, _FLOATS) or (type(v) is np.ndarray and v.dtype.kind == "f"):
        words.append(float_word(float(v)))  # a 0-d float array too
        return "f"
    raise TypeError(f"a kernel cannot read a value of type {type(v).__name__}")


def _tuple(items: tuple, words: list[int], copies: list[np.ndarray]) -> tuple:
    kinds: list = []
    for v in items:
        if type(v) is np.ndarray and v.ndim:
            kinds.append(_array(v, words, copies))
        elif type(v) is tuple:
            kinds.append(_tuple(v, words, copies))
        else:
            kinds.append(_scalar(v, words))
    return tuple(kinds)


def _array(a: np.ndarray, words: list[int], copies: list[np.ndarray]) -> tuple[str, int]:
    if not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)  # read only: kernels write only arrays setup allocated
        copies.append(a)
    words.append(address(a))
    words.extend(a.shape)
    name = _DTYPE_NAMES.get(a.dtype)
    if name is None:
        name = _DTYPE_NAMES[a.dtype] = a.dtype.name  # dtype.name takes microseconds per call
    return (name, a.ndim)


_DTYPE_NAMES: dict[np.dtype, str] = {}


def pack(words: list[int]) -> np.ndarray:
    return np.array(words, dtype=np.int64)


def unpack(names: Sequence[str], kinds: Sequence[Any], frame: str = "frame") -> list[str]:
    """Source lines binding each name to its value, read from the frame at address ``frame``."""
    lines: list[str] = []
    at = 0
    for name, kind in zip(names, kinds, strict=True):
        value, at = _value(kind, frame, at)
        lines.append(f"{name} = {value}")
    return lines


def _value(kind: Any, frame: str, at: int) -> tuple[str, int]:
    """The source reading a value of ``kind`` from the frame's words at ``at`` on, and the
    position after it."""
    if kind == "i":
        return f"native.word({frame}, {at})", at + 1
    if kind == "b":
        return f"native.word({frame}, {at}) != 0", at + 1
    if kind == "f":
        return f"native.float_word({frame}, {at})", at + 1
    if isinstance(kind[1], int):  # an array: (dtype name, ndim)
        return _view(kind, frame, at)
    items = []
    for part in kind:
        item, at = _value(part, frame, at)
        items.append(item)
    return f"({', '.join(items)},)", at


def _view(kind: tuple[str, int], frame: str, at: int) -> tuple[str, int]:
    dtype, ndim = kind
    return f"native.array({frame}, {at}, {ndim}, np.{dtype})", at + 1 + ndim
