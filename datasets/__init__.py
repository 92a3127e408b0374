"""Data for fusedml's demos, benchmarks and tests: seeded generators and the paper's patterns."""

from fusedml.datasets.generators import dense_matrix, sparse_matrix
from fusedml.datasets.patterns import PATTERNS, Pattern

__all__ = ["PATTERNS", "Pattern", "dense_matrix", "sparse_matrix"]
