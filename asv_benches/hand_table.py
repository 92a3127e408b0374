"""Print every hand operator's pattern under fusion="hand", "cost_based" and "none" (median of
several runs, one process) with the ratios generated/hand and none/hand; "!" flags generated code
slower than hand code by more than ``LIMIT``.

Run: .venv/bin/python asv_benches/hand_table.py [--scale 0.25] [--repeat 7] [pattern ...]
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from benchmarks.hand import MODES
from fusedml.datasets import HAND_PATTERNS, hand_data

import fusedml as fm
from fusedml._timing import median_seconds

LIMIT = 1.25  # generated code slower than hand code by more than this needs an explanation


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("patterns", nargs="*", default=list(HAND_PATTERNS))
    args = parser.parse_args(argv)
    header = (
        f"{'pattern':26} {'data':6} {'hand operator':20} {'cost_based plan':22} "
        + " ".join(f"{m + ' ms':>14}" for m in MODES)
        + f" {'gen/hand':>9} {'none/hand':>9}"
    )
    print(header)
    print("-" * len(header))
    for name in args.patterns:
        pattern = HAND_PATTERNS[name]
        for fmt in ("dense", "sparse"):
            expr = pattern.build(hand_data(pattern, fmt, scale=args.scale))
            hand = ",".join(fm.explain(expr, fusion="hand").hand_operators) or "-"
            gen = "+".join(op.template for op in fm.explain(expr).operators) or "unfused"
            ms = {
                m: median_seconds(lambda m=m, e=expr: fm.evaluate(e, fusion=m), args.repeat) * 1e3
                for m in MODES
            }
            ratio = ms["cost_based"] / ms["hand"]
            flag = " !" if ratio > LIMIT else ""
            print(
                f"{name[:26]:26} {fmt:6} {hand[:20]:20} {gen[:22]:22} "
                + " ".join(f"{ms[m]:14.2f}" for m in MODES)
                + f" {ratio:9.2f} {ms['none'] / ms['hand']:9.2f}{flag}",
                flush=True,
            )


if __name__ == "__main__":
    main()
