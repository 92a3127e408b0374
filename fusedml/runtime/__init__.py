"""L6: the reference interpreter and the executor."""
