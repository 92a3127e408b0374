"""The chunk launcher: runs a kernel's chunks ``chunk(c, frame)`` for c in 0..nchunk-1 on the
OpenMP threads numba's kernels and numpy's BLAS share (``threads.py``).

Why not numba's ``prange``. A parallel loop costs numba a second compile of the loop body as a
gufunc, its wrapper and the scheduling code: a CSR Row kernel took 1.9 s to compile with
``prange`` and 0.5 s without, every kernel paying it again. Generated kernels are serial
functions of one chunk with one C signature (``int64 chunk(int64 c, int64 frame)``, the cfunc
wrapper numba emits for every compiled function), and this launcher, written in LLVM IR and built
once per process (milliseconds), runs them on an OpenMP team through ``GOMP_parallel``, each
thread a contiguous share of the chunks as ``prange`` schedules them (threads taking chunks one at
a time from a counter wrote neighbouring chunks' partials into shared cache lines: a Row kernel
ran 2x slower on two threads than on one). Each chunk writes only its own rows and partials, so
the results do not depend on which thread ran which chunk.

A chunk returns 1 when it finished; one that raised returns 0 (numba's wrapper prints the
exception), so a launch that did not complete every chunk raises instead of returning a partial
result. Without numba's OpenMP layer (another threading layer chosen) chunks run one after the
other on the calling thread.
"""

from __future__ import annotations

import ctypes
import threading

import numba
from llvmlite import ir

from fusedml._native import engine, symbol
from fusedml.runtime.threads import libgomp

I8P, I32, I64 = ir.IntType(8).as_pointer(), ir.IntType(32), ir.IntType(64)
FN, NCHUNK, FRAME, DONE = range(4)  # the words a launch shares with its team


class ChunkFailed(RuntimeError):
    """A kernel's chunk raised (its exception was printed): the launch has no valid result."""


def _team(module: ir.Module, omp: tuple[int, int] | None) -> ir.Function:
    """``team(block)``: this thread's contiguous share of the chunks (as ``prange`` schedules
    them: chunk partials next to each other in memory belong to one thread, and share no cache
    line with another's), counting the chunks that finished."""
    chunk_type = ir.FunctionType(I64, [I64, I64])
    team = ir.Function(module, ir.FunctionType(ir.VoidType(), [I8P]), "team")
    entry, test, run, done = (team.append_basic_block(n) for n in ("entry", "test", "run", "done"))
    b = ir.IRBuilder(entry)
    words = b.bitcast(team.args[0], I64.as_pointer())

    def word(k):
        return b.gep(words, [ir.Constant(I64, k)])

    fn = b.inttoptr(b.load(word(FN)), chunk_type.as_pointer())
    nchunk, frame = b.load(word(NCHUNK)), b.load(word(FRAME))
    if omp is None:
        me, threads = ir.Constant(I64, 0), ir.Constant(I64, 1)
    else:
        ask = ir.FunctionType(I32, []).as_pointer()
        me, threads = (
            b.sext(b.call(b.inttoptr(ir.Constant(I64, address), ask), []), I64) for address in omp
        )
    first = b.sdiv(b.mul(me, nchunk), threads)
    last = b.sdiv(b.mul(b.add(me, ir.Constant(I64, 1)), nchunk), threads)
    b.branch(test)
    b.position_at_end(test)
    c = b.phi(I64)
    finished = b.phi(I64)
    c.add_incoming(first, entry)
    finished.add_incoming(ir.Constant(I64, 0), entry)
    b.cbranch(b.icmp_signed("<", c, last), run, done)
    b.position_at_end(run)
    total = b.add(finished, b.call(fn, [c, frame]))
    c.add_incoming(b.add(c, ir.Constant(I64, 1)), run)
    finished.add_incoming(total, run)
    b.branch(test)
    b.position_at_end(done)
    b.atomic_rmw("add", word(DONE), finished, "monotonic")
    b.ret_void()
    return team


def _module(gomp: tuple[int, int, int] | None) -> ir.Module:
    """``launch(fn, nchunk, frame, threads)``: the team on ``threads`` threads (GOMP_parallel),
    or on this one; returns how many chunks finished."""
    module = ir.Module(name="fusedml_launch")
    team = _team(module, gomp[1:] if gomp else None)
    launch = ir.Function(module, ir.FunctionType(I64, [I64, I64, I64, I32]), "launch")
    fn, nchunk, frame, threads = launch.args
    entry, parallel, serial, end = (
        launch.append_basic_block(n) for n in ("entry", "parallel", "serial", "end")
    )
    b = ir.IRBuilder(entry)
    block = b.alloca(I64, 4)
    for k, value in ((FN, fn), (NCHUNK, nchunk), (FRAME, frame), (DONE, ir.Constant(I64, 0))):
        b.store(value, b.gep(block, [ir.Constant(I64, k)]))
    data = b.bitcast(block, I8P)
    if gomp is None:
        b.branch(serial)
    else:
        b.cbranch(b.icmp_signed(">", threads, ir.Constant(I32, 1)), parallel, serial)
    b.position_at_end(parallel)
    if gomp is not None:
        kind = ir.FunctionType(ir.VoidType(), [team.type, I8P, I32, I32])
        start = b.inttoptr(ir.Constant(I64, gomp[0]), kind.as_pointer())
        b.call(start, [team, data, threads, ir.Constant(I32, 0)])
    b.branch(end)
    b.position_at_end(serial)
    b.call(team, [data])
    b.branch(end)
    b.position_at_end(end)
    b.ret(b.load(b.gep(block, [ir.Constant(I64, DONE)])))
    return module


def _gomp() -> tuple[int, int, int] | None:
    """Addresses of ``GOMP_parallel``, ``omp_get_thread_num`` and ``omp_get_num_threads`` in the
    libgomp numba's OpenMP layer runs on, if it does."""
    gomp = libgomp()
    if isinstance(gomp, str):
        return None
    return tuple(symbol(gomp, n) for n in ("GOMP_parallel", "omp_get_thread_num",
                                           "omp_get_num_threads"))  # fmt: skip


_lock = threading.Lock()
_built: list = []  # [(ctypes function, engine)], once per process


def _launcher():
    if not _built:
        with _lock:
            if not _built:
                jit = engine(_module(_gomp()))
                kind = ctypes.CFUNCTYPE(
                    ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int32
                )
                _built.append((kind(jit.get_function_address("launch")), jit))
    return _built[0][0]


def run_chunks(chunk_address: int, nchunk: int, frame_address: int) -> None:
    """Run chunks 0..nchunk-1 of a kernel, on as many threads as numba may use here (one inside
    ``threads.one_thread``), at most one per chunk; raises ``ChunkFailed`` if a chunk raised."""
    if nchunk <= 0:
        return
    threads = min(numba.get_num_threads(), nchunk)
    done = _launcher()(chunk_address, nchunk, frame_address, threads)
    if done != nchunk:
        raise ChunkFailed(f"{nchunk - done} of {nchunk} kernel chunks failed")
