"""Time to scikit-learn's solution (``fusedml.objective_bench``): per estimator, data set and
solver, fusedml's fit at the smallest iteration budget reaching scikit-learn's objective value
(``track_budget``, found once per class in ``setup_cache``) and scikit-learn's own fit."""

from __future__ import annotations

from fusedml import objective_bench as ob

from .common import PROFILE, skip

SCALES = {"fast": 0.02, "regular": 0.1, "large": 1.0}
CASES = [f"{estimator}:{data}" for estimator, data in ob.CASES]
SOLVERS = ["default", "lbfgs", "newton"]


class TimeToObjective:
    params = (CASES, SOLVERS)
    param_names = ["case", "solver"]
    timeout = 1800
    repeat = PROFILE.repeat
    number = 1

    def setup_cache(self):
        """The budget per (case, solver), None where the solver does not exist or never reaches
        the target."""
        budgets = {}
        for case in CASES:
            estimator, data = case.split(":")
            race = ob.RACES[estimator]
            try:
                X, y = ob.data(data, race.labels, SCALES[PROFILE.name])
            except ImportError:  # a real data set whose package is not installed
                continue
            target, _ = ob.target_of(race, X, y)
            for solver in race.solvers:
                budgets[case, solver] = ob.smallest_budget(race, solver, X, y, target)[0]
        return budgets

    def setup(self, budgets, case, solver):
        self.budget = budgets.get((case, solver))
        if self.budget is None:
            skip(f"{case}: no solver {solver!r}, no data (package missing) or target not reached")
        estimator, data = case.split(":")
        self.race = ob.RACES[estimator]
        self.X, self.y = ob.data(data, self.race.labels, SCALES[PROFILE.name])
        self.solver = solver
        self.time_fusedml(budgets, case, solver)  # kernels compiled, plans cached

    def time_fusedml(self, budgets, case, solver):
        ob.fit(lambda: self.race.ours(self.solver, self.budget), self.X, self.y)

    def time_sklearn(self, budgets, case, solver):
        ob.fit(lambda: self.race.sklearn(self.X.shape[0]), self.X, self.y)

    def track_budget(self, budgets, case, solver):
        return self.budget
