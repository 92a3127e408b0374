"""A seeded stand-in for the Airline78 data (the ASA Data Expo's BTS on-time table, 2007-2008):
its 29 columns, integer-coded, with the real columns' cardinalities, skews and relations, and
rows in date order as in the real files, which gives the date columns long runs (as in CLA's
evaluation). The spec is /work/shared/reference/datasets.md's "Airline78" row.
"""

from __future__ import annotations

import numpy as np

COLUMNS = (
    "Year", "Month", "DayofMonth", "DayOfWeek", "DepTime", "CRSDepTime", "ArrTime", "CRSArrTime",
    "UniqueCarrier", "FlightNum", "TailNum", "ActualElapsedTime", "CRSElapsedTime", "AirTime",
    "ArrDelay", "DepDelay", "Origin", "Dest", "Distance", "TaxiIn", "TaxiOut", "Cancelled",
    "CancellationCode", "Diverted", "CarrierDelay", "WeatherDelay", "NASDelay", "SecurityDelay",
    "LateAircraftDelay",
)  # fmt: skip
FIRST_DAY = np.datetime64("2007-01-01")  # a Monday (DayOfWeek 1, as the BTS numbers days)
DAYS = 731  # 2007 and 2008
CARRIERS, FLIGHTS, TAILS, AIRPORTS = 20, 7_000, 5_000, 300
# mean minutes of the delay causes where one is reported (carrier, weather, NAS, security, late
# aircraft), each at 20% of the rows
CAUSE_MEANS = (15.0, 3.0, 15.0, 0.5, 20.0)
FILL_ROWS = 4096  # rows of X written at a time (about 1 MB: they stay in cache)
DELAYED = 15  # minutes of arrival delay from which a flight counts as late (the label's +1)


def airline_like(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(X, y): X n x 29 float64 (C-contiguous), the COLUMNS, rows sorted by date; y = +1 where
    ArrDelay > 15, else -1 (about 22% positive). X holds ArrDelay (column 14): drop it for a
    classification task that is not trivial."""
    rng = np.random.default_rng(seed)
    cols = _dates(rng, n)
    cols |= _schedule(rng, n)
    cols |= _delays(rng, n, cols)
    cols |= _outcomes(rng, n, cols)
    for name in ("DepTime", "CRSDepTime", "ArrTime", "CRSArrTime"):
        cols[name] = cols[name] // 60 * 100 + cols[name] % 60  # the BTS's hhmm clock times
    return _rows(cols, n), np.where(cols["ArrDelay"] > DELAYED, 1.0, -1.0)


def _rows(cols: dict[str, np.ndarray], n: int) -> np.ndarray:
    """The COLUMNS side by side, row-major. Filled a block of rows at a time: writing a whole
    column at once would touch every cache line of X 29 times, which takes 5 times longer."""
    X = np.empty((n, len(COLUMNS)))
    for lo in range(0, n, FILL_ROWS):
        block = X[lo : lo + FILL_ROWS]
        for j, name in enumerate(COLUMNS):
            block[:, j] = cols[name][lo : lo + FILL_ROWS]
    return X


def _dates(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    """Year, Month, DayofMonth, DayOfWeek of n flights spread evenly over the two years, in date
    order (counting rows per day and repeating the day is a sort in linear time)."""
    per_day = rng.multinomial(n, np.full(DAYS, 1.0 / DAYS))
    offset = np.repeat(np.arange(DAYS), per_day)
    date = FIRST_DAY + offset
    month = date.astype("datetime64[M]")
    year = month.astype("datetime64[Y]")
    return {
        "Year": year.astype(np.int64) + 1970,
        "Month": (month - year).astype(np.int64) + 1,
        "DayofMonth": (date - month).astype(np.int64) + 1,
        "DayOfWeek": offset % 7 + 1,
    }


def _schedule(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    """Who flies where, when: carriers and airports Zipf-distributed, distance fixed per route,
    scheduled times on a 5-minute grid (minutes after midnight until converted to hhmm)."""
    origin = _zipf(rng, AIRPORTS, n)
    dest = _zipf(rng, AIRPORTS, n)
    dest = np.where(dest == origin, dest % AIRPORTS + 1, dest)  # no flight lands where it left
    route = rng.lognormal(6.4, 0.6, (AIRPORTS, AIRPORTS)).round()
    route = np.triu(route) + np.triu(route, 1).T  # A to B is as far as B to A
    distance = route[origin - 1, dest - 1]
    elapsed = np.maximum(distance / 7.5 + 30 + rng.normal(0, 8, n), 15).round()
    departure = 5 * rng.integers(5 * 12, 23 * 12, n)  # 5:00 to 22:55
    return {
        "UniqueCarrier": _zipf(rng, CARRIERS, n),
        "FlightNum": rng.integers(1, FLIGHTS + 1, n),
        "TailNum": rng.integers(1, TAILS + 1, n),
        "Origin": origin,
        "Dest": dest,
        "Distance": distance,
        "CRSElapsedTime": elapsed,
        "CRSDepTime": departure,
        "CRSArrTime": 5 * np.round((departure + elapsed) / 5) % 1440,
    }


def _delays(rng: np.random.Generator, n: int, cols: dict) -> dict[str, np.ndarray]:
    """Departure delays (55% early, by Exp(4) minutes; 45% late, by Exp(25)), arrival delays
    near them, the taxi times and the actual times that follow, in whole minutes."""
    late = rng.random(n) < 0.45
    dep_delay = np.where(late, rng.exponential(25, n), -rng.exponential(4, n)).round()
    arr_delay = (dep_delay + rng.normal(-3, 12, n)).round()
    taxi_in, taxi_out = rng.poisson(7, n), rng.poisson(15, n)
    elapsed = np.maximum(cols["CRSElapsedTime"] + arr_delay - dep_delay, taxi_in + taxi_out + 10)
    return {
        "DepDelay": dep_delay,
        "ArrDelay": arr_delay,
        "TaxiIn": taxi_in,
        "TaxiOut": taxi_out,
        "ActualElapsedTime": elapsed,
        "AirTime": elapsed - taxi_in - taxi_out,
        "DepTime": (cols["CRSDepTime"] + dep_delay) % 1440,
        "ArrTime": (cols["CRSArrTime"] + arr_delay) % 1440,
    }


def _outcomes(rng: np.random.Generator, n: int, cols: dict) -> dict[str, np.ndarray]:
    """Cancellations (2%, with a code 1-4) and diversions (0.2%), whose unknown times and delays
    are 0 (where the real table has NA), and the delay causes."""
    cancelled = rng.random(n) < 0.02
    diverted = ~cancelled & (rng.random(n) < 0.002)
    out = {
        "Cancelled": cancelled,
        "CancellationCode": np.where(cancelled, rng.integers(1, 5, n), 0),
        "Diverted": diverted,
    }
    for name, mean in zip(COLUMNS[-5:], CAUSE_MEANS, strict=True):
        # whole minutes, at least 1: a reported cause is never 0
        out[name] = np.where(rng.random(n) < 0.2, np.ceil(rng.exponential(mean, n)), 0.0)
    unknown = {"ArrTime", "ArrDelay", "ActualElapsedTime", "AirTime", "TaxiIn"}
    for name in ("DepTime", "DepDelay", "TaxiOut", *unknown):
        gone = cancelled | diverted if name in unknown else cancelled
        out[name] = np.where(gone, 0, cols[name])
    return out


def _zipf(rng: np.random.Generator, k: int, n: int) -> np.ndarray:
    """n draws of 1..k with P(i) proportional to 1 / i (a Zipf law, exponent 1); codes from 1,
    as recoding a category column numbers them."""
    p = 1.0 / np.arange(1, k + 1)
    return 1 + rng.choice(k, n, p=p / p.sum())
