"""The Dask backend, not written yet: a ``fusedml.runtime.backend.LocalBackend`` subclass that runs
the runtime's fused operators per row block of a Dask array (``fused.partials``), with small side
inputs broadcast once and the blocks' partials tree-reduced by the outputs' kinds."""
