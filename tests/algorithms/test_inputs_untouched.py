"""Nothing fusedml does modifies a caller's data: non-canonical CSR input (duplicates, unsorted
indices, stored zeros), dense input in any layout or dtype, labels and sample weights come back
bit for bit as they went in, and the fit equals the fit on a canonical copy."""

import numpy as np
import pytest
import scipy.sparse as sp
from fusedml.algorithms import ALSCG, GLM, L2SVM, KMeans, MLogReg

import fusedml as fm


def non_canonical_csr(rng, m, n):
    """An m x n CSR matrix whose rows hold their entries in random order, with a duplicate
    entry and a stored zero in every row."""
    data, indices, indptr = [], [], [0]
    for _ in range(m):
        cols = list(rng.choice(n, size=max(1, n // 2), replace=False))
        cols += [cols[0], (cols[0] + 1) % n]  # a duplicate, and a column holding a stored zero
        vals = [*np.abs(rng.standard_normal(len(cols) - 1)), 0.0]
        order = rng.permutation(len(cols))
        indices += [cols[k] for k in order]
        data += [vals[k] for k in order]
        indptr.append(len(indices))
    X = sp.csr_matrix((np.array(data), np.array(indices), np.array(indptr)), shape=(m, n))
    assert not X.has_canonical_format
    return X


def snapshot(*values):
    out = []
    for v in values:
        if sp.issparse(v):
            out.append((v.data.copy(), v.indices.copy(), v.indptr.copy()))
        else:
            out.append(np.array(v, copy=True))
    return out


def assert_untouched(values, before):
    for v, b in zip(values, before, strict=True):
        if sp.issparse(v):
            for got, want in zip((v.data, v.indices, v.indptr), b, strict=True):
                np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_array_equal(np.asarray(v), b)


ESTIMATORS = {
    "L2SVM": lambda: L2SVM(max_iter=3, fusion="none"),
    "MLogReg": lambda: MLogReg(max_iter=3, fusion="none"),
    "GLM": lambda: GLM(max_iter=3, fusion="none"),
    "KMeans": lambda: KMeans(n_clusters=2, n_init=1, max_iter=3, random_state=0, fusion="none"),
}


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("name", sorted(ESTIMATORS))
@pytest.mark.parametrize("container", ["csr", "dense_int_fortran"])
def test_fit_and_predict_leave_inputs_untouched(name, container):
    rng = np.random.default_rng(0)
    X = non_canonical_csr(rng, 30, 4)
    if container == "dense_int_fortran":
        X = np.asfortranarray(np.rint(X.toarray() * 3).astype(np.int32))
    y = (np.arange(30) % 3).astype(np.int64) if name != "GLM" else np.arange(30) % 4
    sw = rng.random(30) + 0.5
    before = snapshot(X, y, sw)
    model = ESTIMATORS[name]().fit(X, y, sample_weight=sw)
    predicted = model.predict(X)
    assert_untouched((X, y, sw), before)
    canonical = sp.csr_array(X, copy=True) if sp.issparse(X) else np.array(X, dtype=float)
    if sp.issparse(canonical):
        canonical.sum_duplicates()
    again = ESTIMATORS[name]().fit(canonical, y.copy(), sample_weight=sw.copy())
    np.testing.assert_allclose(again.predict(canonical), predicted, rtol=1e-12)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_alscg_keeps_the_callers_stored_zeros():
    R = non_canonical_csr(np.random.default_rng(1), 12, 6)
    before = snapshot(R)
    model = ALSCG(rank=2, max_iter=2, random_state=0, fusion="none").fit(R)
    model.transform(R)
    model.predict_ratings(R)
    assert_untouched((R,), before)


def test_jit_and_evaluate_leave_non_canonical_csr_untouched():
    X = non_canonical_csr(np.random.default_rng(2), 30, 4)
    v = np.arange(4.0)
    before = snapshot(X, v)
    step = fm.jit(lambda X, v: (fm.sum(X * X), X.T @ (X @ v)))
    with fm.config(dispatch_s=0.0, compile_s=0.0):
        got = step(X, v)
        fm.evaluate(fm.sum(fm.matrix(X) * 2.0, axis=0), fusion="fuse_all")
    assert_untouched((X, v), before)
    dense = X.toarray()
    np.testing.assert_allclose(got[0], np.sum(dense * dense))
    np.testing.assert_allclose(got[1], dense.T @ (dense @ v))
