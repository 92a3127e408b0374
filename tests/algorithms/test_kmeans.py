"""KMeans against SystemDS's kmeans (inertia within 1 %: the random generators differ) and
sklearn's KMeans, and under every fusion mode."""

import numpy as np
import pytest
import sklearn.cluster
from fusedml.algorithms import KMeans

import fusedml as fm
from tests.algorithms.systemds_runs import load, runs
from tests.formats import FORMATS, csr


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


@pytest.mark.parametrize("to_format", FORMATS)
def test_every_fusion_mode_gives_the_same_labels(to_format):
    X, _, _ = load(runs("kmeans")[0])
    if to_format is csr:  # zeros for CSR to skip
        X = np.where(X > 2, X, 0.0)
    X = to_format(X)
    base = KMeans(n_clusters=5, n_init=2, random_state=3, fusion="none").fit(X)
    for mode in fm.FUSION_MODES[1:]:
        model = KMeans(n_clusters=5, n_init=2, random_state=3, fusion=mode).fit(X)
        assert np.array_equal(model.labels_, base.labels_), mode
        np.testing.assert_allclose(model.cluster_centers_, base.cluster_centers_, rtol=1e-6)


@pytest.mark.parametrize("to_format", FORMATS)
def test_weighted_fit_is_a_weighted_lloyd_fixed_point(to_format):
    """Weighted KMeans: the centers are the weighted means of their records (numpy oracle),
    inertia_ is the weighted WCSS, and sklearn's weighted KMeans started there stays there."""
    X, _, _ = load(runs("kmeans")[0])
    sw = np.random.default_rng(1).choice([0.0, 0.5, 1.0, 4.0], size=len(X))
    Xd = np.where(X > 2, X, 0.0) if to_format is csr else X  # zeros for CSR to skip
    Xf = to_format(Xd)
    model = KMeans(n_clusters=5, n_init=3, tol=1e-12, random_state=2).fit(Xf, sample_weight=sw)
    C = model.cluster_centers_
    d = ((Xd[:, None, :] - C[None]) ** 2).sum(axis=2)
    labels = np.argmin(d, axis=1)
    means = np.array(
        [np.average(Xd[labels == j], axis=0, weights=sw[labels == j]) for j in range(5)]
    )
    np.testing.assert_allclose(C, means, rtol=1e-9, atol=1e-9)
    assert model.inertia_ == pytest.approx(float(np.sum(sw * d.min(axis=1))), rel=1e-9)
    assert model.score(Xf, sample_weight=sw) == pytest.approx(-model.inertia_, rel=1e-9)
    ref = sklearn.cluster.KMeans(5, init=C, n_init=1, tol=0.0).fit(Xd, sample_weight=sw)
    np.testing.assert_allclose(ref.cluster_centers_, C, rtol=1e-9, atol=1e-9)
