"""Threads: generated kernels and numpy's BLAS share one pool of worker threads, which spins
briefly between calls; kernels too small for a parallel launch run on one thread.

Why. numpy and scipy each load their own OpenBLAS (pthreads builds, 2 threads each here). After a
threaded call, OpenBLAS's workers busy-wait (a loop of ``nop``, no yield) for 2**28 cycles, about
0.1 s, before they sleep. A kernel started in that window shares the cores with them: on 2 cores,
3 runnable threads, and a kernel whose chunks are split evenly waits for its slowest thread (up to
2x). Letting idle threads sleep is no cure either: waking a sleeping worker costs 10-150 us on this
machine (a virtual CPU halts when idle), on every kernel and every BLAS call.

The remedy is one pool instead of three:

- numpy's OpenBLAS runs the jobs of a threaded call as an OpenMP team of the libgomp that numba's
  kernels use (OpenBLAS's threads callback, see ``_blas_pool``). BLAS and kernels then never
  compete: whichever runs, runs on the same threads. OpenBLAS's own workers time out once and then
  sleep for good.
- those threads spin about 0.3 ms after each parallel region (``GOMP_SPINCOUNT``): long enough to
  bridge the Python between two calls of an iteration body, short enough to leave the cores to
  others afterwards.

The user's settings win: ``OMP_WAIT_POLICY``/``GOMP_SPINCOUNT`` set by the user are kept; BLAS's
own thread count (``OPENBLAS_NUM_THREADS``, threadpoolctl) still decides how many jobs a call has,
and a numba thread count the user lowered is never raised; ``FUSEDML_BLAS_POOL=0`` leaves BLAS
alone. scipy's OpenBLAS (scipy.linalg, and ``np.dot`` inside numba code) keeps its own workers:
numba code may call it from inside a parallel region, where a nested team has one thread and
level-3 jobs, which wait for each other, would never finish. numpy's copy is only ever called
from Python. A forked child drops the callback (libgomp's threads do not survive a fork).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import glob
import os
import threading
from collections.abc import Iterator

import numba

# ~30 ns per spin here: 10k spins keep an idle worker awake for ~0.3 ms
SPIN_COUNT = 10_000
_SETTERS = (  # numpy's wheels prefix and suffix OpenBLAS's symbols
    "scipy_openblas_set_threads_callback_function64_",
    "scipy_openblas_set_threads_callback_function",
    "openblas_set_threads_callback_function64_",
    "openblas_set_threads_callback_function",
)


def configure_environment() -> None:
    """numba's thread-safe layer, and a short spin for idle OpenMP threads; read when libgomp
    loads (the first parallel kernel), so this runs at import. A user's setting wins."""
    if "NUMBA_THREADING_LAYER" not in os.environ:
        numba.config.THREADING_LAYER = "threadsafe"
    if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
        os.environ["GOMP_SPINCOUNT"] = str(SPIN_COUNT)


configure_environment()

_lock = threading.Lock()
_pool: dict[str, object] = {}  # once tried: "setter", "parts" (kept alive), "why" when not shared


def _numpy_openblas_setter() -> ctypes._CFuncPtr | None:
    """The callback setter of numpy's private OpenBLAS (inside numpy's own package directories),
    found among the libraries already loaded (threadpoolctl would scan every loaded library: a
    twentieth of a second). An OpenBLAS shared with scipy is left alone (module docstring)."""
    import numpy as np

    root = os.path.dirname(os.path.dirname(os.path.abspath(np.__file__)))
    for folder in (os.path.join(root, "numpy.libs"), os.path.join(root, "numpy")):
        for path in sorted(glob.glob(os.path.join(glob.escape(folder), "*openblas*.so*"))):
            try:
                dll = ctypes.CDLL(path, mode=os.RTLD_NOLOAD)  # only if numpy loaded it
            except OSError:
                continue
            for name in _SETTERS:
                setter = getattr(dll, name, None)
                if setter is not None:
                    setter.argtypes, setter.restype = [ctypes.c_void_p], None
                    return setter
    return None


def libgomp() -> ctypes.CDLL | str:
    """The libgomp numba's OpenMP threading layer runs on (the layer loaded first), or why there
    is none."""
    from numba.np.ufunc import parallel

    parallel._launch_threads()  # loads the threading layer (and libgomp)
    if numba.threading_layer() != "omp":
        return f"numba's threading layer is {numba.threading_layer()!r}, not OpenMP"
    try:
        return ctypes.CDLL("libgomp.so.1", mode=os.RTLD_NOLOAD)
    except OSError:
        return "numba's libgomp is not loaded as libgomp.so.1"


def _install() -> str | None:
    """Install the callback; the reason when it cannot be."""
    if os.environ.get("FUSEDML_BLAS_POOL", "1").lower() in ("0", "false", "no"):
        return "FUSEDML_BLAS_POOL=0"
    gomp = libgomp()
    if isinstance(gomp, str):
        return gomp
    setter = _numpy_openblas_setter()
    if setter is None:
        return "numpy's BLAS is not a private OpenBLAS with a threads callback (0.3.28+)"
    from fusedml.runtime import _blas_pool

    parts = _blas_pool.build(gomp)
    _pool["parts"], _pool["setter"] = parts, setter
    setter(parts[1].address)
    return None


def share_blas_pool() -> bool:
    """Run numpy's threaded BLAS calls on the kernels' OpenMP threads (idempotent)."""
    if "tried" not in _pool:
        with _lock:
            if "tried" not in _pool:
                _pool["why"] = _install()
                _pool["tried"] = True
    return _pool["why"] is None


def release_blas_pool() -> None:
    """Give numpy's OpenBLAS its own workers back (the callback's code stays alive: a call may
    still be running in it)."""
    setter = _pool.get("setter")
    if setter is not None and _pool.get("why") is None:
        setter(None)
        _pool["why"] = "released"


def _forget_in_child() -> None:
    setter = _pool.get("setter")
    if setter is not None:
        setter(None)  # OpenBLAS re-creates its own workers after a fork
        _pool["why"] = "forked"


os.register_at_fork(after_in_child=_forget_in_child)


def status() -> dict[str, object]:
    """Whether numpy's BLAS runs on the shared pool (or why not) and how many calls it served."""
    parts = _pool.get("parts")
    from fusedml.runtime._blas_pool import CALLS

    return {
        "shared": _pool.get("why") is None and "tried" in _pool,
        "why_not": _pool.get("why"),
        "blas_calls": int(parts[0][CALLS]) if parts else 0,
        "spin_count": os.environ.get("GOMP_SPINCOUNT"),
    }


_serial_blas = {"depth": 0, "before": 1}
_SCIPY_THREADS = ("scipy_openblas_get_num_threads", "scipy_openblas_set_num_threads")


@functools.cache
def _scipy_openblas_threads() -> tuple | None:
    """(get, set) of the thread count of scipy's private OpenBLAS, the one numba's ``np.dot``
    calls (loaded here through scipy's BLAS module, as numba loads it); None if scipy has none."""
    import scipy
    import scipy.linalg.cython_blas

    root = os.path.dirname(os.path.dirname(os.path.abspath(scipy.__file__)))
    folder = os.path.join(root, "scipy.libs")
    for path in sorted(glob.glob(os.path.join(glob.escape(folder), "*openblas*.so*"))):
        try:
            dll = ctypes.CDLL(path, mode=os.RTLD_NOLOAD)
        except OSError:
            continue
        get, put = (getattr(dll, name, None) for name in _SCIPY_THREADS)
        if get is not None and put is not None:
            get.argtypes, get.restype = [], ctypes.c_int
            put.argtypes, put.restype = [ctypes.c_int], None
            return get, put
    return None


@contextlib.contextmanager
def serial_scipy_blas() -> Iterator[None]:
    """scipy's OpenBLAS on one thread in the block: kernels that call BLAS from their chunks
    (``np.dot`` on a tile) already run one chunk per thread, and a threaded BLAS call inside would
    wake two more workers per call on the same cores. Nested and concurrent blocks restore the
    count when the last one ends."""
    found = _scipy_openblas_threads()
    if found is None:
        yield
        return
    get, put = found
    with _lock:
        if _serial_blas["depth"] == 0:
            _serial_blas["before"] = get()
            put(1)
        _serial_blas["depth"] += 1
    try:
        yield
    finally:
        with _lock:
            _serial_blas["depth"] -= 1
            if _serial_blas["depth"] == 0:
                put(_serial_blas["before"])


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Run the block's parallel kernels on one thread (a count the caller lowered stays)."""
    before = numba.get_num_threads()
    if before == 1:
        yield
        return
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(before)
