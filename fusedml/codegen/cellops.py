"""One cell's arithmetic for generated and hand-written kernels, compiled without fast-math flags.

Kernels are compiled with ``fastmath={"reassoc"}`` so that LLVM may reorder (and vectorize) the
accumulation of an aggregate across cells. That flag must never reach the arithmetic inside one
cell: with it LLVM folds algebra across special values (``x**2.5 * x**0.5`` became ``x**3`` for
negative x, ``exp(log(x))`` became ``x``, ``x * 1e200 * 1e200`` became ``x * 1e400``). Each
function here is its own numba function with ``fastmath=False`` *set* (numba lets a callee whose
flag is unset inherit its caller's); LLVM inlines the calls and keeps every instruction's own
flags, so they cost nothing and compute what numpy computes.

Kernels call these as ``f.mul(a, b)`` after ``import fusedml.codegen.cellops as f``. Numba's
cache does not notice a change of this file inside an already compiled kernel, so kernel sources
carry ``SOURCE_DIGEST`` (see ``source.PRELUDE``): a change here is a new kernel.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

SOURCE_DIGEST = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]

# No disk cache of their own: they are compiled into each kernel, whose cache holds them, and a
# second cache in the package directory would be one more place to go stale or be damaged.
_STRICT = dict(fastmath=False, error_model="numpy")


@numba.njit(**_STRICT)
def neg(a):
    return -a


@numba.njit(**_STRICT)
def add(a, b):
    return a + b


@numba.njit(**_STRICT)
def sub(a, b):
    return a - b


@numba.njit(**_STRICT)
def mul(a, b):
    return a * b


@numba.njit(**_STRICT)
def div(a, b):
    return a / b


@numba.njit(**_STRICT)
def power(a, b):
    return a**b


@numba.njit(**_STRICT)
def scalar_power(a, b):
    """``a ** b`` for an exponent that is one value for the whole operation: numpy then takes
    sqrt for 0.5, a reciprocal for -1 and a square for 2 (``np.power(-inf, 0.5)`` is NaN,
    ``pow`` gives inf), and every mode must give numpy's result."""
    if b == 0.5:
        return np.sqrt(a)
    if b == 2.0:
        return a * a
    if b == -1.0:
        return 1.0 / a
    return a**b


@numba.njit(**_STRICT)
def exp(a):
    return np.exp(a)


@numba.njit(**_STRICT)
def log(a):
    return np.log(a)


@numba.njit(**_STRICT)
def sqrt(a):
    return np.sqrt(a)


@numba.njit(**_STRICT)
def fabs(a):
    return abs(a)


@numba.njit(**_STRICT)
def sign(a):
    # numpy: 1, -1, +0.0 for both zeros, NaN for NaN
    if a > 0.0:
        return 1.0
    if a < 0.0:
        return -1.0
    if a == 0.0:
        return 0.0
    return a


@numba.njit(**_STRICT)
def arctan(a):
    return np.arctan(a)


@numba.njit(**_STRICT)
def sigmoid(a):
    # scipy's expit formula (the reference's): below about -709 it is 0, not a subnormal
    return 1.0 / (1.0 + np.exp(-a))


@numba.njit(**_STRICT)
def minimum(a, b):
    # numpy's rule: NaN from either side wins, and of two equal values (0.0, -0.0) the second
    return a if (a < b or a != a) else b


@numba.njit(**_STRICT)
def maximum(a, b):
    return a if (a > b or a != a) else b


# Memory. An array that numba allocates is backed by 4 KB pages, faulted in one at a time when the
# kernel's threads first write it, and concurrent faults serialize in the kernel: a parallel
# kernel writing a fresh 160 MB result ran 3.6x slower than into an array numpy allocated (numpy
# asks for transparent huge pages on arrays of 4 MB and more). ``huge_pages`` asks the same.
_HUGE_PAGE = np.uint64(2 << 20)
_MADV_HUGEPAGE = 14 if sys.platform.startswith("linux") else -1


@intrinsic
def _madvise(typingctx, address, length, advice):
    def codegen(context, builder, signature, args):
        i8p = ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.IntType(32), [i8p, ir.IntType(64), ir.IntType(32)])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "madvise")  # libc, by name
        start = builder.inttoptr(args[0], i8p)
        return builder.call(fn, [start, args[1], builder.trunc(args[2], ir.IntType(32))])

    return types.int32(types.uint64, types.uint64, types.int64), codegen


@numba.njit(**_STRICT)
def huge_pages(a):
    """Advise transparent huge pages for the whole 2 MB pages inside a fresh array of 4 MB or
    more (a hint: failure changes nothing)."""
    nbytes = np.uint64(a.size * a.itemsize)
    if _MADV_HUGEPAGE >= 0 and nbytes >= np.uint64(4 << 20):
        base = np.uint64(a.ctypes.data)
        start = (base + _HUGE_PAGE - np.uint64(1)) // _HUGE_PAGE * _HUGE_PAGE
        end = (base + nbytes) // _HUGE_PAGE * _HUGE_PAGE
        if end > start:
            _madvise(start, end - start, _MADV_HUGEPAGE)
