"""Every estimator fits a compressed matrix to the model it fits on the same data dense, in every
fusion mode, without decompressing it."""

import numpy as np
import pytest
from fusedml.algorithms import ALSCG, GLM, L2SVM, Compressor, KMeans, MLogReg
from sklearn.pipeline import make_pipeline

import fusedml as fm
from tests import cla


def flights_like(n, seed=0):
    """Low-cardinality columns as in on-time flight records (month, hour, a delay that is mostly
    zero, a carrier code, a rounded distance, a constant) and a label."""
    rng = np.random.default_rng(seed)
    A = np.column_stack([
        rng.integers(1, 13, n), rng.integers(0, 24, n), rng.choice([0.0, 0, 0, 5, 10, 45], n),
        rng.zipf(2.0, n).clip(max=20), np.round(rng.lognormal(6, 0.5, n) / 50) * 50,
        np.full(n, 2.0),
    ]).astype(float)  # fmt: skip
    score = A[:, 0] / 6 + A[:, 2] / 10 - A[:, 1] / 12 + rng.normal(size=n)
    return A / 10, score


ESTIMATORS = {
    "L2SVM": (lambda: L2SVM(reg=1.0, fit_intercept=True), "binary"),
    # tol: at the default, its model moves by 1.6e-6 relative when the dense input is scaled by
    # 1 + 1e-15 (the constant column is collinear with the intercept), the size of a change of
    # summation order; a converged optimum is what both forms must agree on
    "MLogReg": (lambda: MLogReg(reg=1.0, fit_intercept=True, tol=1e-12), "multiclass"),
    "GLM-poisson": (lambda: GLM(family="poisson", fit_intercept=True), "counts"),
    "GLM-binomial": (lambda: GLM(family="binomial", fit_intercept=True), "binary"),
    "KMeans": (lambda: KMeans(n_clusters=3, n_init=2, random_state=0), None),
}


def labels(kind, score):
    if kind == "binary":
        return (score > np.median(score)).astype(int)
    if kind == "multiclass":
        return np.digitize(score, np.quantile(score, [0.33, 0.66]))
    if kind == "counts":
        return np.floor(np.exp(score / 3)).astype(float)
    return None


def model(est):
    return est.cluster_centers_ if isinstance(est, KMeans) else est.coef_


def refuse_decompression(monkeypatch, rows: int) -> None:
    """Decompressing a compressed matrix of ``rows`` rows fails the test (a sample of its rows,
    e.g. KMeans' seeding sample, may be)."""
    original = fm.CompressedMatrix.decompress

    def decompress(self):
        if self.shape[0] >= rows:
            raise AssertionError("the compressed matrix was decompressed")
        return original(self)

    monkeypatch.setattr(fm.CompressedMatrix, "decompress", decompress)
    monkeypatch.setattr(fm.CompressedMatrix, "toarray", decompress)


def assert_same_model(got, want):
    """Equal to 1e-6 relative to the largest coefficient (a coefficient near zero, e.g. of a
    column collinear with the intercept, is compared at that scale)."""
    np.testing.assert_array_less(np.max(np.abs(got - want)), 1e-6 * np.max(np.abs(want)) + 1e-12)


# every estimator unfused (the reference's group operations) and cost-based (fused kernels); the
# fuse-all plan of one and the hand plans of two (compiling every estimator's kernels three times
# costs CI minutes: KMeans' fuse-all plan alone compiled for a minute)
CASES = [(name, mode) for name in sorted(ESTIMATORS) for mode in ("none", "cost_based")]
CASES += [("L2SVM", "fuse_all"), ("L2SVM", "hand"), ("GLM-poisson", "hand")]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize(("name", "mode"), CASES)
def test_same_model_on_compressed_input(name, mode, monkeypatch):
    make, kind = ESTIMATORS[name]
    A, score = flights_like(3000)
    y = labels(kind, score)
    X = cla.compressed(A, seed=1)
    with fm.config(compile_s=0.0, dispatch_s=0.0):  # fused plans even on this small data
        dense = make().set_params(fusion=mode).fit(A, y)
        refuse_decompression(monkeypatch, X.shape[0])
        compressed = make().set_params(fusion=mode).fit(X, y)
        assert_same_model(model(compressed), model(dense))
        got, want = compressed.predict(X), dense.predict(A)
        if kind == "counts" or name.startswith("GLM"):  # predicted means
            np.testing.assert_allclose(got, want, rtol=1e-6)
        else:  # labels
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("mode", ["none", "cost_based"])
def test_alscg_on_compressed_ratings(mode):
    rng = np.random.default_rng(2)
    R = rng.integers(0, 6, size=(60, 40)).astype(float)
    R[rng.random(R.shape) < 0.6] = 0.0
    kw = dict(rank=3, reg=0.1, max_iter=4, random_state=0, fusion=mode)
    dense = ALSCG(**kw).fit(R)
    compressed = ALSCG(**kw).fit(cla.compressed(R, seed=4))
    assert_same_model(compressed.user_factors_, dense.user_factors_)
    assert_same_model(compressed.item_factors_, dense.item_factors_)


def test_invalid_compressed_input_is_refused():
    A, score = flights_like(50)
    A[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity"):
        L2SVM().fit(cla.compressed(A, seed=0), labels("binary", score))


def test_compressor_in_a_pipeline(monkeypatch):
    A, score = flights_like(4000, seed=3)
    y = labels("binary", score)
    dense = L2SVM(reg=1.0).fit(A, y)
    pipe = make_pipeline(Compressor(), L2SVM(reg=1.0))
    refuse_decompression(monkeypatch, A.shape[0])
    pipe.fit(A, y)
    assert isinstance(pipe[0].transform(A), fm.CompressedMatrix)
    assert_same_model(pipe[-1].coef_, dense.coef_)
    np.testing.assert_array_equal(pipe.predict(A), dense.predict(A))


def test_compressor_passes_incompressible_data_through():
    X = np.random.default_rng(0).random((500, 3))
    with pytest.warns(fm.CompressionSkippedWarning):
        assert Compressor().fit_transform(X) is not None
    out = Compressor(quiet=True).fit(X).transform(X)
    assert isinstance(out, np.ndarray) and np.array_equal(out, X)
