"""Optimizer overhead: OFMC exploration plus plan selection on the paper's iteration bodies
(the target: under 50 ms for the largest)."""

from .common import body_dag, optimize


class Optimizer:
    params = (["glm_binomial_probit", "mlogreg"], [10_000, 1_000_000],
              ["fuse_all", "fuse_no_redundancy", "cost_based"])  # fmt: skip
    param_names = ["body", "rows", "policy"]
    timeout = 300

    def setup(self, body, rows, policy):
        self.dag = body_dag(body, rows)
        optimize(self.dag, policy)  # warm-up: imports, first-call overheads

    def time_optimize(self, body, rows, policy):
        optimize(self.dag, policy)


class SearchSpace:
    params = (["glm_binomial_probit", "mlogreg"], [10_000, 1_000_000])
    param_names = ["body", "rows"]

    def setup(self, body, rows):
        self.stats = optimize(body_dag(body, rows), "cost_based").stats

    def track_interesting_points(self, body, rows):
        return self.stats.interesting_points

    def track_plans_without_pruning(self, body, rows):
        return 2**self.stats.interesting_points

    def track_plans_enumerated(self, body, rows):
        return self.stats.plans_total

    def track_plans_costed(self, body, rows):
        return self.stats.plans_costed

    track_interesting_points.unit = "points"
    track_plans_without_pruning.unit = "plans"
    track_plans_enumerated.unit = "plans"
    track_plans_costed.unit = "plans"
