"""Hand-written fused operators (``fusion="hand"``, the paper's Fused) beside the cost-based
generated plan of the same expression (Gen) and operator-at-a-time numpy/scipy (Base), on every
hand operator's pattern: dense 1M x 20 and CSR 200k x 1000 at 1% (low-rank patterns: dense
4000 x 1000 and CSR 20k x 5k at 1%, rank 10), rows scaled by 0.002 in the fast profile."""

from fusedml.datasets import HAND_PATTERNS, hand_data

import fusedml as fm

from .common import PROFILE

MODES = ("hand", "cost_based", "none")
SCALE = {"fast": 0.002, "regular": 1.0, "large": 1.0}[PROFILE.name]


class HandOperators:
    timeout = 900
    params = (list(HAND_PATTERNS), ["dense", "sparse"], list(MODES))
    param_names = ["pattern", "data", "fusion"]

    def setup(self, pattern, data, fusion):
        p = HAND_PATTERNS[pattern]
        self.expr = p.build(hand_data(p, data, scale=SCALE))
        self.fusion = fusion
        fm.evaluate(self.expr, fusion=fusion)  # trace, optimize, compile outside the timing

    def time_evaluate(self, pattern, data, fusion):
        fm.evaluate(self.expr, fusion=self.fusion)

    def track_hand_operators(self, pattern, data, fusion):
        return len(fm.explain(self.expr, fusion=fusion).hand_operators)
