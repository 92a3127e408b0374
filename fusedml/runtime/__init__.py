"""L6: the reference interpreter and the executor."""

# formats' own operations join the reference interpreter on import
from fusedml.runtime import compressed_native as _compressed_native  # noqa: F401
