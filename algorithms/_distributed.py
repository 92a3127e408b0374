"""Estimator inputs held by Dask: validated and persisted once per fit, never fetched whole.

X is converted to the blocks fusedml runs on and persisted (``fm.persist``); per-sample vectors
(y, sample weights) are persisted in X's row blocks; class labels are encoded block by block
against the classes found by a reduction. Dask is imported only when a Dask array arrives.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_array, column_or_1d

import fusedml as fm


def held_by_dask(value) -> bool:
    return type(value).__module__.startswith("dask.")


def per_sample(v, X, what: str, numeric: bool = True):
    """A 1-D per-sample vector (numpy or Dask) as a Dask array persisted in X's row blocks."""
    import dask.array as da

    if not held_by_dask(v):
        v = column_or_1d(check_array(v, ensure_2d=False, dtype="numeric" if numeric else None))
        v = da.from_array(v, chunks=(X.chunks[0],))
    if v.ndim == 2 and v.shape[1] == 1:
        v = v[:, 0]
    if v.ndim != 1:
        raise ValueError(f"{what} should be a 1d array, got an array of shape {v.shape} instead.")
    if v.shape[0] != X.shape[0]:
        raise ValueError(
            f"Found input variables with inconsistent numbers of samples: {[X.shape[0], len(v)]}"
        )
    if numeric:
        if v.dtype.kind not in "biuf":
            raise ValueError(f"{what}: expected numeric values, got dtype {v.dtype}")
        v = v.astype(np.float64)
    return v.rechunk((X.chunks[0],)).persist()


def persisted(X):
    """X converted to the blocks fusedml runs on and persisted (a 2-D array)."""
    X = fm.persist(X)
    if X.ndim != 2:
        raise ValueError(f"Expected 2D array, got {X.ndim}D array instead")
    return X


def class_codes(y):
    """(sorted classes, each sample's class index as a persisted Dask array)."""
    import dask.array as da

    classes = np.unique(da.unique(y).compute())
    check_classification_targets(classes)
    codes = y.map_blocks(lambda b: np.searchsorted(classes, b), dtype=np.int64)
    return classes, codes.persist()


def sample_weights(sample_weight, X):
    """Per-sample weights as a persisted Dask array in X's row blocks (non-negativity checked
    through fusedml)."""
    sw = per_sample(sample_weight, X, "sample_weight")
    if sw.shape[0] and float(fm.evaluate(fm.min(fm.matrix(sw)))) < 0:
        raise ValueError("Negative values in data passed to `sample_weight`")
    return sw


def take(values, indices):
    """``values[indices]`` block by block (a Dask array of indices stays one)."""
    return indices.map_blocks(lambda b: values[b], dtype=values.dtype)


def per_row_block(fn, *arrays, width: int, **kw):
    """``fn`` per row block of Dask arrays with the same row blocks."""
    import dask.array as da

    first = arrays[0]
    arrays = [a.rechunk((first.chunks[0], (a.shape[1],))) for a in arrays]
    return da.map_blocks(fn, *arrays, chunks=(first.chunks[0], (width,)), dtype=np.float64, **kw)


def rows_of(v, rows):
    """The given rows of a Dask array, fetched (a small sample)."""
    return v[rows].compute()


def without_stored_zeros(X):
    """CSR blocks without explicit zeros (ratings: zeros are missing entries)."""
    import scipy.sparse as sp

    def drop(block):
        if block.nnz and not block.data.all():
            block = block.copy()
            block.eliminate_zeros()
        return block

    return X.map_blocks(drop, dtype=np.float64, meta=sp.csr_array((0, 0))).persist()
