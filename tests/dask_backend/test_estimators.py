"""Estimators fitted on Dask arrays (of numpy, CSR or compressed blocks) under a 2-worker
LocalCluster give the in-memory model, and predictions of Dask data stay Dask arrays."""

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
from fusedml.algorithms import GLM, L2SVM, KMeans, MLogReg

import fusedml as fm
from tests.algorithms.test_compressed_fit import flights_like, labels, model
from tests.runtime.test_backend import _fits

# every step per block, however small the data: no task overhead, wait or transfer costs
DISTRIBUTE = {"dask_task_s": 0.0, "dask_round_trip_s": 0.0, "network_bytes_per_s": 1e30,
              "dask_local_below_bytes": 0.0}  # fmt: skip


def _dask(a, rows=50):
    if a is None:
        return None
    return da.from_array(a, chunks=(rows, *a.shape[1:]), asarray=not sp.issparse(a))


def _local(value):
    return value.compute() if hasattr(value, "dask") else value


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize(("estimator", "X", "y", "result"), _fits())
def test_estimator_on_a_local_cluster_fits_the_in_memory_model(
    client, estimator, X, y, result, fresh_stats
):
    local = getattr(estimator.fit(X, y), result).copy()
    with fm.config(**DISTRIBUTE):  # every step per block, however small the data
        distributed = _local(getattr(estimator.fit(_dask(X), _dask(y)), result))
    assert fresh_stats()["dask_block_tasks"] > 0
    np.testing.assert_allclose(distributed, local, rtol=1e-6, atol=1e-12)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize(
    ("estimator", "X", "y", "result"), [f for f in _fits() if f.id in ("L2SVM", "KMeans")]
)
def test_predictions_of_dask_data_are_dask_arrays(client, estimator, X, y, result):
    estimator.fit(X, y)
    method = estimator.predict
    with fm.config(**DISTRIBUTE):
        got = method(_dask(X))
    assert isinstance(got, da.Array) and got.chunks[0] == _dask(X).chunks[0]
    np.testing.assert_array_equal(got.compute(), method(X))


def _compressed_fits():
    """(estimator, y kind): the row-blocks fits' estimators, on low-cardinality data."""
    return [
        pytest.param(L2SVM(max_iter=5, fit_intercept=True), "binary", id="L2SVM"),
        pytest.param(MLogReg(max_iter=4, fit_intercept=True), "multiclass", id="MLogReg"),
        pytest.param(GLM(max_iter=4), "counts", id="GLM"),
        pytest.param(KMeans(n_clusters=3, n_init=1, random_state=0), None, id="KMeans"),
    ]


def _count_decompressions(rows: int):
    """Counts, in this process, decompressions of compressed matrices of ``rows`` rows or more."""
    original = fm.CompressedMatrix.decompress
    if getattr(original, "counted", None) is not None:
        original.counted[0] = 0
        return
    counted = [0]

    def decompress(self):
        if self.shape[0] >= rows:
            counted[0] += 1
        return original(self)

    decompress.counted = counted
    fm.CompressedMatrix.decompress = decompress


def _decompressions():
    return fm.CompressedMatrix.decompress.counted[0]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize(("estimator", "kind"), _compressed_fits())
def test_estimator_on_compressed_blocks_fits_the_in_memory_model(
    client, estimator, kind, fresh_stats
):
    A, score = flights_like(400)
    y = labels(kind, score)
    local = model(estimator.fit(fm.compress(A), y)).copy()
    blocks = fm.compress(_dask(A, rows=200))  # each block compressed where it lives
    client.run(_count_decompressions, 100)
    with fm.config(**DISTRIBUTE):
        distributed = _local(model(estimator.fit(blocks, y)))
    assert fresh_stats()["dask_block_tasks"] > 0
    assert sum(client.run(_decompressions).values()) == 0  # run on the groups of each block
    np.testing.assert_allclose(distributed, local, rtol=1e-6, atol=1e-12)
