"""What one run measures: a first call's overheads from ``fm.stats()`` (optimization, compile,
kernels loaded from disk, plans costed, fused operators by template), peak memory, and how far a
mode's result is from the reference mode's."""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

import fusedml as fm
from fusedml.codegen import compiler

# stages of turning a call into a plan and kernel sources (fusedml.pipeline, jit, codegen.cache)
OPTIMIZE_STAGES = ("trace", "dag", "rewrite", "explore", "select", "cplan", "plan", "codegen")
TEMPLATES = ("cell", "row", "magg", "outer", "hand")


def _counts_and_seconds() -> tuple[dict[str, float], dict[str, float]]:
    snapshot = fm.stats()
    seconds = snapshot.pop("seconds")
    return snapshot, seconds


def first_call(fn: Callable[[], Any]) -> tuple[Any, dict[str, float]]:
    """``fn()``'s result and what its call cost beyond running: seconds of the whole call, of
    optimization, compiling and loading kernels, and the counts of kernels compiled and loaded,
    plans costed, fused operator calls run by the interim tier while their kernel compiled, and
    fused operators planned per template.

    Under background compiles the call returns while kernels may still compile; they are waited
    for after the call's clock stops, and their compile seconds (the worker's CPU time) counted."""
    counts0, seconds0 = _counts_and_seconds()
    start = time.perf_counter()
    result = fn()
    total = time.perf_counter() - start
    compiler.wait()
    counts1, seconds1 = _counts_and_seconds()

    def count(name: str) -> int:
        return int(counts1.get(name, 0) - counts0.get(name, 0))

    def secs(*names: str) -> float:
        return sum(seconds1.get(n, 0.0) - seconds0.get(n, 0.0) for n in names)

    costs = {
        "first_s": total,
        "optimize_s": secs(*OPTIMIZE_STAGES),
        "compile_s": secs("compile", "background_compile"),
        "load_s": secs("load"),
        "kernels_compiled": count("kernels_compiled") + count("kernels_compiled_in_background"),
        "ops_awaiting_kernel": count("fused_ops_awaiting_kernel"),
        "kernels_loaded": count("kernels_loaded_from_disk"),
        "plans_costed": count("plans_costed"),
    }
    costs.update({f"ops_{t}": count(f"planned_{t}") for t in TEMPLATES})
    return result, costs


class PeakMemory:
    """Peak resident memory of this process above its level at ``start()``, in MB, read from the
    kernel's high-water mark (reset through /proc/self/clear_refs); None where Linux does not
    offer it. ``start()`` first hands the C heap's free memory back to the system (glibc's
    malloc_trim), or what earlier calls freed would hide this call's allocations."""

    def start(self) -> None:
        if _LIBC is not None:
            _LIBC.malloc_trim(0)
        self._base = _status_kb("VmRSS")
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")  # resets VmHWM to the current RSS
        except OSError:
            self._base = None

    def stop(self) -> float | None:
        if self._base is None:
            return None
        peak = _status_kb("VmHWM")
        return None if peak is None else max(peak - self._base, 0) / 1024


def _libc():
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None


_LIBC = _libc() if sys.platform == "linux" else None


def _status_kb(field: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _arrays(result: Any) -> list[np.ndarray]:
    if isinstance(result, tuple | list):
        return [a for r in result for a in _arrays(r)]
    if sp.issparse(result):
        return [result.toarray()]
    return [np.asarray(result, dtype=np.float64)]


def difference(result: Any, reference: Any) -> float:
    """Largest absolute difference of two results relative to the reference's largest magnitude
    (0 when equal; inf when shapes or the places of NaN and inf differ)."""
    ours, theirs = _arrays(result), _arrays(reference)
    if len(ours) != len(theirs):
        return math.inf
    worst, scale = 0.0, 0.0
    for a, b in zip(ours, theirs, strict=True):
        if a.shape != b.shape:
            return math.inf
        finite = np.isfinite(b)
        same_places = np.array_equal(np.isfinite(a), finite)
        if not same_places or not np.array_equal(a[~finite], b[~finite], equal_nan=True):
            return math.inf
        if finite.any():
            worst = max(worst, float(np.max(np.abs(a[finite] - b[finite]))))
            scale = max(scale, float(np.max(np.abs(b[finite]))))
    return worst / scale if scale > 0 else worst
