"""L5: the fused-operator IR and the selected plan."""
