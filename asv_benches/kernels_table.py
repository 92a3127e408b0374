"""Print one table: every implementation of the paper's four patterns, median of several runs,
with the generated kernels' time against hand-written numba, numexpr, numpy and unfused fusedml.
Run: .venv/bin/python asv_benches/kernels_table.py"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from benchmarks.kernels import implementations

from fusedml._timing import median_seconds

REPEAT = 11


def main():
    table = {
        p: {k: median_seconds(f, REPEAT) * 1e3 for k, f in impls.items()}
        for p, impls in implementations().items()
    }
    print(f"{'pattern':32} {'implementation':28} {'ms':>9}")
    for pattern, times in table.items():
        for impl, ms in times.items():
            print(f"{pattern:32} {impl:28} {ms:9.2f}")
        gen = times["fusedml cost_based"]
        hand = times.get("hand-written numba", times["fusedml hand"])
        ratios = [f"generated/hand = {gen / hand:.2f}"]
        if "numexpr" in times:
            ratios.append(f"numexpr/generated = {times['numexpr'] / gen:.2f}")
        ratios.append(f"numpy/generated = {times['numpy'] / gen:.2f}")
        ratios.append(f"unfused (fusedml none)/generated = {times['fusedml none'] / gen:.2f}")
        print(f"{'':32} -> {', '.join(ratios)}")


if __name__ == "__main__":
    main()
