"""L2: algebraic rewrite tables and the guarded fixpoint driver."""
