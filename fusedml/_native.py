"""Native glue for numba code: int64 words as pointers and floats, and calls through addresses.

Generated kernels read their values from a frame of int64 words (``codegen/frame.py``) and call
precompiled helpers (the compressed format's decoding and scatter, ``formats/compressed_kernels``)
through the addresses of their C wrappers: a helper called directly would have its machine code
linked into, and optimized again with, every kernel that calls it (a compressed Row kernel took
6 s to compile that way). A callable helper takes int64 arguments only (arrays as their address
and shape) and returns an int64; ``address`` compiles (or loads) it once per process.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

import llvmlite.binding as llvm
from llvmlite import ir
from numba import types
from numba.core import cgutils, compiler, errors
from numba.extending import intrinsic

_I64 = ir.IntType(64)


class NoAliasCompiler(compiler.Compiler):
    """numba's pipeline with every array argument marked ``noalias``, as numba marks the body of
    a parallel loop: LLVM may then keep values in registers across the stores to a kernel's
    outputs. Only for functions whose written arrays overlap no other argument."""

    def define_pipelines(self):
        self.state.flags.noalias = True
        return super().define_pipelines()


@intrinsic
def pointer(typingctx, address):
    """The word ``address`` as a pointer (for ``numba.carray``)."""

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], ir.IntType(8).as_pointer())

    return types.voidptr(types.int64), codegen


# Reading a frame. Each read is a few loads emitted in place: a kernel that read its frame through
# ``numba.carray`` (an overloaded function, called and linked in per array) and array indexing
# compiled 20% slower over reproduce's 170 kernels (median 0.41 -> 0.33 s of CPU each).
def _literal(value: Any, what: str) -> int:
    if not isinstance(value, types.IntegerLiteral):
        raise errors.TypingError(f"{what} must be an int literal")
    return value.literal_value


def _load(builder: ir.IRBuilder, frame: ir.Value, at: int, kind: ir.Type) -> ir.Value:
    base = builder.inttoptr(frame, kind.as_pointer())
    return builder.load(builder.gep(base, [ir.Constant(_I64, at)]))


@intrinsic(prefer_literal=True)
def word(typingctx, frame, at):
    """The int64 word ``at`` (a literal) of the frame at address ``frame``."""
    k = _literal(at, "a frame word's position")

    def codegen(context, builder, signature, args):
        return _load(builder, args[0], k, _I64)

    return types.int64(types.int64, at), codegen


@intrinsic(prefer_literal=True)
def float_word(typingctx, frame, at):
    """The float64 whose bits the frame's word ``at`` (a literal) holds."""
    k = _literal(at, "a frame word's position")

    def codegen(context, builder, signature, args):
        return _load(builder, args[0], k, ir.DoubleType())

    return types.float64(types.int64, at), codegen


@intrinsic(prefer_literal=True)
def array(typingctx, frame, at, ndim, dtype):
    """The C-contiguous ``ndim``-dimensional array of ``dtype`` whose address and shape are the
    frame's words from ``at`` on (``at`` and ``ndim`` literals). It does not own its memory."""
    k, nd = _literal(at, "a frame word's position"), _literal(ndim, "ndim")
    if not isinstance(dtype, types.DTypeSpec) or nd < 1:
        raise errors.TypingError("native.array takes a positive ndim and a numpy scalar type")
    kind = types.Array(dtype.dtype, nd, "C")

    def codegen(context, builder, signature, args):
        words = [_load(builder, args[0], k + d, _I64) for d in range(nd + 1)]
        return _array_value(context, builder, kind, words[0], words[1:])

    return kind(types.int64, at, ndim, dtype), codegen


def _array_value(context, builder, kind, address, shape) -> ir.Value:
    """A C-contiguous array of ``kind`` over the memory at ``address`` (owned by no one), its
    fields inserted into the struct directly: numba's own ``carray`` builds it through a stack
    slot and a proxy object, several times the Python work per array (a kernel reads up to a few
    dozen)."""
    model = context.data_model_manager[kind]
    itemsize = context.get_abi_sizeof(context.get_data_type(kind.dtype))
    strides = [ir.Constant(_I64, itemsize)]
    for extent in reversed(shape[1:]):
        strides.insert(0, builder.mul(strides[0], extent))
    nitems = shape[0]
    for extent in shape[1:]:
        nitems = builder.mul(nitems, extent)
    struct = model.get_value_type()
    fields = {
        "nitems": nitems,
        "itemsize": ir.Constant(_I64, itemsize),
        "data": builder.inttoptr(address, context.get_data_type(kind.dtype).as_pointer()),
    }
    value = ir.Constant(struct, ir.Undefined)
    for position, name in enumerate(model._fields):
        if name in ("meminfo", "parent"):  # none: the memory is not numba's, nor an object's
            value = builder.insert_value(value, ir.Constant(struct.elements[position], None),
                                         position)  # fmt: skip
        elif name in fields:
            value = builder.insert_value(value, fields[name], position)
        else:  # shape, strides: one word per dimension
            for d, word in enumerate(shape if name == "shape" else strides):
                value = builder.insert_value(value, word, [position, d])
    return value


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
                cgutils.unpack_tuple(builder, values[1], len(args.types)), args.types, strict=True
            )
        ]
        kind = ir.FunctionType(_I64, [_I64] * len(parts))
        return builder.call(builder.inttoptr(values[0], kind.as_pointer()), parts)

    return types.int64(types.int64, args), codegen


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
            found = _addresses[fn] = cfunc_address(fn, signature)
    return found


def cfunc_address(fn: Any, signature: tuple) -> int:
    """The address of the C wrapper numba emits for ``fn``'s machine code of ``signature`` (which
    ``fn`` must have)."""
    result = fn.overloads[signature]
    return result.library.get_pointer_to_function(result.fndesc.llvm_cfunc_wrapper_name)


def symbol(lib: ctypes.CDLL, name: str) -> int:
    """The address of the C function ``name`` of a loaded library."""
    return ctypes.cast(getattr(lib, name), ctypes.c_void_p).value


def engine(module: ir.Module) -> Any:
    """An LLVM JIT engine holding ``module`` compiled (-O2) for this machine: the caller keeps it
    alive while its functions' addresses (``engine.get_function_address``) are in use."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    parsed = llvm.parse_assembly(str(module))
    parsed.verify()
    machine = llvm.Target.from_default_triple().create_target_machine(opt=2)
    jit = llvm.create_mcjit_compiler(parsed, machine)
    jit.finalize_object()
    return jit
