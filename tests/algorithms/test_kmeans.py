"""KMeans against SystemDS's kmeans (inertia within 1 %: the random generators differ) and
sklearn's KMeans, and under every fusion mode."""

import numpy as np
import pytest
import scipy.sparse as sp
import sklearn.cluster
from fusedml.algorithms import KMeans

import fusedml as fm
from tests.algorithms.systemds_runs import load, runs


@pytest.mark.parametrize("run", runs("kmeans"), ids=lambda r: r["name"])
def test_inertia_matches_systemds_and_sklearn(run):
    X, _, out = load(run)
    model = KMeans(**run["estimator"]["kwargs"]).fit(X)
    assert abs(model.inertia_ - float(out["wcss"])) <= 0.01 * float(out["wcss"])
    ref = sklearn.cluster.KMeans(n_clusters=5, n_init=5, random_state=0).fit(X)
    assert abs(model.inertia_ - ref.inertia_) <= 0.01 * ref.inertia_
    assert model.score(X) == pytest.approx(-model.inertia_, rel=1e-9)
    # labels are each record's first nearest center
    d = model.transform(X)
    assert np.array_equal(model.labels_, np.argmin(d, axis=1))


@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_every_fusion_mode_gives_the_same_labels(fmt):
    X, _, _ = load(runs("kmeans")[0])
    if fmt == "csr":
        X = sp.csr_array(np.where(X > 2, X, 0.0))
    base = KMeans(n_clusters=5, n_init=2, random_state=3, fusion="none").fit(X)
    for mode in fm.FUSION_MODES[1:]:
        model = KMeans(n_clusters=5, n_init=2, random_state=3, fusion=mode).fit(X)
        assert np.array_equal(model.labels_, base.labels_), mode
        np.testing.assert_allclose(model.cluster_centers_, base.cluster_centers_, rtol=1e-6)
