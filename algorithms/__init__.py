"""scikit-learn estimators written against the public fusedml API."""

from fusedml.algorithms.alscg import ALSCG
from fusedml.algorithms.compressor import Compressor
from fusedml.algorithms.glm import GLM
from fusedml.algorithms.kmeans import KMeans
from fusedml.algorithms.l2svm import L2SVM
from fusedml.algorithms.mlogreg import MLogReg

__all__ = ["ALSCG", "GLM", "L2SVM", "Compressor", "KMeans", "MLogReg"]
