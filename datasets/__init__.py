"""Data for fusedml's demos, benchmarks and tests: seeded generators and the paper's patterns."""

from fusedml.datasets import estimator_data
from fusedml.datasets.airline import airline_like
from fusedml.datasets.flights import flights
from fusedml.datasets.generators import dense_matrix, sparse_matrix
from fusedml.datasets.hand_patterns import HAND_PATTERNS, HandPattern, hand_data
from fusedml.datasets.patterns import PATTERNS, Pattern

__all__ = [
    "HAND_PATTERNS", "PATTERNS", "HandPattern", "Pattern", "airline_like", "dense_matrix",
    "estimator_data", "flights", "hand_data",
    "sparse_matrix",
]  # fmt: skip
