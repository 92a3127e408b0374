"""Native pieces of the shared BLAS pool: an OpenBLAS threads callback that runs a BLAS call's
parallel jobs as one OpenMP team of the libgomp instance that numba's kernels use.

OpenBLAS (0.3.28 and later) calls ``callback(sync, dojob, numjobs, jobdata_elsize, jobdata,
dojob_data)`` instead of waking its own worker threads; job ``i`` is ``dojob(i, jobdata + i *
elsize, dojob_data)``. Level-3 jobs wait for one another, so all ``numjobs`` must run at once:
``GOMP_parallel`` with ``numjobs`` threads guarantees that (a team never shrinks outside a nested
parallel region, and numpy's BLAS is only called from Python, never from inside a kernel).
OpenBLAS gives job ``i`` its per-thread buffer ``i``, so calls from several threads take a lock.

The two functions are written in LLVM IR and compiled with llvmlite's JIT (milliseconds): going
through numba would cost its first compile in the process (half a second of type registries)
even in a process that otherwise only loads kernels from the disk cache. Addresses of C functions
and of the state block are baked into the code, so it is built once per process.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

from llvmlite import ir

from fusedml._native import engine, symbol

# state words: lock, dojob, jobdata, elsize, dojob_data, (unused), calls served
LOCK, DOJOB, JOBDATA, ELSIZE, DATA, TEAM, CALLS = range(7)

I8P, I32, I64 = ir.IntType(8).as_pointer(), ir.IntType(32), ir.IntType(64)


@dataclass
class Native:
    """A compiled function's address; keeps the JIT engine that holds its code alive."""

    address: int
    engine: object


def _pointer(builder: ir.IRBuilder, address: int, fnty: ir.FunctionType) -> ir.Value:
    return builder.inttoptr(ir.Constant(I64, address), fnty.as_pointer())


def _module(state: int, gomp_parallel: int, thread_num: int, sched_yield: int) -> ir.Module:
    module = ir.Module(name="fusedml_blas_pool")
    words = ir.Constant(I64, state).inttoptr(I64.as_pointer())

    def word(builder, k):
        return builder.gep(words, [ir.Constant(I64, k)])

    def load(builder, k):
        return builder.load_atomic(word(builder, k), "acquire", 8)

    def store(builder, k, value):
        builder.store_atomic(value, word(builder, k), "release", 8)

    team = ir.Function(module, ir.FunctionType(ir.VoidType(), [I8P]), "team_member")
    b = ir.IRBuilder(team.append_basic_block())
    t = b.call(_pointer(b, thread_num, ir.FunctionType(I32, [])), [])
    job = b.add(load(b, JOBDATA), b.mul(b.zext(t, I64), load(b, ELSIZE)))
    dojob = b.inttoptr(load(b, DOJOB), ir.FunctionType(ir.VoidType(), [I32, I8P, I32]).as_pointer())
    b.call(dojob, [t, b.inttoptr(job, I8P), b.trunc(load(b, DATA), I32)])
    b.ret_void()

    args = [I32, I64, I32, I64, I64, I32]  # sync, dojob, numjobs, elsize, jobdata, dojob_data
    callback = ir.Function(module, ir.FunctionType(ir.VoidType(), args), "callback")
    _sync, dojob_arg, numjobs, elsize, jobdata, data = callback.args
    entry, spin, locked = (callback.append_basic_block(n) for n in ("entry", "spin", "locked"))
    b = ir.IRBuilder(entry)
    b.branch(spin)
    b.position_at_end(spin)
    zero, one = ir.Constant(I64, 0), ir.Constant(I64, 1)
    got = b.extract_value(b.cmpxchg(word(b, LOCK), zero, one, "acq_rel", "acquire"), 1)
    with b.if_then(b.not_(got)):
        b.call(_pointer(b, sched_yield, ir.FunctionType(I32, [])), [])
    b.cbranch(got, locked, spin)
    b.position_at_end(locked)
    store(b, DOJOB, dojob_arg)
    store(b, JOBDATA, jobdata)
    store(b, ELSIZE, elsize)
    store(b, DATA, b.zext(data, I64))
    store(b, CALLS, b.add(load(b, CALLS), one))
    parallel = ir.FunctionType(ir.VoidType(), [team.type, I8P, I32, I32])
    b.call(
        _pointer(b, gomp_parallel, parallel),
        [team, ir.Constant(I64, state).inttoptr(I8P), numjobs, ir.Constant(I32, 0)],
    )
    store(b, LOCK, zero)
    b.ret_void()
    return module


def build(gomp: ctypes.CDLL) -> tuple:
    """(state block, callback) for the libgomp ``gomp``: both must stay alive while the callback
    is installed. ``block[CALLS]`` counts the BLAS calls served."""
    block = (ctypes.c_uint64 * 8)()
    module = _module(
        ctypes.addressof(block),
        symbol(gomp, "GOMP_parallel"),
        symbol(gomp, "omp_get_thread_num"),
        symbol(ctypes.CDLL(None), "sched_yield"),
    )
    jit = engine(module)
    return block, Native(jit.get_function_address("callback"), jit)
