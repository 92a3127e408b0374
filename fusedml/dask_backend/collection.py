"""Dask arrays as fusedml values: detection, conversion to row blocks of a format's values, and
the non-zero count a plan is costed with.

A Dask array enters as a leaf whose format is its blocks' (numpy -> dense, scipy.sparse -> CSR).
Blocks hold whole rows: an array chunked along its columns is rechunked to one column chunk, with
a ``RechunkWarning``. Nothing here runs before a Dask array is seen, so importing fusedml does not
import Dask.
"""

from __future__ import annotations

import threading
import warnings
from collections import OrderedDict
from typing import Any

import numpy as np
import scipy.sparse as sp

from fusedml.formats import Collection, Format


class RechunkWarning(UserWarning):
    """A Dask array was rechunked to blocks of whole rows."""


def _canonical_csr(block: Any) -> sp.csr_array:
    return Format.CSR.from_value(block, "a Dask block")


def _as_float(block: np.ndarray) -> np.ndarray:
    return Format.DENSE.from_value(block, "a Dask block")


class DaskArrays(Collection):
    """``dask.array.Array`` values (see the module docstring)."""

    _NNZ_CACHE = 256

    def __init__(self) -> None:
        self._nnz: OrderedDict[str, int] = OrderedDict()  # by the array's graph name
        self._converted: OrderedDict[str, None] = OrderedDict()  # names ``convert`` returned
        self._lock = threading.Lock()
        self._backend = None

    def claims(self, value: Any) -> bool:
        cls = type(value)
        return cls.__name__ == "Array" and cls.__module__.startswith("dask.array")

    def block_format(self, value: Any) -> Format | None:
        meta = getattr(value, "_meta", None)
        if sp.issparse(meta):
            return Format.CSR
        if isinstance(meta, np.ndarray):
            return Format.DENSE
        return None

    def convert(self, value: Any, what: str) -> tuple[Format, Any]:
        fmt = self.block_format(value)
        with self._lock:
            if value.name in self._converted:  # converted before (a loop's data): as it is
                return fmt, value
        if fmt is None:
            raise TypeError(
                f"{what}: a Dask array of {type(value._meta).__name__} blocks; fusedml reads "
                "Dask arrays of numpy or scipy.sparse blocks"
            )
        if value.dtype.kind not in "biuf":
            raise TypeError(
                f"{what}: unsupported dtype {value.dtype}; expected a numeric (bool, int or "
                "float) array"
            )
        if value.ndim == 0 or value.ndim > 2 or (fmt is Format.CSR and value.ndim != 2):
            raise ValueError(
                f"{what}: expected a 1-D or 2-D Dask array (2-D for sparse blocks), got "
                f"{value.ndim}-D of shape {value.shape}"
            )
        if any(np.isnan(c) for dim in value.chunks for c in dim):
            raise ValueError(
                f"{what}: a Dask array of unknown chunk sizes; call compute_chunk_sizes()"
            )
        if value.ndim == 2 and len(value.chunks[1]) > 1:
            warnings.warn(
                f"{what}: a Dask array chunked along its columns {value.chunks[1]}; fusedml runs "
                "blocks of whole rows, so it is rechunked to one column chunk",
                RechunkWarning,
                stacklevel=4,
            )
            value = value.rechunk({1: -1})
        if fmt is Format.CSR:
            value = value.map_blocks(_canonical_csr, dtype=np.float64, meta=sp.csr_array((0, 0)))
        elif value.dtype != np.float64:
            value = value.map_blocks(_as_float, dtype=np.float64)
        with self._lock:
            self._converted[value.name] = None
            while len(self._converted) > self._NNZ_CACHE:
                self._converted.popitem(last=False)
        return fmt, value

    def persist(self, value: Any, what: str = "fm.persist") -> Any:
        """The value converted (``convert``) and persisted where the scheduler keeps data."""
        _, value = self.convert(value, what)
        value = value.persist(optimize_graph=False)  # keys stay as fusedml's graphs name them
        with self._lock:
            self._converted[value.name] = None
        return value

    def nnz(self, value: Any) -> int:
        if self.block_format(value) is not Format.CSR:
            return int(np.prod(value.shape))
        with self._lock:
            found = self._nnz.get(value.name)
        if found is None:  # one pass over the blocks, a number per block to the client
            counts = value.map_blocks(
                lambda b: np.array([[b.nnz]]), chunks=(1, 1), dtype=np.int64, meta=np.empty((0, 0))
            )
            found = int(counts.sum().compute(optimize_graph=False))
            with self._lock:
                self._nnz[value.name] = found
                while len(self._nnz) > self._NNZ_CACHE:
                    self._nnz.popitem(last=False)
        return found

    def blocks(self, value: Any) -> int:
        return len(value.chunks[0])

    @property
    def backend(self) -> Any:
        if self._backend is None:
            from fusedml.dask_backend.backend import DaskBackend

            self._backend = DaskBackend()
        return self._backend


DASK_ARRAYS = Collection.register(DaskArrays())
