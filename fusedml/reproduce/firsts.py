"""A cold-pass worker of ``fusedml reproduce``, run as ``python -m fusedml.reproduce.firsts
MODES_JSON``: reads one case (JSON) per line from stdin and answers each with one JSON line, the
first-call costs of every mode (``measure.first_call``)."""

from __future__ import annotations

import json
import sys
import warnings

from sklearn.exceptions import ConvergenceWarning

from fusedml.reproduce.experiments import EXPERIMENTS, Case
from fusedml.reproduce.measure import first_call


def main() -> None:
    modes = json.loads(sys.argv[1])
    warnings.simplefilter("ignore", ConvergenceWarning)  # fixed iteration budgets
    for line in sys.stdin:
        case = Case(**json.loads(line))
        experiment = EXPERIMENTS[case.experiment]
        data = experiment.inputs(case)
        costs = {}
        for mode in modes:
            if not experiment.skip(case, mode):
                _, costs[mode] = first_call(lambda e=experiment, d=data, m=mode: e.run(d, m))
        print(json.dumps(costs), flush=True)


if __name__ == "__main__":
    main()
