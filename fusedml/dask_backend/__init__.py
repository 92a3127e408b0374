"""L6: fused operators over Dask row blocks (a later issue)."""
