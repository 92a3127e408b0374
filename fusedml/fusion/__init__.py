"""L3: fusion templates and OFMC exploration (a later issue)."""
