"""Time to scikit-learn's solution per estimator, data set and solver, printed
(``fusedml.objective_bench``: the protocol, the objectives and the data sets).

Run: .venv/bin/python asv_benches/time_to_objective_table.py [--scale 1.0] [--repeat 3]
     [--cases L2SVM:dense,GLM-poisson:sparse,...] [--out results/time_to_objective.json]
"""

import argparse
import json

from fusedml import objective_bench


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cases", default="")
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    cases = objective_bench.CASES
    if args.cases:
        cases = tuple(tuple(c.split(":")) for c in args.cases.split(","))
    records = objective_bench.table(args.scale, args.repeat, cases)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(records, f, indent=1, default=str)


if __name__ == "__main__":
    main()
