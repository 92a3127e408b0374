"""scikit-learn estimators written against the public fusedml API."""

from fusedml.algorithms.l2svm import L2SVM

__all__ = ["L2SVM"]
