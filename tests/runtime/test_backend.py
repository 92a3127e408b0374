"""The backend seam, proven by a test backend that runs every fused operator's kernel per row
block of its inputs and combines the blocks' partials through the outputs' kinds (as the Dask
backend does): results equal the local backend's."""

import numpy as np
import pytest
import scipy.sparse as sp
from fusedml.algorithms import ALSCG, GLM, L2SVM, KMeans, MLogReg
from hypothesis import given, settings
from sklearn.datasets import make_classification

import fusedml as fm
from fusedml.runtime import fused
from fusedml.runtime.backend import LocalBackend
from tests import exprgen
from tests.exprgen import check


class RowBlockBackend(LocalBackend):
    """Splits the inputs aligned with a kernel's main input into blocks of ``rows`` rows."""

    name = "row-blocks"

    def __init__(self, rows: int) -> None:
        self.rows = rows
        self.calls = self.blocks = self.split = 0  # split: calls that ran in several blocks

    def run_kernel(self, op, inputs):
        spec = fused.prepared(op).spec
        m = inputs[0].shape[0]
        partials = []
        for start in range(0, m, self.rows) if m else [0]:
            block = slice(start, start + self.rows)
            part = [
                v[block] if aligned else v for v, aligned in zip(inputs, spec.aligned, strict=True)
            ]
            partials.append(fused.partials(op, part))
        self.calls += 1
        self.blocks += len(partials)
        self.split += len(partials) > 1
        return fused.results(op, partials)


def test_differential_corpus_in_row_blocks():
    backend = RowBlockBackend(2)

    @settings(max_examples=60)
    @given(exprgen.expressions(max_depth=4, allow_sparse=True))
    def corpus(case):
        with fm.config(backend=backend):
            for mode in ("fuse_all", "cost_based"):
                check(*case, fusion=mode)
            with fm.config(dispatch_s=0.0, compile_s=0.0):
                check(*case, fusion="cost_based")

    corpus()
    # not vacuous: kernels ran split into blocks. Random examples often have at most 2 rows
    # (one block), so only split calls are counted: 10-39 seen in 7 local runs, 28 in CI's
    assert backend.split >= 5, vars(backend)


@pytest.mark.parametrize(("m", "n"), [(4, 0), (4, 3), (6, 2)])
def test_a_product_whose_right_operand_has_the_output_s_shape(m, n):
    """A @ B of CSR operands with A square: B (m x n) has the output's shape, but its rows are
    not the rows the Row kernel iterates, so it must not be the main input (blocks of A's rows
    then read past their end)."""
    A = sp.random(m, m, density=0.5, format="csr", random_state=1)
    B = sp.random(m, n, density=0.5, format="csr", random_state=2)
    backend = RowBlockBackend(2)
    with fm.config(backend=backend, dispatch_s=0.0, compile_s=0.0):
        got = fm.evaluate(fm.matrix(A) @ fm.matrix(B), fusion="cost_based")
    np.testing.assert_allclose(got.toarray(), (A @ B).toarray(), rtol=1e-12)
    assert backend.split >= 1, vars(backend)


def test_kernels_ran_in_several_blocks(fresh_stats):
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(10, 3)), sp.random(10, 3, density=0.4, format="csr", random_state=1)
    backend = RowBlockBackend(3)
    x, y = fm.matrix(X), fm.matrix(Y)
    cases = [
        (fm.sum(x * x), np.sum(X * X)),
        (fm.mean(x * x, axis=0, keepdims=True), np.mean(X * X, axis=0, keepdims=True)),
        (fm.min(y * x, axis=0, keepdims=True), Y.multiply(X).toarray().min(axis=0, keepdims=True)),
        (x.T @ (x @ np.ones(3)), X.T @ (X @ np.ones(3))),
        (fm.exp(x) * 2, np.exp(X) * 2),
    ]
    with fm.config(backend=backend, fusion="fuse_all"):
        for expr, want in cases:
            np.testing.assert_allclose(fm.evaluate(expr), want, rtol=1e-12)
    assert backend.blocks == 4 * fresh_stats()["fused_ops_executed"]


def _fits():
    """(estimator, X, y, fitted result): one fit per estimator (row blocks of CSR data are the
    corpus's business; GLM also fits CSR data here)."""
    X, y = make_classification(n_samples=203, n_features=6, random_state=0)
    S = sp.csr_array(np.where(np.abs(X) > 0.8, X, 0.0))
    counts = np.random.default_rng(0).poisson(np.exp(X[:, :2].sum(axis=1) / 3))
    R = sp.random(60, 40, density=0.2, format="csr", random_state=2)
    R.data = np.round(R.data * 4 + 1)
    return [
        pytest.param(L2SVM(max_iter=5, fit_intercept=True), X, y, "coef_", id="L2SVM"),
        pytest.param(MLogReg(max_iter=4, fit_intercept=True), X, y + (X[:, 0] > 0), "coef_",
                     id="MLogReg"),
        pytest.param(GLM(max_iter=4), X, counts, "coef_", id="GLM"),
        pytest.param(GLM(max_iter=4), S, counts, "coef_", id="GLM-csr"),
        pytest.param(L2SVM(max_iter=3, fit_intercept=True, solver="newton"), X, y, "coef_",
                     id="L2SVM-newton"),
        pytest.param(GLM(max_iter=4, solver="lbfgs"), X, counts, "coef_", id="GLM-lbfgs"),
        pytest.param(MLogReg(max_iter=4, fit_intercept=True, solver="lbfgs"), X,
                     y + (X[:, 0] > 0), "coef_", id="MLogReg-lbfgs"),
        pytest.param(KMeans(n_clusters=3, n_init=1, random_state=0), X, None,
                     "cluster_centers_", id="KMeans"),
        pytest.param(KMeans(n_clusters=3, n_init=1, random_state=0, algorithm="lloyd"), X, None,
                     "cluster_centers_", id="KMeans-lloyd"),
        pytest.param(ALSCG(rank=3, max_iter=2, random_state=0), R, None, "user_factors_",
                     id="ALSCG"),
    ]  # fmt: skip


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize(("estimator", "X", "y", "result"), _fits())
def test_every_estimator_fits_the_same_model_in_row_blocks(estimator, X, y, result):
    with fm.config(dispatch_s=0.0, compile_s=0.0):  # fused plans even on small data
        local = getattr(estimator.fit(X, y), result)
        backend = RowBlockBackend(41)
        with fm.config(backend=backend):
            blocked = getattr(estimator.fit(X, y), result)
    assert backend.blocks > 0
    np.testing.assert_allclose(blocked, local, rtol=1e-9, atol=1e-12)
