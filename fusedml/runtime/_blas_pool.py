"""Native pieces of the shared BLAS pool: an OpenBLAS threads callback that runs a BLAS call's
parallel jobs as one OpenMP team of the libgomp instance that numba's kernels use.

OpenBLAS (0.3.28 and later) calls ``callback(sync, dojob, numjobs, jobdata_elsize, jobdata,
dojob_data)`` instead of waking its own worker threads; job ``i`` is ``dojob(i, jobdata + i *
elsize, dojob_data)``. Level-3 jobs wait for one another, so all ``numjobs`` must run at once:
``GOMP_parallel`` with ``numjobs`` threads guarantees that (a team never shrinks outside a nested
parallel region, and numpy's BLAS is only called from Python, never from inside a kernel).
OpenBLAS gives job ``i`` its per-thread buffer ``i``, so calls from several threads take a lock.

Addresses of C functions and of the state block are baked into the machine code: nothing here is
cached on disk (compiling takes a few tenths of a second, once per process).
"""

from __future__ import annotations

import ctypes

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

# state words: lock, dojob, jobdata, elsize, dojob_data, team function, calls served
LOCK, DOJOB, JOBDATA, ELSIZE, DATA, TEAM, CALLS = range(7)


@intrinsic
def _call_job(typingctx, fn, thread_num, jobdata, data):
    sig = types.void(types.uintp, types.int32, types.uintp, types.int32)

    def codegen(context, builder, signature, args):
        fn, num, job, data = args
        i8p = ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [ir.IntType(32), i8p, ir.IntType(32)])
        target = builder.inttoptr(fn, fnty.as_pointer())
        builder.call(target, [num, builder.inttoptr(job, i8p), data])
        return context.get_dummy_value()

    return sig, codegen


def _word(builder, base, k):
    return builder.gep(builder.inttoptr(base, ir.IntType(64).as_pointer()), [k])


@intrinsic
def _load(typingctx, base, k):
    def codegen(context, builder, signature, args):
        return builder.load_atomic(_word(builder, *args), "acquire", 8)

    return types.uint64(types.uintp, types.intp), codegen


@intrinsic
def _store(typingctx, base, k, value):
    def codegen(context, builder, signature, args):
        builder.store_atomic(args[2], _word(builder, args[0], args[1]), "release", 8)
        return context.get_dummy_value()

    return types.void(types.uintp, types.intp, types.uint64), codegen


@intrinsic
def _try_lock(typingctx, base):
    def codegen(context, builder, signature, args):
        zero, one = ir.Constant(ir.IntType(64), 0), ir.Constant(ir.IntType(64), 1)
        word = _word(builder, args[0], ir.Constant(ir.IntType(64), LOCK))
        return builder.extract_value(builder.cmpxchg(word, zero, one, "acq_rel", "acquire"), 1)

    return types.boolean(types.uintp), codegen


def _function(lib: ctypes.CDLL, name: str, restype, *argtypes):
    fn = getattr(lib, name)
    fn.restype, fn.argtypes = restype, list(argtypes)
    return fn


def build(gomp: ctypes.CDLL) -> tuple:
    """(state block, callback, team function) for the libgomp ``gomp``: all three must stay alive
    while the callback is installed. ``block[CALLS]`` counts the BLAS calls served."""
    parallel = _function(gomp, "GOMP_parallel", None, ctypes.c_void_p, ctypes.c_void_p,
                         ctypes.c_uint, ctypes.c_uint)  # fmt: skip
    thread_num = _function(gomp, "omp_get_thread_num", ctypes.c_int)
    sched_yield = _function(ctypes.CDLL(None), "sched_yield", ctypes.c_int)
    block = (ctypes.c_uint64 * 8)()
    state = ctypes.addressof(block)

    @numba.cfunc(types.void(types.uintp))
    def team_member(base):
        t = thread_num()
        job = _load(base, JOBDATA) + np.uint64(t) * _load(base, ELSIZE)
        _call_job(_load(base, DOJOB), np.int32(t), job, np.int32(_load(base, DATA)))

    @numba.cfunc(types.void(types.int32, types.uintp, types.int32, types.uintp, types.uintp,
                            types.int32))  # fmt: skip
    def callback(sync, dojob, numjobs, elsize, jobdata, data):
        while not _try_lock(state):
            sched_yield()
        _store(state, DOJOB, dojob)
        _store(state, JOBDATA, jobdata)
        _store(state, ELSIZE, elsize)
        _store(state, DATA, np.uint64(data))
        _store(state, CALLS, _load(state, CALLS) + np.uint64(1))
        parallel(_load(state, TEAM), state, np.uint32(numjobs), np.uint32(0))
        _store(state, LOCK, np.uint64(0))

    block[TEAM] = team_member.address
    return block, callback, team_member
