"""The Dask backend: plans over Dask arrays run the runtime's fused operators per row block.

``fm.matrix(dask_array)`` (or a Dask array passed to a ``jit`` function or an estimator) makes a
distributed leaf: row blocks of numpy or scipy.sparse (CSR) data. A plan over it runs on the
current Dask scheduler (a ``distributed`` cluster, or the threaded or synchronous scheduler):
each fused operator as one task per block through the same generated kernel, small inputs sent
once per call, aggregates tree-reduced by Dask, row outputs left as Dask arrays
(``backend.py``); the cost model keeps small steps in this process (``placement.py``).
Importing this package does not import Dask; the first Dask array does.
"""

from typing import Any

from fusedml.dask_backend.collection import DASK_ARRAYS, RechunkWarning
from fusedml.formats import Collection

__all__ = ["DASK_ARRAYS", "RechunkWarning", "persist"]


def persist(value: Any) -> Any:
    """A Dask array in the form plans run over (float64 blocks of whole rows, canonical CSR
    blocks), persisted on its scheduler: convert and load data once before a loop over it. Any
    other value is returned as it is."""
    collection = Collection.of(value)
    return collection.persist(value) if collection is not None else value
