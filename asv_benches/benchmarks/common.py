"""Shared benchmark helpers."""

import os
import time

from fusedml.datasets.bodies import BODIES

import fusedml as fm
from fusedml import pipeline


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
