"""Dask arrays as fusedml values: detection, conversion to row blocks of a format's values, and
the non-zeros and layout a plan is costed with.

A Dask array enters as a leaf whose format is its blocks': the format of its ``meta``, an empty
value of that format (numpy -> dense, scipy.sparse -> CSR, ``fm.compress`` of a Dask array ->
compressed).
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

from fusedml.formats import Collection, Format


class RechunkWarning(UserWarning):
    """A Dask array was rechunked to blocks of whole rows."""


def _in_format(block: Any, fmt: Format) -> Any:
    return fmt.from_value(block, "a Dask block")


def _as_float(block: np.ndarray) -> np.ndarray:
    return Format.DENSE.from_value(block, "a Dask block")


class DaskArrays(Collection):
    """``dask.array.Array`` values (see the module docstring)."""

    _NNZ_CACHE = 256

    def __init__(self) -> None:
        self._known: OrderedDict[str, tuple] = OrderedDict()  # _facts by the array's graph name
        self._converted: OrderedDict[str, None] = OrderedDict()  # names ``convert`` returned
        self._lock = threading.Lock()
        self._backend = None

    def claims(self, value: Any) -> bool:
        cls = type(value)
        return cls.__name__ == "Array" and cls.__module__.startswith("dask.array")

    def block_format(self, value: Any) -> Format | None:
        """The format of the array's ``meta`` (an empty value of its blocks' format)."""
        meta = getattr(value, "_meta", None)
        return None if meta is None else Format.of(meta)

    def convert(self, value: Any, what: str) -> tuple[Format, Any]:
        fmt = self.block_format(value)
        with self._lock:
            if value.name in self._converted:  # converted before (a loop's data): as it is
                return fmt, value
        if fmt is None:
            raise TypeError(
                f"{what}: a Dask array of {type(value._meta).__name__} blocks; fusedml reads "
                "Dask arrays of numpy, scipy.sparse or compressed (fm.compress) blocks"
            )
        if value.dtype.kind not in "biuf":
            raise TypeError(
                f"{what}: unsupported dtype {value.dtype}; expected a numeric (bool, int or "
                "float) array"
            )
        if value.ndim == 0 or value.ndim > 2 or (fmt is not Format.DENSE and value.ndim != 2):
            raise ValueError(
                f"{what}: expected a 1-D or 2-D Dask array (2-D for {fmt.name} blocks), got "
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
        if fmt is Format.DENSE:
            if value.dtype != np.float64:
                value = value.map_blocks(_as_float, dtype=np.float64)
        elif fmt is Format.CSR or value.dtype != np.float64:  # CSR: canonical blocks
            value = value.map_blocks(_in_format, fmt, dtype=np.float64, meta=fmt.empty())
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
        return self._facts(value)[0]

    def layout(self, value: Any) -> tuple:
        return self._facts(value)[1]

    def _facts(self, value: Any) -> tuple[int, tuple]:
        """(non-zeros, stacked layout): counted in one pass over the blocks (a few numbers per
        block reach the client) once per graph name; a dense array's from its shape."""
        fmt = self.block_format(value)
        if fmt is Format.DENSE:
            return int(np.prod(value.shape)), ()
        with self._lock:
            found = self._known.get(value.name)
        if found is None:
            facts = value.map_blocks(
                _block_facts, fmt, chunks=(1, 1), dtype=object, meta=np.empty((0, 0), object)
            )
            per_block = facts.compute(optimize_graph=False).ravel()
            nnz, layouts = zip(*per_block, strict=True)
            found = (sum(nnz), fmt.stacked_layout(list(layouts)))
            with self._lock:
                self._known[value.name] = found
                while len(self._known) > self._NNZ_CACHE:
                    self._known.popitem(last=False)
        return found

    def map_blocks(self, value: Any, fn: Any, fmt: Format) -> Any:
        _, value = self.convert(value, "fm.compress")
        out = value.map_blocks(fn, dtype=np.float64, meta=fmt.empty())
        if Format.of(out._meta) is not fmt:  # Dask made the meta numpy: a wrong declaration
            raise TypeError(f"{fmt.name} values cannot be the meta of a Dask array")
        return out

    def blocks(self, value: Any) -> int:
        return len(value.chunks[0])

    @property
    def backend(self) -> Any:
        if self._backend is None:
            from fusedml.dask_backend.backend import DaskBackend

            self._backend = DaskBackend()
        return self._backend


def _block_facts(block: Any, fmt: Format) -> np.ndarray:
    if Format.of(block) is not fmt:  # Dask makes empty blocks numpy
        block = fmt.from_value(block)
    out = np.empty((1, 1), dtype=object)
    out[0, 0] = (fmt.nnz(block), fmt.layout(block))
    return out


DASK_ARRAYS = Collection.register(DaskArrays())
