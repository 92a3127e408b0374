"""L5: numba code generation for fused operators (a later issue)."""
