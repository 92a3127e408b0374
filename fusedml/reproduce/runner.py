"""Runs experiments in two passes.

Cold: each case's first calls (every mode: tracing, optimization, compiling its kernels into a
fresh kernel cache unless told to reuse the configured one) run in worker processes, one per core,
which take cases from a queue: compiling is what a cold start costs, one numba compile uses one
core, and the workers' processes are as new as a user's. Measure: this process then makes each
case's data once, a first call per mode (``warm_*``: kernels now loaded from the disk cache),
``repeat`` timed calls with the modes in turns, and compares every mode's result to the reference
mode's. Records are plain dicts, one per case and mode; Ctrl-C stops after the cases done.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import statistics
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field

from sklearn.exceptions import ConvergenceWarning

import fusedml as fm
from fusedml._timing import call_seconds
from fusedml.reproduce.experiments import EXPERIMENTS, FORMATS, Case, Experiment
from fusedml.reproduce.measure import PeakMemory, difference, first_call
from fusedml.select.constants import CALIBRATION_FILE

REFERENCE_MODE = "none"  # the paper's Base: every mode's result is compared to its result


@dataclass
class Options:
    preset: str = "quick"
    experiments: tuple[str, ...] = tuple(EXPERIMENTS)
    modes: tuple[str, ...] = fm.FUSION_MODES
    formats: tuple[str, ...] = FORMATS
    repeat: int = 3
    out: str = "reproduce-results"
    fresh_cache: bool = True  # compile into a new kernel cache (cold) instead of the configured
    cold: bool = True  # the first calls in worker processes (else only in this one)
    progress: bool = True
    workers: int = 0  # processes of the cold pass (0: one per core, at most 4)
    cold_compile: str = "background"  # the cold pass's compile mode (fm.config(compile=...))


@dataclass
class Outcome:
    records: list[dict] = field(default_factory=list)
    interrupted: bool = False
    seconds: float = 0.0
    cache_dir: str = ""


def planned_cases(options: Options, experiments: dict[str, Experiment]) -> list[Case]:
    cases = []
    for name in options.experiments:
        for case in experiments[name].cases(options.preset):
            if case.format in options.formats:
                cases.append(case)
    return cases


def run(options: Options, experiments: dict[str, Experiment] = EXPERIMENTS) -> Outcome:
    """Every case of ``options``; the records of those done when Ctrl-C came."""
    outcome = Outcome()
    start = time.perf_counter()
    cases = planned_cases(options, experiments)
    with (
        _kernel_cache(options) as cache_dir,
        fm.config(cache_dir=cache_dir, compile="eager"),
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore", ConvergenceWarning)  # fixed iteration budgets
        outcome.cache_dir = cache_dir
        try:
            cold = first_calls_elsewhere(cases, options, cache_dir) if options.cold else {}
            for case in _progress(cases, options.progress, "measure"):
                experiment = experiments[case.experiment]
                outcome.records += run_case(experiment, case, options, cold.get(case.key))
        except KeyboardInterrupt:
            outcome.interrupted = True
    outcome.seconds = time.perf_counter() - start
    return outcome


@contextlib.contextmanager
def _kernel_cache(options: Options) -> Iterator[str]:
    configured = fm.get_config().cache_dir
    if not options.fresh_cache:
        yield configured
        return
    fresh = os.path.join(os.path.abspath(options.out), "kernel-cache")
    shutil.rmtree(fresh, ignore_errors=True)
    os.makedirs(fresh)
    calibration = os.path.join(configured, CALIBRATION_FILE)
    if os.path.exists(calibration):  # this machine's cost-model constants, if measured
        shutil.copy(calibration, fresh)
    yield fresh


def _progress(items: Iterable, show: bool, desc: str, total: int | None = None) -> Iterable:
    """``items`` with a progress bar and the estimated time left (tqdm, when installed)."""
    if not show:
        return items
    try:
        from tqdm import tqdm
    except ImportError:  # the reproduce extra is not installed: no bar
        return items
    return tqdm(items, desc=desc, total=total, unit="case", file=sys.stderr, dynamic_ncols=True)


def run_case(
    experiment: Experiment, case: Case, options: Options, cold: dict | None = None
) -> list[dict]:
    """The records of one case, one per mode (a mode that cannot run it has a skip reason).
    ``cold``: each mode's first-call costs from the cold pass; this process's first calls are
    then the warm ones."""
    start = time.perf_counter()
    data = experiment.inputs(case)
    base = {**asdict(case), "kind": experiment.kind, "title": experiment.title,
            "shape": _shape(data), "data_s": time.perf_counter() - start}  # fmt: skip
    records, calls, results = {}, {}, {}
    for mode in options.modes:
        reason = experiment.skip(case, mode)
        records[mode] = {**base, "mode": mode, "skipped": reason or ""}
        if reason:
            continue
        call = calls[mode] = lambda m=mode: experiment.run(data, m)
        results[mode], costs = first_call(call)
        if cold is None:
            records[mode].update(costs)
        else:
            records[mode].update(cold.get(mode, {}))
            records[mode].update({f"warm_{k}": v for k, v in costs.items()})
    times, peaks = _timed(calls, options.repeat)
    reference = results.get(REFERENCE_MODE, next(iter(results.values()), None))
    for mode, result in results.items():
        diff = difference(result, reference)
        records[mode].update(
            median_s=statistics.median(times[mode]), times_s=times[mode], peak_mb=peaks[mode],
            difference=diff, agrees=diff <= experiment.tol,
        )  # fmt: skip
    return list(records.values())


def _timed(calls: dict, repeat: int) -> tuple[dict[str, list[float]], dict[str, float | None]]:
    """Seconds of ``repeat`` calls per mode, the modes in turns (the machine's noise hits all
    alike), and each mode's peak memory during its last call."""
    times: dict[str, list[float]] = {m: [] for m in calls}
    peaks: dict[str, float | None] = {}
    memory = PeakMemory()
    for r in range(repeat):
        for mode, call in calls.items():
            if r == repeat - 1:
                memory.start()
            times[mode].append(call_seconds(call))
            if r == repeat - 1:
                peaks[mode] = memory.stop()
    return times, peaks


def _shape(data) -> str:
    """Rows x columns of a case's data matrix (its inputs' first element)."""
    rows, cols = data[0].shape
    return f"{rows}x{cols}"


# ------------------------------------------------------ the cold pass, in worker processes
def first_calls_elsewhere(cases: list[Case], options: Options, cache_dir: str) -> dict:
    """case key -> mode -> first-call costs, measured by worker processes
    (``fusedml.reproduce.firsts``) that take the cases one at a time."""
    workers = options.workers or min(len(os.sched_getaffinity(0)), 4)
    todo: queue.Queue = queue.Queue()
    for case in sorted(cases, key=_expected_compile, reverse=True):
        todo.put(case)  # the longest first, so that no worker is left with one at the end
    done: queue.Queue = queue.Queue()
    env = dict(os.environ, FUSEDML_CACHE_DIR=cache_dir, FUSEDML_COMPILE=options.cold_compile)
    modes = json.dumps(list(options.modes))
    children = [
        subprocess.Popen([sys.executable, "-m", "fusedml.reproduce.firsts", modes],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True)
        for _ in range(min(workers, len(cases)))
    ]  # fmt: skip
    threads = [threading.Thread(target=_feed, args=(c, todo, done), daemon=True)
               for c in children]  # fmt: skip
    for t in threads:
        t.start()
    found = {}
    try:
        for _ in _progress(range(len(cases)), options.progress, "cold start"):
            key, costs = done.get()
            if key is None:
                raise RuntimeError(f"a cold-pass worker failed: {costs}")
            found[key] = costs
    finally:
        for child in children:
            with contextlib.suppress(OSError):
                child.stdin.close()
            child.wait()
    return found


def _expected_compile(case: Case) -> int:
    """A rank of how long a case's cold first calls take: fits compile more kernels than
    micro-benchmarks, and compressed kernels take longest."""
    return (case.format == "compressed") + 2 * (case.data != "generated")


def _feed(child: subprocess.Popen, todo: queue.Queue, done: queue.Queue) -> None:
    """Hand ``child`` cases until none is left; put each answer (or the failure) on ``done``."""
    while True:
        try:
            case = todo.get_nowait()
        except queue.Empty:
            return
        try:
            child.stdin.write(json.dumps(asdict(case)) + "\n")
            child.stdin.flush()
            line = child.stdout.readline()
            done.put((case.key, json.loads(line)))
        except (OSError, ValueError) as exc:
            done.put((None, f"{case.key}: {exc!r}"))
            return
