"""A scikit-learn transformer that compresses its input, for fusedml estimators in a pipeline."""

from __future__ import annotations

import warnings

from fusedml.algorithms._base import validated
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

import fusedml as fm


class Compressor(TransformerMixin, BaseEstimator):
    """``transform`` returns ``fm.compress(X)``: column groups the fusedml estimators fit and
    predict on without decompressing them (other scikit-learn steps need dense or sparse data:
    put it last before the estimator). Where compression would not pay, X passes through as it
    is; ``quiet`` silences the ``CompressionSkippedWarning`` saying so.

    Parameters are ``fm.compress``'s: ``cocode`` (merge correlated columns into one group),
    ``min_ratio`` (compress only when the result is at least this many times smaller), ``seed``
    (the planning sample's rows).
    """

    def __init__(self, cocode=True, min_ratio=1.0, seed=0, quiet=False):
        self.cocode = cocode
        self.min_ratio = min_ratio
        self.seed = seed
        self.quiet = quiet

    def fit(self, X, y=None):
        validated(self, X)
        return self

    def transform(self, X):
        check_is_fitted(self, "n_features_in_")
        X = validated(self, X, reset=False)
        with warnings.catch_warnings():
            if self.quiet:
                warnings.simplefilter("ignore", fm.CompressionSkippedWarning)
            return fm.compress(X, cocode=self.cocode, seed=self.seed, min_ratio=self.min_ratio)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.requires_fit = False
        return tags
