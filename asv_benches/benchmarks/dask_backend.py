"""Fits on a 2-worker LocalCluster beside the in-memory fit of the same data: L2SVM and a Poisson
GLM at a fixed number of iterations, X of the profile's micro rows x 20 drawn on the workers,
dense or compressed (normal draws rounded to halves; compressed per block on the workers).
``asv_benches/dask_scaling.py`` runs the same comparison over growing sizes (and the per-task,
round-trip and transfer costs the placement rule uses)."""

import warnings

import dask
import dask.array as da
import numpy as np
from fusedml.algorithms import GLM, L2SVM
from sklearn.exceptions import ConvergenceWarning

import fusedml as fm

from .common import PROFILE

MAKERS = {
    "L2SVM": lambda: L2SVM(max_iter=5, tol=0.0),
    "GLM-poisson": lambda: GLM(family="poisson", max_iter=3, tol=0.0),
}


class Fits:
    params = (list(MAKERS), ["in-memory", "dask"], ["dense", "compressed"])
    param_names = ["estimator", "path", "format"]
    timeout = 600
    repeat = (1, 3, 60.0)
    number = 1

    def setup(self, estimator, path, format):
        from distributed import Client, LocalCluster

        warnings.simplefilter("ignore", ConvergenceWarning)
        self.cluster = LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        )
        self.client = Client(self.cluster)
        rows = PROFILE.rows
        X = da.random.default_rng(0).standard_normal((rows, 20), chunks=(max(rows // 4, 1), 20))
        if format == "compressed":
            X = da.round(X * 2) / 2
        eta = X @ np.linspace(-1.0, 1.0, 20) / np.sqrt(20)
        y = (eta > 0).astype(np.float64) if estimator == "L2SVM" else da.floor(2 * da.exp(eta))
        X, y = dask.persist(X, y)
        if path == "in-memory":
            X, y = X.compute(), y.compute()
        if format == "compressed":
            X = fm.compress(X)
            X = X.persist() if path == "dask" else X
        self.X, self.y, self.make = X, y, MAKERS[estimator]
        self.make().fit(X, y)  # kernels compiled in every process, plans cached

    def teardown(self, estimator, path, format):
        self.client.close()
        self.cluster.close()

    def time_fit(self, estimator, path, format):
        self.make().fit(self.X, self.y)
