"""Compiled kernels: an in-memory plan cache and a persistent, content-addressed source cache.

A kernel's source is written to ``<cache_dir>/kernels/k_<sha256>.py`` and imported as a module, so
``numba.njit(cache=True)`` finds the machine code of an earlier process next to it (numba's index
``*.nbi`` and data ``*.nbc`` files in ``__pycache__``). Nothing read from the cache is trusted:

- the module runs the source held in memory, never the file's text; a file that differs from it
  is replaced, and numba's files for it are dropped: numba stamps an index with its source file's
  mtime and size (or, in recent numba, a hash of its content), and a stamp written for other
  content must not match by chance;
- numba reads its files through ``_RepairingCache``: every data file carries a digest, and a file
  that fails to load is a cache miss that removes the damaged files, so the compile saves anew;
- an unwritable kernel directory sends this process's kernels to a private temporary directory,
  with one warning.

Concurrent writers (processes or threads) are safe: every file is written to a unique temporary
name and renamed over its target, and all writers of a file write the same bytes. The threading
layer and the OpenMP threads' idle policy are set in ``fusedml.runtime.threads``.
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import hashlib
import importlib.util
import os
import pickle
import shutil
import sys
import tempfile
import threading
import uuid
import warnings
from collections.abc import Callable, Hashable
from types import ModuleType
from typing import Any

import numba
from numba.core.caching import FunctionCache, IndexDataCacheFile
from numba.core.dispatcher import Dispatcher
from numba.core.runtime import rtsys

from fusedml import _stats
from fusedml._config import get_config
from fusedml._errors import KernelCacheWarning
from fusedml.codegen.source import Kernel

_lock = threading.Lock()
_memory: dict[Hashable, Callable[..., Any]] = {}
_load_lock = threading.Lock()
_directories: dict[str, OSError | None] = {}  # kernel directory -> why it cannot be written
_private: list[str] = []  # this process's temporary kernel directory, once made
_warned: set[str] = set()
_loading = threading.local()  # .only: a disk-cache miss raises NotCached instead of compiling


class NotCached(Exception):
    """Raised inside a ``load_only()`` block when the disk cache has no machine code."""


@contextlib.contextmanager
def load_only():
    """Within the block, a kernel compile that finds nothing in the disk cache raises
    ``NotCached`` (in this thread) instead of compiling."""
    _loading.only = True
    try:
        yield
    finally:
        _loading.only = False


def kernel_dir() -> str:
    return os.path.join(get_config().cache_dir, "kernels")


def _load(source: str) -> Callable[..., Any]:
    return load_module(source).chunk


def load_module(source: str) -> ModuleType:
    """``source`` run as a module backed by its content-addressed file (written if missing or
    different), its numba functions reading their disk cache through ``_RepairingCache``."""
    digest = hashlib.sha256((numba.__version__ + source).encode()).hexdigest()[:32]
    name = f"fusedml_kernel_{digest}"
    with _load_lock:
        if name in sys.modules:
            return sys.modules[name]
        path, written = _place(f"k_{digest}.py", source.encode())
        try:
            module = _execute(name, path, source)
        except Exception as exc:
            exc.add_note(f"kernel file: {path}")
            raise
        _guard_disk_caches(module, discard=written)
        return module


def _execute(name: str, path: str, source: str) -> ModuleType:
    module = importlib.util.module_from_spec(importlib.util.spec_from_file_location(name, path))
    sys.modules[name] = module  # before running: numba's cache must find the module again
    module.__fusedml_source__ = source  # what a compile worker is sent
    try:
        # compiled from memory: the file's text (or a bytecode file of it) never runs
        exec(compile(source, path, "exec", dont_inherit=True), module.__dict__)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _place(filename: str, data: bytes) -> tuple[str, bool]:
    """A path holding ``data`` in the kernel directory, or in this process's private directory if
    the kernel directory cannot be written; and whether the file had to be written."""
    directory = kernel_dir()
    if _can_write(directory):
        path = os.path.join(directory, filename)
        try:
            return path, _ensure_file(path, data)
        except OSError as exc:  # e.g. a full disk
            _directories[directory] = exc
    path = os.path.join(_private_dir(directory), filename)
    return path, _ensure_file(path, data)


def _can_write(directory: str) -> bool:
    if directory not in _directories:
        pycache = os.path.join(directory, "__pycache__")
        try:
            # numba's machine code goes to __pycache__: without it numba would cache elsewhere
            os.makedirs(pycache, exist_ok=True)
            for d in (directory, pycache):
                tempfile.TemporaryFile(dir=d).close()
            _directories[directory] = None
        except OSError as exc:
            _directories[directory] = exc
    return _directories[directory] is None


def _private_dir(unwritable: str) -> str:
    if not _private:
        path = tempfile.mkdtemp(prefix="fusedml-kernels-")
        atexit.register(shutil.rmtree, path, ignore_errors=True)
        _private.append(path)
        _warn_once(
            "private",
            f"kernel cache directory {unwritable} cannot be written ({_directories[unwritable]}); "
            f"this process compiles its kernels in {path} (removed at exit), so later processes "
            "compile them again",
        )
    return _private[0]


def _warn_once(kind: str, message: str) -> None:
    if kind not in _warned:
        _warned.add(kind)
        warnings.warn(message, KernelCacheWarning, stacklevel=2)


def _ensure_file(path: str, data: bytes) -> bool:
    """Make ``path`` hold ``data``; True if it had to be written. Not synced to disk: a file a
    crash leaves damaged is rewritten by the next process that reads it."""
    try:
        with open(path, "rb") as f:
            if f.read(len(data) + 1) == data:
                return False
    except OSError:
        pass  # missing, unreadable or not a file: written below
    tmp = f"{path}.{uuid.uuid4().hex[:16]}.tmp"
    try:
        with open(tmp, "xb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return True


def _guard_disk_caches(module: ModuleType, discard: bool) -> None:
    """Route the disk cache of ``module``'s numba functions through ``_RepairingCache``; with
    ``discard`` the file was just (re)written, so numba's files of earlier contents are dropped."""
    for value in vars(module).values():
        if (
            isinstance(value, Dispatcher)
            and type(value._cache) is FunctionCache
            and value.py_func.__module__ == module.__name__
        ):
            value._cache = _RepairingCache(value.py_func)
            if discard:
                value._cache.discard()


class _CheckedFile(IndexDataCacheFile):
    """numba's index and data files of one function, each data file led by the sha256 of the
    rest: a damaged one is detected instead of loaded (numba's pickle alone misses bit flips)."""

    def _save_data(self, name: str, data: Any) -> None:
        payload = self._dump(data)
        with self._open_for_write(self._data_path(name)) as f:
            f.write(hashlib.sha256(payload).digest())
            f.write(payload)

    def _load_data(self, name: str) -> Any:
        path = self._data_path(name)
        with open(path, "rb") as f:
            digest, payload = f.read(32), f.read()
        if hashlib.sha256(payload).digest() != digest:
            raise ValueError(f"{path}: content does not match its digest")
        return pickle.loads(payload)


class _RepairingCache(FunctionCache):
    """numba's disk cache of one function, where a file that fails to load (numba raises) is a
    miss that removes the function's files, so the compile that follows saves them afresh, and a
    failed save costs only the copy for later processes (numba would fail the call)."""

    def __init__(self, py_func: Callable[..., Any]) -> None:
        super().__init__(py_func)
        stamp = self._cache_file._source_stamp
        self._cache_file = _CheckedFile(self._cache_path, self._impl.filename_base, stamp)

    def load_overload(self, sig: Any, target_context: Any) -> Any:
        # numba's load_overload first refreshes the target context: it loads every typing and
        # lowering registry (half a second, once per process), which only compiling needs.
        # Machine code from the disk needs only numba's runtime (NRT), so a process that only
        # loads kernels skips the rest (a compile later in the process refreshes it itself).
        try:
            rtsys.initialize(target_context)
            found = self._load_overload(sig, target_context)
        except Exception:
            self.discard()
            _stats.bump("kernel_cache_repairs")
            found = None
        if found is None and getattr(_loading, "only", False):
            raise NotCached  # numba would compile next
        return found

    def save_overload(self, sig: Any, data: Any) -> None:
        try:
            super().save_overload(sig, data)
        except Exception as exc:
            self.discard()
            _warn_once("save", f"compiled kernels cannot be saved in {self._cache_path} ({exc})")

    def discard(self) -> None:
        stem = os.path.join(self._cache_path, self._impl.filename_base)
        for path in [f"{stem}.nbi", *glob.glob(f"{glob.escape(stem)}.*.nbc")]:
            with contextlib.suppress(OSError):
                os.remove(path)


def get_kernel(key: Hashable, make: Callable[[], str]) -> Callable[..., Any]:
    """The chunk function of the kernel module for ``key`` (its source made, written and imported
    on the first request)."""
    with _lock:
        found = _memory.get(key)
        if found is not None:
            _stats.bump("kernel_cache_hits")
            return found
        with _stats.timed("codegen"):
            source = make()
            if get_config().debug >= 4:
                print(f"--- generated kernel {key!r}\n{source}", file=sys.stderr)
            fn = _load(source)
            # machine code comes only through ``codegen.compiler`` (the launcher calls the chunk
            # function by address): an accidental Python call raises TypeError, never compiles
            fn._can_compile = False
        _memory[key] = fn
        _stats.bump("kernels_generated")
        return fn


def python_functions(kernel: Kernel) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """A kernel module's ``setup`` and ``finish``: plain Python, run from its source in memory
    (nothing of them is compiled or cached on disk)."""
    namespace: dict[str, Any] = {}
    exec(compile(kernel.python_source(), "<fusedml kernel setup>", "exec"), namespace)
    return namespace["setup"], namespace["finish"]


def kernel_file(fn: Any) -> str | None:
    """The file a compiled kernel was defined in."""
    code = getattr(getattr(fn, "py_func", None), "__code__", None)
    return code.co_filename if code is not None else None
