"""Native glue for numba code: int64 words as pointers and floats, and calls through addresses.

Generated kernels read their values from a frame of int64 words (``codegen/frame.py``) and call
precompiled helpers (the compressed format's decoding and scatter, ``formats/compressed_kernels``)
through the addresses of their C wrappers: a helper called directly would have its machine code
linked into, and optimized again with, every kernel that calls it (a compressed Row kernel took
6 s to compile that way). A callable helper takes int64 arguments only (arrays as their address
and shape) and returns an int64; ``address`` compiles (or loads) it once per process.
"""

from __future__ import annotations

import threading
from typing import Any

from llvmlite import ir
from numba import types
from numba.core import errors
from numba.extending import intrinsic

_I64 = ir.IntType(64)


@intrinsic
def pointer(typingctx, address):
    """The word ``address`` as a pointer (for ``numba.carray``)."""

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], ir.IntType(8).as_pointer())

    return types.voidptr(types.int64), codegen


@intrinsic
def as_float(typingctx, word):
    """The float64 whose bits the int64 ``word`` holds."""

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.int64), codegen


@intrinsic
def call(typingctx, address, args):
    """``int64 f(int64, ...)`` at ``address`` called with the integers of the tuple ``args``."""
    if not isinstance(args, types.BaseTuple) or not all(
        isinstance(t, types.Integer) for t in args.types
    ):
        raise errors.TypingError("native.call takes a tuple of integers")

    def codegen(context, builder, signature, values):
        parts = [
            context.cast(builder, v, t, types.int64)
            for v, t in zip(
                builder_unpack(builder, values[1], len(args.types)), args.types, strict=True
            )
        ]
        kind = ir.FunctionType(_I64, [_I64] * len(parts))
        return builder.call(builder.inttoptr(values[0], kind.as_pointer()), parts)

    return types.int64(types.int64, args), codegen


def builder_unpack(builder, value, count: int) -> list:
    return [builder.extract_value(value, k) for k in range(count)]


_lock = threading.Lock()
_addresses: dict[Any, int] = {}


def address(fn: Any, nargs: int) -> int:
    """The address of the C wrapper of the numba function ``fn`` compiled for ``nargs`` int64
    arguments (loaded from numba's disk cache, or compiled, once per process)."""
    found = _addresses.get(fn)
    if found is None:
        with _lock:
            signature = (types.int64,) * nargs
            fn.compile(signature)
            result = fn.overloads[signature]
            name = result.fndesc.llvm_cfunc_wrapper_name
            found = _addresses[fn] = result.library.get_pointer_to_function(name)
    return found
