"""Shared benchmark helpers: the profile (data sizes), the data store of ``setup_cache`` and the
skip convention.

The profile comes from ``FUSEDML_BENCH_PROFILE`` (as scikit-learn's ``SKLBENCH_PROFILE``):

- ``fast``: tiny data (2,000-row patterns, fits at ``fusedml reproduce --tiny`` scale), every
  combination; for smoke runs (``make bench-smoke``, CI);
- ``regular`` (default): 200k-row patterns, fits at ``--quick`` scale (``make bench``);
- ``large``: 2M-row patterns, fits at ``--full`` scale (dense 1M x 10, CSR 200k x 1000).
"""

from __future__ import annotations

import os
import pickle
import time
from dataclasses import dataclass

from fusedml.datasets.bodies import BODIES

import fusedml as fm
from fusedml import pipeline

FORMATS = ("dense", "csr", "compressed")
MODES = fm.FUSION_MODES  # none (Base), hand (Fused), fuse_all, fuse_no_redundancy, cost_based (Gen)


@dataclass(frozen=True)
class Profile:
    name: str
    preset: str  # fusedml reproduce's preset of the fits' data scales (experiments.FIT_SCALES)
    rows: int  # rows of the micro-benchmark patterns
    outer_rows: int  # the Outer pattern's (its unfused plan materializes (rows/10) x (rows/40))
    first_fit_rows: tuple[int, ...]  # dense rows of the first-fit (cold start) benchmarks
    repeat: tuple[int, int, float]  # asv's (min repeat, max repeat, max seconds) of timings


PROFILES = {
    p.name: p
    for p in (
        Profile("fast", "tiny", 2_000, 2_000, (2_000,), (1, 1, 1.0)),
        Profile("regular", "quick", 200_000, 100_000, (20_000, 200_000), (1, 5, 20.0)),
        Profile("large", "full", 2_000_000, 400_000, (20_000, 200_000, 1_000_000), (1, 5, 60.0)),
    )
}


def profile() -> Profile:
    name = os.environ.get("FUSEDML_BENCH_PROFILE", "regular")
    if name not in PROFILES:
        raise ValueError(f"FUSEDML_BENCH_PROFILE must be one of {list(PROFILES)}, got {name!r}")
    return PROFILES[name]


PROFILE = profile()


def skip(reason: str):
    """asv marks a benchmark whose setup raises NotImplementedError as skipped (n/a)."""
    raise NotImplementedError(reason)


def store(key: str, value) -> str:
    """Pickle ``value`` into the working directory (asv runs ``setup_cache`` and the benchmarks of
    its class in one directory) and return the file name: a benchmark process then loads only its
    own case, so its peak memory holds no other case's data."""
    path = f"{key}.pkl".replace("/", "_").replace(" ", "_")
    with open(path, "wb") as f:
        pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL)
    return path


def fetch(path: str):
    with open(path, "rb") as f:
        return pickle.load(f)


def body_dag(name: str, rows: int):
    """The rewritten DAG of one iteration body, traced with data of ``rows`` rows."""
    fn, make = BODIES[name]
    plan = fm.jit(fn).explain(*make(rows), fusion="none")
    return plan.dag


def optimize(dag, policy: str):
    """Exploration + selection (no CPlan construction, no code generation)."""
    memo = pipeline.explore(dag)
    return pipeline.POLICIES[policy](memo, pipeline.cost_model())


def wait_for_compile_workers(timeout: float = 600.0) -> None:
    """Wait until no fusedml compile worker runs on this machine (one left by an earlier process
    finishes its compiles after that process exits, and would share the cores with a timing)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _compile_workers():
        time.sleep(0.1)


def _compile_workers() -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"fusedml.codegen._worker" in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found
