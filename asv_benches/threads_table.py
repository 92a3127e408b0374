"""Print the interleaving benchmark (benchmarks/threads.py) as a table: every pattern's cost_based
kernel alone and right after a threaded numpy BLAS call, medians in one process.

Run: .venv/bin/python asv_benches/threads_table.py [--baseline]. ``--baseline`` runs it in a child
process with the configuration before the shared pool (FUSEDML_BLAS_POOL=0, OMP_WAIT_POLICY=PASSIVE)
and prints both tables."""

import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from benchmarks.threads import PATTERNS, blas_call, measure

from fusedml.runtime import threads


def main():
    if "--baseline" in sys.argv:
        env = dict(os.environ, FUSEDML_BLAS_POOL="0", OMP_WAIT_POLICY="PASSIVE")
        env.pop("GOMP_SPINCOUNT", None)  # set by importing fusedml here
        print("== baseline: FUSEDML_BLAS_POOL=0 OMP_WAIT_POLICY=PASSIVE", flush=True)
        subprocess.run([sys.executable, __file__], env=env, check=True)
        print("== this configuration", flush=True)
    calls = blas_call()
    print("kernel medians (ms) alone, right after a threaded BLAS call, right after a one-thread"
          " numpy sweep of the same bytes (the cache control)")  # fmt: skip
    print(f"{'pattern':8} {'format':6} {'alone':>8} {'after BLAS':>10} {'after sweep':>11} "
          f"{'BLAS/alone':>10} {'sweep/alone':>11} {'BLAS call':>9}")  # fmt: skip
    for pattern in PATTERNS:
        for fmt in ("dense", "csr"):
            m = measure(pattern, fmt, calls)
            print(
                f"{pattern:8} {fmt:6} {m['alone'] * 1e3:8.2f} {m['after_blas'] * 1e3:10.2f} "
                f"{m['after_sweep'] * 1e3:11.2f} {m['after_blas'] / m['alone']:10.2f} "
                f"{m['after_sweep'] / m['alone']:11.2f} {m['blas'] * 1e3:9.2f}",
                flush=True,
            )
    print(f"threads: {threads.status()}")


if __name__ == "__main__":
    main()
