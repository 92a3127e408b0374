"""L0: physical formats of matrix data and conversion of user inputs into them.

Everything fusedml computes on is float64. Dense data is a numpy array; sparse data is a canonical
``scipy.sparse.csr_array`` (sorted indices, no duplicates). Nothing here knows about expressions.
"""

from __future__ import annotations

import enum

import numpy as np
import scipy.sparse as sp


class Format(enum.Enum):
    DENSE = "dense"
    CSR = "csr"


def _check_numeric(dtype: np.dtype, what: str) -> None:
    # bool/int/uint/float are numbers we can hold exactly enough in float64; complex would lose
    # the imaginary part silently, so it is refused with the rest.
    if dtype.kind not in "biuf":
        raise TypeError(
            f"{what}: unsupported dtype {dtype}; expected a numeric (bool, int or float) array"
        )


def to_csr(value: object, what: str = "fm.matrix") -> sp.csr_array:
    """Any scipy.sparse matrix/array -> canonical float64 ``csr_array`` (shares data if it can)."""
    assert sp.issparse(value)
    _check_numeric(value.dtype, what)
    if value.ndim != 2:
        raise ValueError(f"{what}: expected a 2-D sparse matrix, got {value.ndim}-D")
    # the input itself when it can be: scipy caches the canonical-format check on the object
    # (an O(nnz) scan), and a new wrapper per call would scan again
    if isinstance(value, sp.csr_array) and value.dtype == np.float64:
        csr = value
    else:
        csr = sp.csr_array(value, dtype=np.float64)
    if not csr.has_canonical_format:
        csr = csr.copy()
        csr.sum_duplicates()  # also sorts indices
    return csr


def to_dense(value: object, what: str = "fm.matrix") -> np.ndarray:
    """Array-like -> float64 numpy array of ndim 0, 1 or 2 (3-D and higher are refused)."""
    if isinstance(value, np.ma.MaskedArray) and np.ma.is_masked(value):
        # np.asarray would drop the mask and compute with the hidden values
        raise TypeError(
            f"{what}: masked arrays are not supported (fusedml has no masked values); pass "
            "a.filled(value) for the value masked entries stand for, or drop them first"
        )
    if isinstance(value, int) and not isinstance(value, bool):
        value = float(value)  # as numpy: a Python int beyond int64 meets float64 data as a float
    arr = np.asarray(value)
    _check_numeric(arr.dtype, what)
    if arr.ndim > 2:
        raise ValueError(
            f"{what}: expected a scalar, 1-D or 2-D array, got a {arr.ndim}-D array of shape "
            f"{arr.shape}"
        )
    return arr.astype(np.float64, copy=False)
