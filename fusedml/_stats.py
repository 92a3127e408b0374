"""Process-wide counters and per-stage timings, read with ``fm.stats()``.

Counters only ever grow; ``reset_stats()`` zeroes them (tests use it to count traces or compiles).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_counts: Counter[str] = Counter()
_seconds: Counter[str] = Counter()


def bump(name: str, n: int = 1) -> None:
    with _lock:
        _counts[name] += n


def add_seconds(stage: str, seconds: float) -> None:
    with _lock:
        _seconds[stage] += seconds


@contextmanager
def timed(stage: str) -> Iterator[None]:
    """Add the wall time of the block to ``seconds[stage]``."""
    start = time.perf_counter()
    try:
        yield
    finally:
        elapsed = time.perf_counter() - start
        with _lock:
            _seconds[stage] += elapsed


def stats() -> dict[str, object]:
    """A snapshot: counter name -> count, plus ``"seconds"``: stage name -> seconds spent."""
    with _lock:
        snapshot: dict[str, object] = dict(_counts)
        snapshot["seconds"] = dict(_seconds)
    return snapshot


def reset_stats() -> None:
    with _lock:
        _counts.clear()
        _seconds.clear()
