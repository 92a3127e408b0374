"""Degenerate data: all-zero features, features scaled far out of the usual range, data whose
convergence tests compare zero with zero, and data without a valid model. Oracles: the exact
minimizer where it is known in closed form, scikit-learn's fit of the well-scaled data mapped to
the scaled data (an unpenalized fit on s * X has the coefficients of the fit on X divided by s),
and numpy. One shape per estimator family, so that the kernels compile once. A fit that does
not converge fails the test (ConvergenceWarning is an error here)."""

import numpy as np
import pytest
import scipy.sparse as sp
import sklearn.cluster
import sklearn.linear_model as lm
from fusedml.algorithms import ALSCG, GLM, L2SVM, KMeans, MLogReg
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import adjusted_rand_score
from sklearn.svm import LinearSVC

from tests.formats import FORMATS

RNG = np.random.default_rng(0)
X0 = RNG.standard_normal((20, 3))
LABELS = (X0 @ [1.0, -1.0, 0.5] + RNG.standard_normal(20) > 0.3).astype(int)  # 9 of 20, noisy
COUNTS = RNG.poisson(np.exp(0.3 * X0 @ [1.0, -1.0, 0.5] + 0.5)).astype(float)
SCALES = [1e-300, 1e-160, 1e150, 1e300]

pytestmark = pytest.mark.filterwarnings("error::sklearn.exceptions.ConvergenceWarning")


def _rel(a, b):
    return float(np.max(np.abs(np.asarray(a) - b)) / np.max(np.abs(b)))


# -- all-zero features: X @ w = 0 for every w, the penalty (or the intercept alone) decides


@pytest.mark.parametrize("to_format", FORMATS)
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_l2svm_on_all_zero_features_is_the_intercept_only_minimizer(fit_intercept, to_format):
    X = to_format(np.zeros_like(X0))
    reg = 1.0
    model = L2SVM(reg=reg, fit_intercept=fit_intercept).fit(X, LABELS)
    Y = np.where(LABELS == 1, 1.0, -1.0)
    # 1/2 sum (1 - y b)^2 + reg/2 b^2 (|b| < 1: every record a support vector) is minimal at
    # b = sum(y) / (n + reg)
    b = Y.sum() / (len(Y) + reg) if fit_intercept else 0.0
    assert np.array_equal(model.coef_, np.zeros((1, 3)))
    assert model.intercept_ == pytest.approx([b], rel=1e-12)


@pytest.mark.parametrize("to_format", FORMATS)
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_mlogreg_on_all_zero_features_predicts_the_class_frequencies(fit_intercept, to_format):
    X = to_format(np.zeros_like(X0))
    model = MLogReg(fit_intercept=fit_intercept, tol=1e-12).fit(X, LABELS)
    frequencies = np.bincount(LABELS) / len(LABELS) if fit_intercept else np.full(2, 0.5)
    assert np.array_equal(model.coef_, np.zeros((2, 3)))
    np.testing.assert_allclose(model.predict_proba(X), np.tile(frequencies, (20, 1)), rtol=1e-9)


@pytest.mark.parametrize("to_format", FORMATS)
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_glm_on_all_zero_features_predicts_the_mean(fit_intercept, to_format):
    X = to_format(np.zeros_like(X0))
    model = GLM(family="poisson", fit_intercept=fit_intercept, tol=1e-12).fit(X, COUNTS)
    # the intercept-only Poisson fit's mean is the mean count; without one, exp(0)
    mean = COUNTS.mean() if fit_intercept else 1.0
    assert np.array_equal(model.coef_, np.zeros(3))
    np.testing.assert_allclose(model.predict(X), np.full(20, mean), rtol=1e-9)


@pytest.mark.parametrize(
    "estimator, y",
    [(L2SVM(tol=0.0), LABELS), (MLogReg(tol=0.0), LABELS), (GLM(tol=0.0), COUNTS)],
    ids=["L2SVM", "MLogReg", "GLM"],
)
def test_zero_gradient_is_converged_even_at_tol_zero(estimator, y):
    model = estimator.fit(np.zeros_like(X0), y)
    assert model.n_iter_ == 0
    assert not np.any(model.coef_)


def test_glm_on_all_zero_features_without_a_valid_mean_raises():
    # identity link, no intercept: the mean is 0 for every coefficient vector, but the counts
    # are positive
    with pytest.raises(ValueError, match="all zero"):
        GLM(family="poisson", link="identity", fusion="none").fit(np.zeros_like(X0), COUNTS)


# -- scaled features


def _unpenalized(name, fit_intercept, to_format, scale, reg=0.0):
    """(ours fitted to X0 * scale with the penalty reg, sklearn's fitted to X0 unpenalized)."""
    X = to_format(X0 * scale)
    if name == "L2SVM":
        ours = L2SVM(reg=reg, fit_intercept=fit_intercept, tol=1e-14, max_iter=500,
                     max_inner_iter=100).fit(X, LABELS)  # fmt: skip
        ref = LinearSVC(C=1e8, fit_intercept=fit_intercept, dual=False, tol=1e-12,
                        max_iter=100_000).fit(X0, LABELS)  # fmt: skip
    elif name == "MLogReg":
        ours = MLogReg(reg=reg, fit_intercept=fit_intercept, tol=1e-12, max_iter=200,
                       max_inner_iter=0).fit(X, LABELS)  # fmt: skip
        ref = lm.LogisticRegression(C=np.inf, fit_intercept=fit_intercept, solver="newton-cg",
                                    tol=1e-12, max_iter=1000).fit(X0, LABELS)  # fmt: skip
    else:
        ours = GLM(family="poisson", reg=reg, fit_intercept=fit_intercept, tol=1e-14,
                   max_iter=500).fit(X, COUNTS)  # fmt: skip
        ref = lm.PoissonRegressor(alpha=0.0, fit_intercept=fit_intercept,
                                  solver="newton-cholesky", tol=1e-12).fit(X0, COUNTS)  # fmt: skip
    return ours, ref


def _check_scaled_solution(name, to_format, scale, ours, ref):
    if name == "MLogReg":  # another parametrization (a baseline class), the same probabilities
        assert _rel(ours.predict_proba(to_format(X0 * scale)), ref.predict_proba(X0)) <= 1e-6
    else:
        assert _rel(ours.coef_.ravel() * scale, ref.coef_.ravel()) <= 1e-5
        assert np.ravel(ours.intercept_) == pytest.approx(np.ravel(ref.intercept_), abs=1e-6)
    assert np.all(np.isfinite(ours.coef_))


@pytest.mark.parametrize("to_format", FORMATS)
@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("name", ["L2SVM", "MLogReg", "GLM"])
def test_unpenalized_fit_of_scaled_features_is_the_scaled_solution(
    name, fit_intercept, scale, to_format
):
    ours, ref = _unpenalized(name, fit_intercept, to_format, scale)
    _check_scaled_solution(name, to_format, scale, ours, ref)


@pytest.mark.parametrize("to_format", FORMATS)
@pytest.mark.parametrize("scale", [1e150, 1e300])
@pytest.mark.parametrize("name", ["L2SVM", "MLogReg", "GLM"])
def test_penalty_is_negligible_against_huge_features(name, scale, to_format):
    # reg = 1 on s * X is reg / s**2 on X: the unpenalized solution to float64's precision
    ours, ref = _unpenalized(name, False, to_format, scale, reg=1.0)
    _check_scaled_solution(name, to_format, scale, ours, ref)


@pytest.mark.parametrize("to_format", FORMATS)
@pytest.mark.parametrize("scale", [1e-300, 1e-160])
def test_penalized_l2svm_on_tiny_features_is_the_exact_minimizer(scale, to_format):
    X = X0 * scale
    Y = np.where(LABELS == 1, 1.0, -1.0)
    model = L2SVM(reg=1.0, tol=1e-12).fit(to_format(X), LABELS)
    # every margin is far below 1, so the objective is the quadratic 1/2 ||1 - Y * (X w)||^2 +
    # 1/2 ||w||^2, minimal at (X'X + I)^-1 X'Y
    w = np.linalg.solve(X.T @ X + np.eye(3), X.T @ Y)
    assert _rel(model.coef_.ravel(), w) <= 1e-9


@pytest.mark.parametrize("to_format", FORMATS)
@pytest.mark.parametrize("scale", [1e-300, 1e-160])
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("name", ["MLogReg", "GLM"])
def test_penalized_fit_of_tiny_features_predicts_as_sklearn(name, fit_intercept, scale, to_format):
    X = X0 * scale
    if name == "MLogReg":
        model = MLogReg(reg=1.0, fit_intercept=fit_intercept).fit(to_format(X), LABELS)
        ref = lm.LogisticRegression(C=1.0, fit_intercept=fit_intercept, tol=1e-12)
        ref.fit(X, LABELS)
        ours, theirs = model.predict_proba(to_format(X)), ref.predict_proba(X)
    else:
        model = GLM(reg=1.0, fit_intercept=fit_intercept).fit(to_format(X), COUNTS)
        ref = lm.PoissonRegressor(alpha=1 / 20, fit_intercept=fit_intercept, tol=1e-12)
        ours, theirs = model.predict(to_format(X)), ref.fit(X, COUNTS).predict(X)
    assert np.all(np.isfinite(model.coef_))
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)


@pytest.mark.parametrize(
    "estimator, y",
    [(L2SVM(reg=0.0), LABELS), (GLM(reg=0.0), COUNTS)],
    ids=["L2SVM", "GLM"],
)
def test_coefficients_beyond_float64_raise(estimator, y):
    # the unpenalized coefficients on X0 * 1e-318 are those on X0 times 1e318
    with pytest.raises(ValueError, match="float64's range"):
        estimator.fit(X0 * 1e-318, y)


@pytest.mark.parametrize(
    "family, link, y",
    [
        ("poisson", "identity", COUNTS),
        ("poisson", "sqrt", COUNTS),
        ("gamma", "inverse", COUNTS + 1),
        ("gamma", "identity", COUNTS + 1),
        ("inverse_gaussian", "canonical", COUNTS + 1),
    ],
)
def test_glm_without_coefficients_in_the_domain_raises(family, link, y):
    # these links need X @ beta > 0 on every record (with positive responses); with the records
    # x and -x both present no beta has that. Solver logic only: no kernels (fusion "none").
    X, y = np.vstack([X0, -X0]), np.concatenate([y, y])
    with pytest.raises(ValueError, match="no coefficients with a finite"):
        GLM(family=family, link=link, fusion="none").fit(X, y)


# -- KMeans

TWO_POINTS = np.repeat([[0.0, 0.0], [10.0, 10.0]], 50, axis=0)
BLOBS = np.vstack([RNG.standard_normal((50, 2)), RNG.standard_normal((50, 2)) + 6.0])


@pytest.mark.parametrize("to_format", FORMATS)
def test_kmeans_converges_once_the_wcss_is_zero(to_format):
    model = KMeans(n_clusters=2, n_init=2, max_iter=50, random_state=0)
    model.fit(to_format(TWO_POINTS))
    assert np.array_equal(np.sort(model.cluster_centers_, axis=0), [[0.0, 0.0], [10.0, 10.0]])
    assert model.inertia_ == 0.0
    assert adjusted_rand_score(model.labels_, np.repeat([0, 1], 50)) == 1.0


@pytest.mark.parametrize("to_format", FORMATS)
def test_kmeans_with_fewer_distinct_points_than_clusters_warns_as_sklearn(to_format):
    pattern = r"Number of distinct clusters \(2\) found smaller than n_clusters \(3\)"
    with pytest.warns(ConvergenceWarning, match=pattern):
        sklearn.cluster.KMeans(n_clusters=3, n_init=1, random_state=0).fit(TWO_POINTS)
    with pytest.warns(ConvergenceWarning, match=pattern) as record:
        model = KMeans(n_clusters=3, n_init=2, max_iter=50, random_state=0)
        model.fit(to_format(TWO_POINTS))
    assert not any("no KMeans run converged" in str(w.message) for w in record)
    assert {tuple(c) for c in model.cluster_centers_} == {(0.0, 0.0), (10.0, 10.0)}
    assert model.inertia_ == 0.0


def test_kmeans_with_more_clusters_than_samples_raises_as_sklearn():
    with pytest.raises(ValueError, match="n_samples=3 should be >= n_clusters=4"):
        sklearn.cluster.KMeans(n_clusters=4, n_init=1).fit(BLOBS[:3])
    with pytest.raises(ValueError, match="n_samples=3 should be >= n_clusters=4"):
        KMeans(n_clusters=4, n_init=1).fit(BLOBS[:3])


@pytest.mark.parametrize("to_format", FORMATS)
@pytest.mark.parametrize("scale", SCALES)
def test_kmeans_on_scaled_data_finds_the_scaled_clusters(scale, to_format):
    ref = sklearn.cluster.KMeans(n_clusters=2, n_init=2, random_state=0).fit(BLOBS)
    X = to_format(BLOBS * scale)
    model = KMeans(n_clusters=2, n_init=2, random_state=0).fit(X)
    order, ref_order = (
        np.argsort(model.cluster_centers_[:, 0]),
        np.argsort(ref.cluster_centers_[:, 0]),
    )
    centers = model.cluster_centers_[order] / scale
    np.testing.assert_allclose(centers, ref.cluster_centers_[ref_order], rtol=1e-9)
    assert adjusted_rand_score(model.labels_, ref.labels_) == 1.0
    assert np.array_equal(model.predict(X), model.labels_)
    distances = model.transform(X)[:, order] / scale
    np.testing.assert_allclose(distances, ref.transform(BLOBS)[:, ref_order], rtol=1e-9)


# -- ALSCG

RATINGS = sp.csr_array(sp.random(8, 6, density=0.5, random_state=0) * 5)


def test_alscg_on_no_ratings_is_the_penalty_minimizer():
    model = ALSCG(rank=2, reg=0.1, random_state=0).fit(sp.csr_array((8, 6)))
    # no observed entry: the objective is the penalty alone, minimal at U = V = 0 (with "wL2"
    # the penalty's weights, the rating counts, are 0 too: every U, V would minimize)
    assert not np.any(model.user_factors_) and not np.any(model.item_factors_)
    assert model.loss_curve_[-1] == 0.0


@pytest.mark.parametrize("scale", [2.0**-1000, 2.0**1000])
def test_alscg_on_scaled_ratings_is_the_scaled_factorization(scale):
    # the objective on c * X with reg * c and factors sqrt(c) * (U, V) is c**2 times the one on
    # X: the same minimization, whose factors scale by sqrt(c)
    rng = np.random.default_rng(1)
    U0, V0 = rng.uniform(-0.5, 0.5, (8, 2)), rng.uniform(-0.5, 0.5, (6, 2))
    kwargs = {"rank": 2, "max_iter": 5, "tol": 0.0}
    ref = ALSCG(reg=0.1, **kwargs).fit(RATINGS, U0=U0, V0=V0)
    root = np.sqrt(scale)
    model = ALSCG(reg=0.1 * scale, **kwargs).fit(RATINGS * scale, U0=U0 * root, V0=V0 * root)
    np.testing.assert_allclose(model.user_factors_ / root, ref.user_factors_, rtol=1e-9)
    np.testing.assert_allclose(model.item_factors_ / root, ref.item_factors_, rtol=1e-9)
    assert model.score(RATINGS * scale) / scale == pytest.approx(ref.score(RATINGS), rel=1e-9)


# -- non-finite input


def _non_finite_cases():
    estimators = {"L2SVM": (L2SVM(), LABELS), "MLogReg": (MLogReg(), LABELS),
                  "GLM": (GLM(), COUNTS), "KMeans": (KMeans(2), None)}  # fmt: skip
    for name, (estimator, y) in estimators.items():
        for where in ("X", "y", "sample_weight"):
            for value in (np.nan, np.inf):
                if not (where == "y" and y is None):
                    yield pytest.param(estimator, y, where, value, id=f"{name}-{where}-{value}")


@pytest.mark.parametrize("estimator, y, where, value", list(_non_finite_cases()))
def test_non_finite_input_is_rejected(estimator, y, where, value):
    X, y, sw = X0.copy(), None if y is None else y.astype(float), np.ones(len(X0))
    {"X": X, "y": y, "sample_weight": sw}[where].flat[0] = value
    with pytest.raises(ValueError, match=r"NaN|infinity"):
        estimator.fit(X, y, sample_weight=sw)
