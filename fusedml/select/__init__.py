"""L4: plan selection (fuse_all, fuse_no_redundancy, cost_based: materialization points,
cost-based enumeration with pruning, multi-aggregates), the cost model and its calibration."""
