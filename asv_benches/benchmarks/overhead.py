"""What a fit's first call costs beyond running, per estimator x format x fusion mode: plans
costed, optimizer milliseconds and fused operators planned per template; and the per-call overhead
of a jit body on tiny inputs. (``coldstart.py`` times whole first fits in new processes: cold
compile, background tier, warm cache; ``optimizer.py`` times exploration and selection alone.)

The first calls run in new processes (``fusedml.reproduce.firsts``, the cold pass of ``fusedml
reproduce``), one per estimator and format, so no plan made for another case is reused."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import asdict

import numpy as np

import fusedml as fm
from fusedml.reproduce.experiments import EXPERIMENTS, FITS, generated_case
from fusedml.reproduce.measure import TEMPLATES

from .common import FORMATS, MODES, PROFILE

ESTIMATORS = tuple(e.name for e in FITS)


def first_calls(estimator: str, fmt: str) -> dict[str, dict[str, float]]:
    """mode -> first-fit costs (``measure.first_call``) of one estimator on one format, measured in
    a new process."""
    case = generated_case(EXPERIMENTS[estimator], fmt, PROFILE.preset)
    done = subprocess.run(
        [sys.executable, "-m", "fusedml.reproduce.firsts", json.dumps(list(MODES))],
        input=json.dumps(asdict(case)) + "\n", capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(done.stdout.splitlines()[-1])


class FirstCall:
    """asv ``track_``: per estimator x format x mode, from the first fit of a new process."""

    params = (list(ESTIMATORS), list(FORMATS), list(MODES))
    param_names = ["estimator", "format", "fusion"]
    timeout = 3600

    def setup_cache(self):
        return {
            f"{e}/{f}/{m}": costs
            for e in ESTIMATORS
            for f in FORMATS
            for m, costs in first_calls(e, f).items()
        }

    def _get(self, costs, estimator, fmt, mode, key):
        return costs[f"{estimator}/{fmt}/{mode}"][key]

    def track_plans_costed(self, costs, estimator, fmt, mode):
        return self._get(costs, estimator, fmt, mode, "plans_costed")

    def track_optimizer_ms(self, costs, estimator, fmt, mode):
        """Tracing, DAG rewrites, exploration, selection and kernel source generation."""
        return self._get(costs, estimator, fmt, mode, "optimize_s") * 1e3

    track_plans_costed.unit = "plans"
    track_optimizer_ms.unit = "ms"


def _operators(template: str):
    def track(self, costs, estimator, fmt, mode):
        return self._get(costs, estimator, fmt, mode, f"ops_{template}")

    track.unit = "operators"
    track.__name__ = f"track_{template}_operators"
    track.__doc__ = f"Fused operators of the {template} template the first fit planned."
    return track


for _template in TEMPLATES:  # track_cell_operators, ..., track_hand_operators (fusion="hand")
    setattr(FirstCall, f"track_{_template}_operators", _operators(_template))


class CallOverhead:
    """Per-call overhead of a jit body on tiny inputs (the kernels' own time is negligible)."""

    params = (["fuse_all", "cost_based"],)
    param_names = ["fusion"]

    def setup(self, fusion):
        self.step = fm.jit(fusion=fusion)(lambda X, y: (fm.sum(X * y), fm.sum(fm.exp(X), axis=1)))
        self.X, self.y = np.ones((4, 3)), np.ones(3)
        self.step(self.X, self.y)

    def time_tiny_call(self, fusion):
        self.step(self.X, self.y)
