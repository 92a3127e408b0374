"""Print the cold-start table: each estimator's first fit in a new process at 20k, 200k and 1M
rows (benchmarks/coldstart.py), every run in its own process, with the cold run's tier counts
(fused operators waiting for their kernel, those the interim tier ran, kernels run).

- none: ``fusion="none"`` (operator at a time; nothing to compile);
- cold: cost_based on an empty kernel cache under the default compile mode (background: the
  reference tier runs while a worker compiles); the worker then finishes, untimed;
- warm: cost_based in a new process on the cache the cold run filled;
- second: the warm process's second fit (everything in memory);
- 2nd proc: cost_based in a new process started as soon as a cold one exits, on its cache, while
  that one's compile worker is still compiling (the kernels are not on disk yet);
- none 2nd: the none process's second fit (first minus it: a new process's own warm-up, e.g.
  first touches of fresh memory, with nothing to compile);
- eager (with --eager): cost_based on an empty cache, compiling in the process (the old behaviour).

Targets: cold and 2nd proc <= 1.25 x none + 0.2 s; warm <= second + 0.3 s.

Each column is the median over --repeat runs (default 3), every run in fresh processes.

Run: .venv/bin/python asv_benches/coldstart_table.py [--eager] [--repeat 3]
[--estimators L2SVM,...] [--rows 20000,...]"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from benchmarks.coldstart import ALS_SCALES, ESTIMATORS, ROWS  # noqa: E402
from benchmarks.common import wait_for_compile_workers  # noqa: E402

# the table's rows: the estimators, and GLM with the paper's binomial-probit family (its bodies
# take the longest to plan)
TABLE_ESTIMATORS = (*ESTIMATORS[:3], "GLM-probit", *ESTIMATORS[3:])


def child(name, rows, fusion, cache, compile_mode, wait=False, settle=True):
    """One first fit in a new process; ``settle``: then wait until no compile worker runs."""
    env = dict(os.environ, FUSEDML_CACHE_DIR=cache, FUSEDML_COMPILE=compile_mode)
    cmd = [sys.executable, "-m", "benchmarks.coldstart", name, str(rows), fusion]
    out = subprocess.run(cmd + (["--wait"] if wait else []), cwd=HERE, env=env, check=True,
                         capture_output=True, text=True).stdout  # fmt: skip
    if settle:
        wait_for_compile_workers()
    return json.loads(out.splitlines()[-1])


def _size(name, rows):
    if name == "ALSCG":  # users of the ratings matrix
        return f"{int(12_004 * ALS_SCALES[rows])}u"
    return str(rows)


def _runs(name, rows):
    """(none, cold, warm, second process) runs of one estimator and size, each in a new
    process."""
    none = child(name, rows, "none", tempfile.mkdtemp(), "background")
    cache = tempfile.mkdtemp()
    cold = child(name, rows, "cost_based", cache, "background", wait=True)
    warm = child(name, rows, "cost_based", cache, "background")
    shared = tempfile.mkdtemp()
    child(name, rows, "cost_based", shared, "background", settle=False)  # its worker compiles on
    second = child(name, rows, "cost_based", shared, "background")
    return none, cold, warm, second


def _interim(stats):
    """Fused operators the interim tier ran in row blocks or at a driver's stored entries (the
    rest of the waiting ones ran through the reference)."""
    return stats.get("interim_in_row_blocks", 0) + stats.get("interim_at_stored_entries", 0)


def _median(results):
    """Per-field medians of runs' timings; the first run's stats."""
    fields = ("first", "second", "wait")
    return {"stats": results[0]["stats"],
            **{f: statistics.median(r[f] for r in results) for f in fields}}  # fmt: skip


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--eager", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--estimators", default=",".join(TABLE_ESTIMATORS))
    parser.add_argument("--rows", default=",".join(map(str, ROWS)))
    args = parser.parse_args()
    print("first fit in a new process (s); cold = empty cache, background compile tier")
    head = (f"{'estimator':9} {'rows':>9} {'none':>7} {'cold':>7} {'cold/none':>9} "
            f"{'2nd proc':>8} {'ok':>3} "
            f"{'warm':>7} {'second':>7} {'warm-sec':>8} {'ok':>3} {'waiting':>7} {'interim':>7} "
            f"{'kernels':>7} {'compiles':>8} {'bg s':>6} {'none 2nd':>8}")  # fmt: skip
    head += f" {'eager':>7}" if args.eager else ""
    print(head, flush=True)
    for name in args.estimators.split(","):
        for rows in map(int, args.rows.split(",")):
            runs = [_runs(name, rows) for _ in range(args.repeat)]
            none, cold, warm, second = (_median([r[k] for r in runs]) for k in range(4))
            s = cold["stats"]
            bound = 1.25 * none["first"] + 0.2
            cold_ok = cold["first"] <= bound and second["first"] <= bound
            warm_ok = warm["first"] <= warm["second"] + 0.3
            line = (
                f"{name:9} {_size(name, rows):>9} {none['first']:7.3f} {cold['first']:7.3f} "
                f"{cold['first'] / none['first']:9.2f} {second['first']:8.3f} "
                f"{'yes' if cold_ok else 'NO':>3} "
                f"{warm['first']:7.3f} {warm['second']:7.3f} "
                f"{warm['first'] - warm['second']:8.3f} {'yes' if warm_ok else 'NO':>3} "
                f"{s.get('fused_ops_awaiting_kernel', 0):7d} {_interim(s):7d} "
                f"{s.get('kernels_executed', 0):7d} "
                f"{s.get('background_compiles_started', 0):8d} {cold['wait']:6.1f} "
                f"{none['second']:8.3f}"
            )
            if args.eager:
                eager = child(name, rows, "cost_based", tempfile.mkdtemp(), "eager")
                line += f" {eager['first']:7.2f}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
