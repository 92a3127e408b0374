"""When and where a generated kernel becomes machine code: the compile tiers.

A generated kernel's chunk function has one signature, ``chunk(int64 c, int64 frame)``
(``SIGNATURE``), and never compiles when called (``cache.get_kernel`` turns that off): the runtime
asks ``obtain`` for its machine code, then ``address`` for the C entry point the launcher calls.
What ``obtain`` does is ``fm.config(compile=...)`` (environment variable ``FUSEDML_COMPILE``):

- ``eager``: load the machine code from the disk cache, or compile it now in this process;
- ``background`` (the default): load it from the disk cache; on a miss a worker process
  (``_worker.py``, one per process, started on first need) compiles it into the disk cache while
  the runtime runs the operator in the interim tier (``runtime/interpreter.py``); the first call
  after the worker is done loads it (milliseconds). numba holds the GIL while it compiles, so a
  thread would stall the caller; the worker runs at idle priority and, after this process exits,
  finishes the compiles it was given, so the next process starts warm;
- ``off``: load it from the disk cache, never compile.

Every compile of a kernel, by any process, holds its kernel file's lock: a second process (a
joblib worker, a second notebook) waits, then loads what the first saved.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import pickle
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from numba import types

from fusedml import _stats
from fusedml._config import get_config
from fusedml._native import cfunc_address
from fusedml.codegen.cache import NotCached, kernel_file, load_only

try:
    import fcntl
except ImportError:  # not POSIX: compiles of one kernel by two processes are not serialized
    fcntl = None

_lock = threading.RLock()  # one compile (or load) at a time in this process, as numba's own lock


SIGNATURE = (types.int64, types.int64)  # every chunk function's: (chunk index, frame address)


def address(fn: Any) -> int:
    """The address of the C wrapper numba emits for ``fn``'s machine code (``int64(int64,
    int64)``); ``fn`` must have it (``obtain``)."""
    return cfunc_address(fn, SIGNATURE)


@contextlib.contextmanager
def _compiling(fn: Any) -> Iterator[None]:
    with _lock:
        fn._can_compile = True
        try:
            yield
        finally:
            fn._can_compile = False


@contextlib.contextmanager
def file_lock(path: str | None) -> Iterator[None]:
    """Held by every process compiling the kernel defined in ``path``."""
    if fcntl is None or path is None:
        yield
        return
    try:
        f = open(f"{path}.lock", "a")  # noqa: SIM115 - held for the block
    except OSError:  # the kernel directory turned read-only: nothing can be saved anyway
        yield
        return
    with f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield  # closing the file releases the lock


def load(fn: Any, sig: tuple) -> bool:
    """Whether ``fn`` has machine code for ``sig``, loading it from the disk cache if it is
    there; never compiles."""
    if sig in fn.overloads:
        return True
    start = time.perf_counter()
    with _compiling(fn), load_only():
        try:
            fn.compile(sig)
        except NotCached:
            return False
    _stats.add_seconds("load", time.perf_counter() - start)
    _stats.bump("kernels_loaded_from_disk")
    return True


def compile_now(fn: Any, sig: tuple) -> bool:
    """Machine code for ``sig``: loaded from the disk cache or compiled (and saved) here. True if
    this call compiled it."""
    if load(fn, sig):
        return False
    with file_lock(kernel_file(fn)), _compiling(fn):
        before = sum(fn.stats.cache_misses.values())
        with _stats.timed("compile"):
            fn.compile(sig)  # loads instead if another process compiled it meanwhile
        compiled = sum(fn.stats.cache_misses.values()) > before
    _stats.bump("kernels_compiled" if compiled else "kernels_loaded_from_disk")
    return compiled


# -- background compiles ------------------------------------------------------------------------
@dataclass
class Job:
    sig: tuple
    done: threading.Event = field(default_factory=threading.Event)
    error: str | None = None


_pending: dict[Any, Job] = {}  # kernel dispatcher -> its compile in the worker


def obtain(fn: Any) -> bool:
    """Whether the chunk function ``fn`` has machine code now (loaded or compiled as the compile
    mode says, see the module docstring); False while a worker compiles it."""
    if SIGNATURE in fn.overloads:
        return True
    job = _pending.get(fn)
    if job is not None and not job.done.is_set():
        if get_config().compile != "eager":
            return False
        job.done.wait()  # eager callers (a Dask block) wait for the compile under way
    sig = SIGNATURE
    if load(fn, sig):
        return True
    mode = get_config().compile
    if mode == "off":
        return False
    if mode == "eager" or (job is not None and job.sig == sig):
        _pending.pop(fn, None)
        compile_now(fn, sig)  # the worker failed (or saved where this process cannot read)
        return True
    _pending[fn] = _worker().submit(fn, sig)
    _stats.bump("background_compiles_started")
    return False


def wait(timeout: float | None = None) -> bool:
    """Wait until every background compile this process started is done; False on timeout."""
    deadline = None if timeout is None else time.monotonic() + timeout
    for job in list(_pending.values()):
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        if not job.done.wait(left):
            return False
    return True


# The worker lowers its priority first: importing fusedml alone takes over a second of CPU, which
# at normal priority was taken from the caller's first fit (MLogReg 200k x 10: 0.52 s against
# 0.34 s with no worker).
_BOOT = """\
import contextlib, os, runpy
with contextlib.suppress(OSError):
    os.nice(19)  # the parent's operators run meanwhile: they come first
with contextlib.suppress(AttributeError, OSError):
    # and it runs only on a core they leave idle (nice 19 still took a share of a busy one)
    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
runpy.run_module("fusedml.codegen._worker", run_name="__main__")
"""


class _Worker:
    """The compile worker process and the thread that reads its answers."""

    def __init__(self) -> None:
        package_root = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
        path = os.environ.get("PYTHONPATH")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [package_root, path])))
        self.pid = os.getpid()
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _BOOT],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,  # its numba warnings would interleave with the user's
            env=env,
        )
        self.jobs: dict[int, Job] = {}
        self.ids = itertools.count()
        self.alive = True
        # a thread writes the jobs: a full pipe (the worker busy compiling) never blocks a caller
        self.outbox: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._write, name="fusedml-compile-writer", daemon=True).start()
        threading.Thread(target=self._read, name="fusedml-compile-reader", daemon=True).start()

    def submit(self, fn: Any, sig: tuple) -> Job:
        job = Job(sig)
        jid = next(self.ids)
        self.jobs[jid] = job
        self.outbox.put((jid, get_config().cache_dir, fn.py_func.__module__, _source(fn), sig))
        return job

    def _write(self) -> None:
        while (message := self.outbox.get()) is not None:
            try:
                pickle.dump(message, self.proc.stdin)
                self.proc.stdin.flush()
            except (OSError, ValueError) as exc:  # the worker is gone
                self._finish(message[0], f"compile worker unavailable ({exc})", 0.0, False)
        with contextlib.suppress(OSError, ValueError):
            self.proc.stdin.close()

    def _read(self) -> None:
        try:
            while True:
                self._finish(*pickle.load(self.proc.stdout))
        except (EOFError, OSError, pickle.UnpicklingError):
            pass
        self.alive = False
        for jid in list(self.jobs):
            self._finish(jid, "compile worker exited", 0.0, False)

    def _finish(self, jid: int, error: str | None, seconds: float, compiled: bool) -> None:
        job = self.jobs.pop(jid, None)
        if job is None:
            return
        job.error = error
        if error is None:
            kind = "compiled_in_background" if compiled else "loaded_by_worker"
            _stats.bump(f"kernels_{kind}")
            _stats.add_seconds("background_compile" if compiled else "background_load", seconds)
        job.done.set()

    def close(self) -> None:
        """No more jobs: the worker finishes those it has (filling the disk cache) and exits."""
        self.outbox.put(None)


def _source(fn: Any) -> str:
    return sys.modules[fn.py_func.__module__].__fusedml_source__


_workers: list[_Worker] = []


def _worker() -> _Worker:
    with _lock:
        if not _workers or not _workers[-1].alive or _workers[-1].pid != os.getpid():
            _workers.append(_Worker())  # a forked child cannot use its parent's worker
            if len(_workers) == 1:
                atexit.register(_close_workers)
        return _workers[-1]


def _close_workers() -> None:
    for w in _workers:
        if w.pid == os.getpid():
            w.close()
