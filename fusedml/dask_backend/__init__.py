"""The Dask backend, not written yet: it is to run the runtime's fused operators per row block of a
Dask array, with small side inputs broadcast once and aggregates tree-reduced."""
