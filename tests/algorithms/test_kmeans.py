"""KMeans against SystemDS's kmeans (inertia within 1 %: the random generators differ) and
sklearn's KMeans, and under every fusion mode."""

import numpy as np
import pytest
import sklearn.cluster
from fusedml.algorithms import KMeans
from sklearn.exceptions import ConvergenceWarning

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


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # 3 iterations
def test_explicit_init_runs_lloyd_from_those_centers_as_sklearn():
    """An init array starts one Lloyd run there: the iterates are sklearn's Lloyd iterates (same
    start, same fixed point); a callable returning the array gives the same model; the array is
    not modified."""
    X, _, _ = load(runs("kmeans")[0])
    C0 = X[[0, 10, 20, 30, 40]].copy()
    given = C0.copy()
    for steps in (3, 200):
        ref = sklearn.cluster.KMeans(5, init=C0, n_init=1, max_iter=steps, tol=0.0,
                                     algorithm="lloyd").fit(X)  # fmt: skip
        # fusedml's max_iter counts evaluated centroid sets: one more than sklearn's updates
        model = KMeans(n_clusters=5, init=C0, n_init=1, max_iter=steps + 1, tol=0.0).fit(X)
        np.testing.assert_allclose(model.cluster_centers_, ref.cluster_centers_, rtol=1e-10)
    assert np.array_equal(C0, given)
    called = KMeans(n_clusters=5, init=lambda X, k, rng: C0, n_init=1, max_iter=201, tol=0.0)
    np.testing.assert_allclose(called.fit(X).cluster_centers_, model.cluster_centers_, rtol=1e-12)


def test_lloyd_gives_a_tie_to_the_first_center_as_sklearn():
    """algorithm="lloyd": a record equidistant to two centers counts for the first only, as in
    sklearn's Lloyd iteration; "systemds" shares it equally."""
    X = np.array([[0.0, 0.0], [2.0, 0.0], [1.0, 0.0], [0.0, 0.5], [2.0, 0.5]])
    C0 = X[:2].copy()
    ref = sklearn.cluster.KMeans(2, init=C0, n_init=1, max_iter=1, algorithm="lloyd").fit(X)
    np.testing.assert_allclose(ref.cluster_centers_, [[1 / 3, 1 / 6], [2.0, 0.25]])
    kwargs = {"n_clusters": 2, "init": C0, "n_init": 1, "tol": 0.0}
    first = KMeans(algorithm="lloyd", max_iter=1, **kwargs).fit(X)
    with pytest.warns(ConvergenceWarning):  # SystemDS's max_iter counts centroid sets
        shared = KMeans(max_iter=2, **kwargs).fit(X)
    np.testing.assert_allclose(first.cluster_centers_, ref.cluster_centers_, rtol=1e-15)
    np.testing.assert_allclose(shared.cluster_centers_[1], [4.5 / 2.5, 0.5 / 2.5], rtol=1e-15)
    with pytest.raises(ValueError, match="algorithm"):
        KMeans(algorithm="elkan").fit(X)


@pytest.mark.parametrize("to_format", FORMATS)
def test_lloyd_iterates_are_sklearns_in_every_mode(to_format):
    """algorithm="lloyd" from given centers: sklearn's Lloyd iterates, unweighted and weighted,
    unfused and cost-based, dense and CSR."""
    X, _, _ = load(runs("kmeans")[0])
    X = np.where(X > 2, X, 0.0) if to_format is csr else X
    sw = np.random.default_rng(1).choice([0.0, 0.5, 1.0, 4.0], size=len(X))
    C0 = X[[0, 10, 20, 30, 40]] + 0.01
    for weights in (None, sw):
        ref = sklearn.cluster.KMeans(5, init=C0, n_init=1, max_iter=4, tol=0.0,
                                     algorithm="lloyd").fit(X, sample_weight=weights)  # fmt: skip
        for mode in ("none", "cost_based"):
            model = KMeans(n_clusters=5, init=C0, n_init=1, max_iter=4, tol=0.0,
                           algorithm="lloyd", fusion=mode)  # fmt: skip
            model.fit(to_format(X), sample_weight=weights)
            C, want = model.cluster_centers_, ref.cluster_centers_
            np.testing.assert_allclose(C, want, rtol=1e-10, atol=1e-12)  # sklearn's 0: 1e-14
            assert np.array_equal(model.labels_, ref.labels_)


@pytest.mark.parametrize("to_format", FORMATS)
@pytest.mark.parametrize("weighted", [False, True])
def test_lloyd_relocates_emptied_clusters_and_stops_as_sklearn(to_format, weighted):
    """algorithm="lloyd" from a start whose centers attract no records (far away, or duplicated
    by another): scikit-learn relocates them to the farthest records, and stops by its tol rule
    (squared center shift against tol times the mean feature variance); the runs agree."""
    X, _, _ = load(runs("kmeans")[0])
    X = np.where(X > 2, X, 0.0) if to_format is csr else X
    sw = np.random.default_rng(1).choice([0.5, 1.0, 4.0], size=len(X)) if weighted else None
    C0 = X[[0, 10, 20, 20, 40]] + 0.01
    C0[1] += 100.0
    for tol, max_iter in ((0.0, 6), (1e-4, 300)):
        ref = sklearn.cluster.KMeans(5, init=C0, n_init=1, max_iter=max_iter, tol=tol,
                                     algorithm="lloyd").fit(X, sample_weight=sw)  # fmt: skip
        model = KMeans(n_clusters=5, init=C0, n_init=1, max_iter=max_iter, tol=tol,
                       algorithm="lloyd").fit(to_format(X), sample_weight=sw)  # fmt: skip
        np.testing.assert_allclose(model.cluster_centers_, ref.cluster_centers_, rtol=1e-10,
                                   atol=1e-12)  # fmt: skip
        assert model.n_iter_ == ref.n_iter_
        assert model.inertia_ == pytest.approx(ref.inertia_, rel=1e-10)
        assert np.array_equal(model.labels_, ref.labels_)


def test_init_errors_and_warnings():
    X, _, _ = load(runs("kmeans")[0])
    with pytest.warns(RuntimeWarning, match="only one init"):
        KMeans(n_clusters=5, init=X[:5], n_init=3, max_iter=100).fit(X)
    with pytest.raises(ValueError, match="shape"):
        KMeans(n_clusters=5, init=X[:4], n_init=1).fit(X)
    with pytest.raises(ValueError, match="finite"):
        KMeans(n_clusters=2, init=[[np.nan] * X.shape[1], X[0]], n_init=1).fit(X)
