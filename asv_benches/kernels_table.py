"""Print one table: every implementation of the paper's micro-benchmark patterns (the asv micro
suite, benchmarks/micro.py) per format, median of several runs in this process (the
implementations of a pattern timed in turns, so that a shared machine's noise hits them alike),
with the generated kernels' time against hand-written numba, numexpr, numpy/scipy and unfused
fusedml.
Run: .venv/bin/python asv_benches/kernels_table.py [--rows 2000000] [--formats dense,csr]"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from benchmarks.micro import EXPRESSIONS, IMPLEMENTATIONS, implementation, make_data, skip_reason

from fusedml._timing import interleaved_median_seconds

REPEAT = 11
# the Outer pattern's unfused plan materializes a dense (rows/10) x (rows/40) product
OUTER_ROWS = 200_000


def times(pattern, fmt, rows):
    d = make_data(pattern, fmt, OUTER_ROWS if pattern == "outer" else rows)
    runs = {
        name: implementation(pattern, fmt, name, d)
        for name in IMPLEMENTATIONS
        if skip_reason(pattern, fmt, name) is None
    }
    for run in runs.values():
        run()  # compile or load
    return {k: s * 1e3 for k, s in interleaved_median_seconds(runs, REPEAT).items()}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--formats", default="dense,csr")
    args = parser.parse_args()
    print(f"{'pattern':12} {'format':10} {'implementation':20} {'ms':>9}")
    for pattern in EXPRESSIONS:
        for fmt in args.formats.split(","):
            ms = times(pattern, fmt, args.rows)
            for name, t in ms.items():
                print(f"{pattern:12} {fmt:10} {name:20} {t:9.2f}", flush=True)
            gen = ms["cost_based"]
            hand = ms.get("hand-written numba", ms["hand"])
            ratios = [f"generated/hand = {gen / hand:.2f}"]
            for other in ("numexpr", "numpy/scipy", "none"):
                if other in ms:
                    ratios.append(f"{other}/generated = {ms[other] / gen:.2f}")
            print(f"{'':24} -> {', '.join(ratios)}")


if __name__ == "__main__":
    main()
