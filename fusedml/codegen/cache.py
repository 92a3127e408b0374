"""Compiled kernels: an in-memory plan cache and a persistent, content-addressed source cache.

A kernel's source is written to ``<cache_dir>/kernels/k_<sha256>.py`` (never rewritten: its mtime
is numba's cache stamp) and imported as a module, so ``numba.njit(cache=True)`` finds the machine
code of an earlier process next to it. A file that fails to import is deleted and written again;
numba itself discards stale cache entries. Threading: the ``threadsafe`` numba layer (OpenMP or
TBB) unless NUMBA_THREADING_LAYER says otherwise, so kernels can run from several Python threads.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import threading
from collections.abc import Callable, Hashable
from types import ModuleType
from typing import Any

import numba

from fusedml import _stats
from fusedml._config import get_config
from fusedml.codegen.skeletons import Kernel

if "NUMBA_THREADING_LAYER" not in os.environ:
    numba.config.THREADING_LAYER = "threadsafe"
# Idle OpenMP workers sleep instead of spinning: kernels alternate with numpy/BLAS calls whose own
# threads then compete with spinning workers for the cores (2-5x slower iteration bodies on this
# 2-core machine). Read when libgomp loads (the first parallel kernel); a user's setting wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

_lock = threading.Lock()
_memory: dict[Hashable, tuple[Callable[..., Any], Kernel]] = {}


def kernel_dir() -> str:
    return os.path.join(get_config().cache_dir, "kernels")


def _load(source: str) -> Callable[..., Any]:
    return load_module(source).kernel


def load_module(source: str) -> ModuleType:
    """``source`` imported from its content-addressed file (written on first use)."""
    digest = hashlib.sha256((numba.__version__ + source).encode()).hexdigest()[:32]
    name = f"fusedml_kernel_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    directory = kernel_dir()
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"k_{digest}.py")
    for attempt in range(2):
        if not os.path.exists(path):
            tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
            with open(tmp, "w") as f:
                f.write(source)
            os.replace(tmp, path)
        try:
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module  # before exec: numba's cache must find the module again
            spec.loader.exec_module(module)
            return module
        except Exception:
            sys.modules.pop(name, None)
            if attempt:
                raise
            os.remove(path)  # corrupt or foreign file: write it again
    raise AssertionError("unreachable")


def get_kernel(key: Hashable, make: Callable[[], Kernel]) -> tuple[Callable[..., Any], Kernel]:
    """The compiled kernel for ``key`` (made, written and imported on the first request)."""
    with _lock:
        found = _memory.get(key)
        if found is not None:
            _stats.bump("kernel_cache_hits")
            return found
        with _stats.timed("codegen"):
            kernel = make()
            fn = _load(kernel.source)
        _memory[key] = (fn, kernel)
        _stats.bump("kernels_generated")
        return fn, kernel


def record_compile(fn: Any) -> None:
    """After a kernel's first call: count whether numba compiled it or loaded it from disk."""
    stats = getattr(fn, "stats", None)
    if stats is not None:
        _stats.bump("kernels_compiled", sum(stats.cache_misses.values()))
        _stats.bump("kernels_loaded_from_disk", sum(stats.cache_hits.values()))
