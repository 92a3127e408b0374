"""scikit-learn estimators written against the public fusedml API (filled by a later issue)."""
