"""``fusedml reproduce``: run the experiments, print the console table and write the CSV, JSON,
plots and Markdown report into ``--out``."""

from __future__ import annotations

import argparse
import datetime
import os
import sys

import fusedml as fm
from fusedml.reproduce.experiments import EXPERIMENTS, FORMATS
from fusedml.reproduce.plots import write_plots
from fusedml.reproduce.report import markdown, meta_of, write_data
from fusedml.reproduce.runner import Options, Outcome, run
from fusedml.reproduce.tables import console_table, rows

REPEATS = {"tiny": 2, "quick": 3, "full": 3}


def _names(known) -> callable:
    def parse(text: str) -> tuple[str, ...]:
        names = tuple(n for n in text.split(",") if n)
        unknown = [n for n in names if n not in known]
        if unknown or not names:
            raise argparse.ArgumentTypeError(
                f"unknown {', '.join(unknown) or '(none given)'}; known: {', '.join(known)}"
            )
        return names

    return parse


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", dest="preset", action="store_const", const="quick",
                      help="small sizes, about 2.5 minutes on 2 cores with a cold kernel cache "
                           "(the default)")  # fmt: skip
    size.add_argument(
        "--full",
        dest="preset",
        action="store_const",
        const="full",
        help="larger sizes, about 25 minutes on 2 cores: micro-benchmarks up "
        "to 2M rows, fits on dense 1M x 10, CSR 200k x 1000, Airline-like 1M x 28, "
        "Mnist8m-like 20k x 784, Netflix-like 1.2k users",
    )
    size.add_argument(
        "--tiny", dest="preset", action="store_const", const="tiny", help=argparse.SUPPRESS
    )  # the tests' configuration
    parser.set_defaults(preset="quick")
    parser.add_argument("--experiments", type=_names(tuple(EXPERIMENTS)),
                        default=tuple(EXPERIMENTS), help="comma-separated; default all: "
                        + ",".join(EXPERIMENTS))  # fmt: skip
    parser.add_argument("--modes", type=_names(fm.FUSION_MODES), default=fm.FUSION_MODES,
                        help="comma-separated fusion modes; default all")  # fmt: skip
    parser.add_argument("--formats", type=_names(FORMATS), default=FORMATS,
                        help="comma-separated; default dense,csr,compressed")  # fmt: skip
    parser.add_argument("--repeat", type=_positive, help="timed calls per mode (default 3)")
    parser.add_argument("--out", default="reproduce-results", help="output folder")
    parser.add_argument(
        "--reuse-kernel-cache",
        action="store_true",
        help="compile into the configured kernel cache (FUSEDML_CACHE_DIR) "
        "instead of a fresh one in --out (cold compiles are then not measured)",
    )
    parser.add_argument("--workers", type=_positive, default=0,
                        help="processes of the cold pass (default: one per core)")  # fmt: skip
    parser.add_argument("--cold-compile", choices=("background", "eager"), default="background",
                        help="compile mode of the cold pass's first calls (background, the default "
                        "as fusedml's; eager compiles each kernel inside the call)")  # fmt: skip
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")


def options_of(args: argparse.Namespace) -> Options:
    return Options(
        preset=args.preset, experiments=args.experiments, modes=args.modes,
        formats=args.formats, repeat=args.repeat or REPEATS[args.preset], out=args.out,
        fresh_cache=not args.reuse_kernel_cache, workers=args.workers,
        cold_compile=args.cold_compile, progress=not args.no_progress,
    )  # fmt: skip


def write_outputs(outcome: Outcome, options: Options, command: str, out=None) -> list[str]:
    """Console table on ``out``; CSV, JSON, plots and report.md into ``options.out``."""
    out = out or sys.stdout
    date = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    found = rows(outcome.records)
    print(console_table(found, options.modes, color=out.isatty()), file=out)
    files = write_data(outcome.records, options.out)
    plots = write_plots(outcome.records, options.out, options.modes)
    meta = meta_of(options, outcome, command, date)
    report = os.path.join(options.out, "report.md")
    with open(report, "w") as f:
        f.write(markdown(outcome.records, meta, plots, options.modes))
    return [*files, *plots, report]


def reproduce(args: argparse.Namespace, argv: list[str]) -> int:
    options = options_of(args)
    outcome = run(options)
    command = "fusedml " + " ".join(argv)
    files = write_outputs(outcome, options, command)
    state = "interrupted after" if outcome.interrupted else "finished"
    print(f"\n{state} {len(rows(outcome.records))} cases in {outcome.seconds:.0f} s; report: "
          f"{os.path.join(options.out, 'report.md')} ({len(files)} files)")  # fmt: skip
    return 130 if outcome.interrupted else 0
