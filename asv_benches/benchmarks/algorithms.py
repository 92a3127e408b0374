"""Estimator fit time per fusion mode beside scikit-learn's equivalent (fusedml.estimator_bench):
dense 1M x 10, sparse 200k x 1000 at 1 %, ALS-CG on a Netflix-like 12k x 17770 ratings matrix."""

import fusedml as fm
from fusedml import estimator_bench as eb

_loaded: dict = {}


def _case(name, data):
    if (name, data) not in _loaded:
        _loaded.clear()  # hold one data set at a time
        _loaded[name, data] = eb.case(name, data, 1.0)
    return _loaded[name, data]


class FitTime:
    timeout = 1800
    number = 1
    repeat = 3
    params = (list(eb.SPECS), ["dense", "sparse", "ratings"], [*fm.FUSION_MODES, "sklearn"])
    param_names = ["estimator", "data", "fusion"]

    def setup(self, name, data, fusion):
        if data not in eb.data_sets(name) or (
            fusion == "sklearn" and eb.SPECS[name].sklearn is None
        ):
            raise NotImplementedError  # asv: skip
        self.X, self.y = _case(name, data)
        if fusion == "sklearn":
            self.estimator = eb.SPECS[name].sklearn()
        else:
            self.estimator = eb.SPECS[name].make(fusion)
            self.estimator.fit(self.X, self.y)  # trace, optimize, compile outside the timing

    def time_fit(self, name, data, fusion):
        self.estimator.fit(self.X, self.y)
