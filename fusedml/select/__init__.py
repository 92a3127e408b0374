"""L4: plan selection policies and the cost model (a later issue)."""
