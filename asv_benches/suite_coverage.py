"""Print what the asv suite covers: per benchmark class, its parameter combinations, how many run
and which are skipped with their reasons (the micro and estimator suites' ``skip_reason``).
Run: .venv/bin/python asv_benches/suite_coverage.py"""

import inspect
import itertools
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from benchmarks import estimators, micro

SUITES = {micro: micro.skip_reason, estimators: estimators.skip_reason}


def classes(module):
    for name, cls in vars(module).items():
        if inspect.isclass(cls) and not name.startswith("_") and hasattr(cls, "params"):
            yield name, cls


def functions(cls) -> list[str]:
    return [n for n in dir(cls) if n.split("_")[0] in ("time", "peakmem", "track", "timeraw")]


def main():
    total_run = total_skip = 0
    reasons: Counter[str] = Counter()
    for module, skip_reason in SUITES.items():
        for name, cls in classes(module):
            subject = getattr(cls, "pattern", "") or getattr(cls, "estimator", "")
            combos = list(itertools.product(*cls.params))
            skipped = [(c, skip_reason(subject, *c)) for c in combos]
            skipped = [(c, r) for c, r in skipped if r]
            n_fn = len(functions(cls))
            total_run += (len(combos) - len(skipped)) * n_fn
            total_skip += len(skipped) * n_fn
            print(f"{module.__name__.split('.')[-1]}.{name:12} {len(combos):3} combinations "
                  f"({' x '.join(str(len(p)) for p in cls.params)}), {len(skipped):2} skipped, "
                  f"x {n_fn} benchmarks: {', '.join(functions(cls))}")  # fmt: skip
            for combo, reason in skipped:
                reasons[f"{subject}: {reason}"] += 1
                print(f"    skip {combo}: {reason}")
    print(f"\nbenchmark runs: {total_run} run, {total_skip} skipped")
    print("skips by reason:")
    for reason, n in sorted(reasons.items()):
        print(f"  {n:3}  {reason}")


if __name__ == "__main__":
    main()
