"""Shared benchmark helpers."""

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
