"""Data for fusedml's demos, benchmarks and tests: seeded generators and the paper's patterns.

``fusedml.datasets.list()`` lists the registered data sets (``registry.py``) and
``fusedml.datasets.load(name, scale=..., format=...)`` gives one as ``(X, y)``.
"""

from fusedml.datasets import estimator_data
from fusedml.datasets.airline import airline_like
from fusedml.datasets.flights import flights
from fusedml.datasets.generators import dense_matrix, sparse_matrix
from fusedml.datasets.hand_patterns import HAND_PATTERNS, HandPattern, hand_data
from fusedml.datasets.patterns import PATTERNS, Pattern
from fusedml.datasets.registry import REGISTRY, Dataset, available, load

list = available  # fusedml.datasets.list(): shadows the builtin in this module only

__all__ = [
    "HAND_PATTERNS", "PATTERNS", "REGISTRY", "Dataset", "HandPattern", "Pattern", "airline_like",
    "available", "dense_matrix", "estimator_data", "flights", "hand_data", "list", "load",
    "sparse_matrix",
]  # fmt: skip
