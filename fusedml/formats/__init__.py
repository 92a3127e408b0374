"""L0: physical formats of matrix data, the rules each carries, and conversion of user values.

Everything fusedml computes on is float64. A ``Format`` is one member of the format axis: dense
numpy arrays and canonical ``scipy.sparse.csr_array`` (sorted indices, no duplicates) are built in;
a new format registers an instance (``Format.register``) and brings its own operand code to
codegen. The rest of fusedml asks a format's traits, never which format it is:

- semantics: ``zeros_annihilate``, whether a zero of the operand annihilates in ``*``, ``@`` and as
  the numerator of ``/`` even against inf or NaN (scipy.sparse's and SystemDS's rule), and so
  whether results computed from it may stay sparse;
- closure: ``elementwise_closed``, whether elementwise ops of one of its values with scalars
  give a value of the format (value-based encodings map their stored values); ``transposed``,
  the format of a transpose; ``computes_natively``, whether converting a value to its canonical
  format is a decompression that code knowing only canonical values should not do;
- layout: ``iterates_nonzeros``, whether kernels may visit only a row's stored entries;
  ``views``, whether transposes and column ranges are free views; ``threaded_products``, whether
  unfused products with it run on every core (BLAS) or on one (scipy.sparse);
- cost: ``nbytes(meta)``, ``work_cells(meta)`` and ``stored(meta)``, the cost model's inputs,
  from the shape, non-zeros and ``layout(value)`` of a value (plans are kept per
  ``size_class(shape, layout)``; ``stacked_layout`` combines row blocks' layouts);
- values: ``claims`` (detection), ``from_value`` (conversion), ``nnz``, ``to_canonical`` (the
  value the reference interpreter computes on) and ``to_dense``.

Results the engine computes are always in a canonical format: ``Format.result(sparse)``.
Nothing here knows about expressions.

A *collection* (``Collection``: a Dask array) is a lazy container of row blocks held elsewhere;
a backend package registers it. Its value's format is its blocks' format, and ``Format.convert``
hands it to the collection, so formats and execution backends stay two separate axes.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

_UNASKED = object()  # a type no registered format or collection was asked about yet


def _claimant(registry: list, by_type: dict, value: Any) -> Any:
    """The first member of ``registry`` that claims ``value``, remembered per type in
    ``by_type`` (a dict lookup per value: executors ask for every step's value)."""
    kind = type(value)
    found = by_type.get(kind, _UNASKED)
    if found is _UNASKED:
        found = by_type[kind] = next((m for m in registry if m.claims(value)), None)
    return found


class Format:
    """One physical format of matrix data and its rules (see the module docstring)."""

    name: str = ""
    zeros_annihilate: bool = False
    iterates_nonzeros: bool = False
    views: bool = True
    threaded_products: bool = True
    # an elementwise op whose only matrix operand is one value of this format (with scalars)
    # gives a value of this format: value-based encodings apply it to their stored values
    elementwise_closed: bool = False
    # its canonical form is far bigger (a decompression): code that only knows canonical values
    # (hand-written kernels) leaves it to operations that run on it natively
    computes_natively: bool = False

    # registered formats in detection order; the dense format is the fallback for array-likes
    _registry: ClassVar[list[Format]] = []
    _by_type: ClassVar[dict[type, Format | None]] = {}  # which format claims values of a type
    # the same for the types no collection claims: one lookup where executors check every value
    _local_by_type: ClassVar[dict[type, Format | None]] = {}
    DENSE: ClassVar[Format]
    CSR: ClassVar[Format]

    @property
    def value(self) -> str:
        """The format's name (as an enum member's value reads)."""
        return self.name

    def __repr__(self) -> str:
        return f"Format.{self.name}"

    def __reduce__(self) -> tuple:
        # formats are compared by identity: a pickled one (sent to a worker) is the registered one
        return (Format.named, (self.name,))

    @property
    def canonical(self) -> Format:
        """The built-in format this one's values are computed as where no kernel reads it."""
        return Format.result(self.zeros_annihilate)

    @property
    def transposed(self) -> Format:
        """The format of a transpose of one of its values (its canonical one unless the format
        keeps transposes lazily)."""
        return self.canonical

    # -- cost ---------------------------------------------------------------------------------
    def nbytes(self, meta: Any) -> float:
        """Bytes a value of this ``Meta`` occupies."""
        return 8.0 * meta.cells

    def work_cells(self, meta: Any) -> float:
        """Cells an operation over it visits."""
        return float(meta.nnz if self.iterates_nonzeros else meta.cells)

    def stored(self, meta: Any) -> tuple[float, float] | None:
        """(bytes, values) an operation that runs once per distinct stored value reads, for
        formats whose operations can (None: every cell is visited)."""
        return None

    def layout(self, value: Any) -> tuple:
        """What the cost model needs to know of a value beyond shape and non-zeros (``Meta``'s
        ``layout``)."""
        return ()

    def stacked_layout(self, layouts: list[tuple]) -> tuple:
        """The ``layout`` of row blocks stacked, from theirs."""
        return ()

    def size_class(self, shape: tuple[int, int], layout: tuple) -> Any:
        """A coarse class of a value's shape and ``layout``: plans are kept per class (hashable;
        None)."""
        return None

    # -- values -------------------------------------------------------------------------------
    def claims(self, value: Any) -> bool:
        """Whether a user value is of this format: decided by the value's type alone (``of``
        remembers the answer per type)."""
        raise NotImplementedError

    def from_value(self, value: Any, what: str = "fm.matrix") -> Any:
        """This format's value for ``value`` (validated; the value itself where it can be)."""
        raise NotImplementedError

    def nnz(self, value: Any) -> int:
        """Stored entries of a value (every cell for dense layouts)."""
        return int(np.prod(value.shape))

    def to_canonical(self, value: Any) -> Any:
        """The value in ``self.canonical``'s form."""
        return value

    def to_dense(self, value: Any) -> np.ndarray:
        """The value as a float64 numpy array."""
        raise NotImplementedError

    def arrays(self, value: Any) -> list[np.ndarray]:
        """The numpy arrays holding a value's entries (to tell whether two values share memory)."""
        return [value]

    def vstack(self, blocks: list[Any]) -> Any:
        """Consecutive row blocks of this format as one value."""
        raise NotImplementedError

    def empty(self) -> Any:
        """A 0 x 0 value (what a Dask array of such blocks keeps as its ``meta``)."""
        return self.from_value(np.empty((0, 0)))

    # -- the axis -----------------------------------------------------------------------------
    @classmethod
    def register(cls, fmt: Format) -> Format:
        """Add a format; it is asked before the built-in ones whether it claims a value."""
        if any(f.name == fmt.name for f in cls._registry):
            raise ValueError(f"a format named {fmt.name!r} is registered already")
        cls._registry.insert(0, fmt)
        _forget_claims()
        return fmt

    @classmethod
    def unregister(cls, fmt: Format) -> None:
        if fmt in (cls.DENSE, cls.CSR):
            raise ValueError("the built-in formats stay registered")
        cls._registry.remove(fmt)
        _forget_claims()

    @classmethod
    def members(cls) -> tuple[Format, ...]:
        return tuple(cls._registry)

    @classmethod
    def named(cls, name: str) -> Format:
        for fmt in cls._registry:
            if fmt.name == name:
                return fmt
        raise KeyError(f"no format named {name!r} is registered")

    @classmethod
    def of(cls, value: Any) -> Format | None:
        """The format that claims a value (None: no format knows it); a collection's value has
        its blocks' format."""
        found = cls._local_by_type.get(type(value), _UNASKED)
        if found is not _UNASKED:
            return found
        collection = Collection.of(value)
        if collection is not None:
            return collection.block_format(value)
        found = cls._local_by_type[type(value)] = _claimant(cls._registry, cls._by_type, value)
        return found

    @classmethod
    def convert(cls, value: Any, what: str = "fm.matrix") -> tuple[Format, Any]:
        """(format, value in it) for a user value; unclaimed values are tried as dense arrays
        (``np.asarray``: pandas frames, memoryviews, ...). A collection converts its own blocks."""
        collection = Collection.of(value)
        if collection is not None:
            return collection.convert(value, what)
        fmt = cls.of(value) or cls.DENSE
        return fmt, fmt.from_value(value, what)

    @staticmethod
    def result(sparse: bool) -> Format:
        """The format of a computed result: CSR where zeros annihilate, else dense."""
        return Format.CSR if sparse else Format.DENSE


class Collection:
    """A lazy container of row blocks held by an execution backend (a Dask array), registered by
    that backend's package. Detection must not import the backend's libraries."""

    _registry: ClassVar[list[Collection]] = []
    _by_type: ClassVar[dict[type, Collection | None]] = {}

    def claims(self, value: Any) -> bool:
        """Whether a value is held by this collection: decided by its type alone."""
        raise NotImplementedError

    def block_format(self, value: Any) -> Format | None:
        """The format of the value's blocks (None: no format knows them)."""
        raise NotImplementedError

    def convert(self, value: Any, what: str) -> tuple[Format, Any]:
        """(block format, the value with blocks of that format's values, row-partitioned, with
        ``nnz`` known)."""
        raise NotImplementedError

    def nnz(self, value: Any) -> int:
        raise NotImplementedError

    def layout(self, value: Any) -> tuple:
        """The blocks' format's ``stacked_layout`` of the blocks' layouts."""
        raise NotImplementedError

    def map_blocks(self, value: Any, fn: Any, fmt: Format) -> Any:
        """A lazy value of the same row blocks, each ``fn(block)``, a value of ``fmt``."""
        raise NotImplementedError

    def blocks(self, value: Any) -> int:
        """The number of row blocks."""
        raise NotImplementedError

    def persist(self, value: Any, what: str) -> Any:
        """The value converted (``convert``) and kept in memory where its blocks live."""
        raise NotImplementedError

    @property
    def backend(self) -> Any:
        """The backend that runs plans over such values."""
        raise NotImplementedError

    @classmethod
    def register(cls, collection: Collection) -> Collection:
        cls._registry.append(collection)
        _forget_claims()
        return collection

    @classmethod
    def of(cls, value: Any) -> Collection | None:
        return _claimant(cls._registry, cls._by_type, value)


def _forget_claims() -> None:
    """Drop the remembered claims (a format or collection joined or left its registry)."""
    for remembered in (Format._by_type, Format._local_by_type, Collection._by_type):
        remembered.clear()


def nnz_of(fmt: Format, value: Any) -> int:
    """Stored entries of a value of ``fmt``, also when a collection holds it."""
    collection = Collection.of(value)
    return collection.nnz(value) if collection is not None else fmt.nnz(value)


def layout_of(fmt: Format, value: Any) -> tuple:
    """``fmt.layout`` of a value, also when a collection holds it (its blocks' stacked)."""
    collection = Collection.of(value)
    return collection.layout(value) if collection is not None else fmt.layout(value)


def _check_numeric(dtype: np.dtype, what: str) -> None:
    # bool/int/uint/float are numbers we can hold exactly enough in float64; complex would lose
    # the imaginary part silently, so it is refused with the rest.
    if dtype.kind not in "biuf":
        raise TypeError(
            f"{what}: unsupported dtype {dtype}; expected a numeric (bool, int or float) array"
        )


class _Dense(Format):
    name = "dense"

    def claims(self, value: Any) -> bool:
        return isinstance(value, np.ndarray | list | tuple)

    def from_value(self, value: Any, what: str = "fm.matrix") -> np.ndarray:
        """Array-like -> float64 numpy array of ndim 0, 1 or 2 (3-D and higher are refused)."""
        if sp.issparse(value):
            return value.toarray().astype(np.float64, copy=False)
        if isinstance(value, np.ma.MaskedArray) and np.ma.is_masked(value):
            # np.asarray would drop the mask and compute with the hidden values
            raise TypeError(
                f"{what}: masked arrays are not supported (fusedml has no masked values); pass "
                "a.filled(value) for the value masked entries stand for, or drop them first"
            )
        if isinstance(value, int) and not isinstance(value, bool):
            value = float(value)  # as numpy: a Python int beyond int64 meets float64 as a float
        arr = np.asarray(value)
        _check_numeric(arr.dtype, what)
        if arr.ndim > 2:
            raise ValueError(
                f"{what}: expected a scalar, 1-D or 2-D array, got a {arr.ndim}-D array of shape "
                f"{arr.shape}"
            )
        return arr.astype(np.float64, copy=False)

    def to_dense(self, value: Any) -> np.ndarray:
        return value

    def vstack(self, blocks: list[Any]) -> np.ndarray:
        return np.concatenate(blocks, axis=0)


class _Csr(Format):
    name = "csr"
    zeros_annihilate = True
    iterates_nonzeros = True
    views = False  # a transpose or column range of CSR data is a new matrix
    threaded_products = False  # scipy.sparse runs on one core
    BYTES_PER_NONZERO = 12  # float64 value + int32 column index

    def nbytes(self, meta: Any) -> float:
        return self.BYTES_PER_NONZERO * meta.nnz + 4.0 * (meta.rows + 1)

    def claims(self, value: Any) -> bool:
        return sp.issparse(value)

    def from_value(self, value: Any, what: str = "fm.matrix") -> sp.csr_array:
        """Any scipy.sparse matrix/array (or dense 2-D data) -> canonical float64 ``csr_array``,
        sharing data where it can."""
        if not sp.issparse(value):
            return sp.csr_array(Format.DENSE.from_value(value, what))
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

    def nnz(self, value: Any) -> int:
        return int(value.nnz)

    def arrays(self, value: Any) -> list[np.ndarray]:
        # the structure too: a result sharing an input's indices, changed in place (as
        # ``eliminate_zeros`` does), would change the input
        return [value.data, value.indices, value.indptr]

    def vstack(self, blocks: list[Any]) -> sp.csr_array:
        return sp.csr_array(sp.vstack(blocks, format="csr"))

    def empty(self) -> sp.csr_array:
        return sp.csr_array((0, 0))

    def to_dense(self, value: Any) -> np.ndarray:
        return value.toarray()


Format.DENSE = _Dense()
Format.CSR = _Csr()
Format._registry.extend([Format.CSR, Format.DENSE])


def to_csr(value: object, what: str = "fm.matrix") -> sp.csr_array:
    """Any scipy.sparse matrix/array -> canonical float64 ``csr_array`` (shares data if it can)."""
    return Format.CSR.from_value(value, what)


def to_dense(value: object, what: str = "fm.matrix") -> np.ndarray:
    """Array-like -> float64 numpy array of ndim 0, 1 or 2 (3-D and higher are refused)."""
    return Format.DENSE.from_value(value, what)


# registered after the built-in formats (it subclasses Format); asked first in detection
from fusedml.formats import compressed as _compressed  # noqa: E402

COMPRESSED = _compressed.COMPRESSED
COMPRESSED_T = _compressed.COMPRESSED_T


def density_decade(nnz: int, cells: int) -> int | None:
    """floor(log10(nnz / cells)): plans depend on the order of magnitude of a density."""
    return math.floor(math.log10(nnz / cells)) if nnz and cells else None
