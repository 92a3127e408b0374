"""Wall-clock timing of callables, for the CLI's tables, calibration and the benchmarks: one call's
seconds, and medians of repeated calls after an untimed warm-up call, optionally each started on
an idle process."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

K = TypeVar("K")


def call_seconds(fn: Callable[[], Any]) -> float:
    """Seconds one call of ``fn`` takes."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def median_seconds(fn: Callable[[], Any], repeat: int, warm_up: bool = True) -> float:
    """Median seconds of ``repeat`` calls, after one untimed call unless ``warm_up`` is False
    (the caller made it): first-call costs (compiles, page faults, cold caches) are not timed."""
    return interleaved_median_seconds({None: fn}, repeat, warm_up)[None]


def interleaved_median_seconds(
    fns: Mapping[K, Callable[[], Any]], repeat: int, warm_up: bool = True, settle: bool = False
) -> dict[K, float]:
    """Median seconds per key, after one untimed call of each. The calls are timed in turns (round
    r calls every function once), so that the noise of a shared machine hits every key alike.
    With ``settle``, each timed call waits for ``idle()`` first: functions of different libraries
    then do not pay for each other's lingering threads."""
    if warm_up:
        for fn in fns.values():
            fn()
    times: dict[K, list[float]] = {key: [] for key in fns}
    for _ in range(repeat):
        for key, fn in fns.items():
            if settle:
                idle()
            times[key].append(call_seconds(fn))
    return {key: statistics.median(t) for key, t in times.items()}


def idle(timeout: float = 1.0, window: float = 0.01, busy: float = 0.1) -> bool:
    """Wait until this process's threads use less than ``busy`` of a core over ``window`` seconds
    (True), or ``timeout`` seconds passed (False). A thread pool may spin on after the call that
    woke it has returned: scipy's OpenBLAS workers keep one core busy for 50-100 ms after
    scikit-learn's L-BFGS-B fits."""
    end = time.perf_counter() + timeout
    while time.perf_counter() < end:
        cpu, wall = time.process_time(), time.perf_counter()
        time.sleep(window)
        if time.process_time() - cpu < busy * (time.perf_counter() - wall):
            return True
    return False
