"""Print the Row-floor benchmark (benchmarks/row_floor.py) as a table: per body and width K, the
generated kernel, the hand-written numba kernel (and, for KMeans, the hand-written kernel in BLAS
tiles), one read of X and (KMeans) scikit-learn's Lloyd iteration (the median time of a 12-iteration
fit less that of a 4-iteration fit, over 8), all timed in turns in one process, with the ratios.

Run: .venv/bin/python asv_benches/row_floor_table.py [--rows 1000000] [--widths 2,4,8,16,32,64]
[--bodies kmeans,kmeans-lloyd,mlogreg-hessian,mlogreg-loss] [--repeat 11]"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from benchmarks import row_floor as rf

from fusedml._timing import interleaved_median_seconds


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--widths", default=",".join(map(str, rf.WIDTHS)))
    parser.add_argument("--bodies", default=",".join(rf.BODIES))
    parser.add_argument("--repeat", type=int, default=11)
    args = parser.parse_args()
    print(f"X: {args.rows} x {rf.COLS} dense; ms, medians of {args.repeat} timed in turns")
    print(f"{'body':16} {'K':>3} {'generated':>9} {'hand':>8} {'tiles':>7} {'floor':>7} "
          f"{'sklearn':>8} {'gen/hand':>8} {'gen/floor':>9} {'gen/sklearn':>11} "
          f"{'tiles/sklearn':>13}")  # fmt: skip
    for body in args.bodies.split(","):
        for k in map(int, args.widths.split(",")):
            d = rf.make_data(body, k, args.rows)
            runs = {}
            for name in ("generated", "hand-written numba", "hand-written tiles", "memory floor"):
                run = rf.implementation(body, name, d)
                if run is not None:
                    runs[name] = run
            kmeans = body.startswith("kmeans")
            if kmeans:
                runs.update({it: rf.sklearn_lloyd_fit(d, it) for it in (4, 12)})
            ms = {n: t * 1e3 for n, t in interleaved_median_seconds(runs, args.repeat).items()}
            gen, hand, floor = ms["generated"], ms.get("hand-written numba"), ms["memory floor"]
            tiles = ms.get("hand-written tiles")
            sk = (ms[12] - ms[4]) / 8 if kmeans else None
            print(
                f"{body:16} {k:3d} {gen:9.2f} "
                + (f"{hand:8.2f} " if hand else f"{'':9}")
                + (f"{tiles:7.2f}" if tiles else f"{'':7}")
                + f" {floor:7.2f} "
                + (f"{sk:8.2f}" if sk else f"{'':8}")
                + (f" {gen / hand:8.2f}" if hand else f" {'':8}")
                + f" {gen / floor:9.2f} "
                + (f"{gen / sk:11.2f} {tiles / sk:13.2f}" if sk else ""),
                flush=True,
            )


if __name__ == "__main__":
    main()
