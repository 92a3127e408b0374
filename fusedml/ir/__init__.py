"""L1: the expression IR (ops, hash-consed nodes, meta), the lazy front end and tracing."""
