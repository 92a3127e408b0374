"""The files a run leaves in its output folder: ``runs.csv`` and ``runs.json`` (every record),
``report.md`` (findings beside the paper's, tables, plots) and ``plots/*.png``."""

from __future__ import annotations

import csv
import json
import os
import platform
import statistics
from dataclasses import asdict

from fusedml.datasets import REGISTRY
from fusedml.reproduce.tables import LABELS, NEAR_BEST, Row, fmt_ratio, fmt_seconds, rows

PAPER_GEN_VS_FUSED = 21.0  # "up to 21x compared to hand-written fused operators" (end to end)
# the paper's development measurements (reference/paper.md sections 3 and 4.3: SystemML commits
# and mailing-list posts of 2017-2018, not its final figures): experiment -> (its setting,
# seconds of Base, Fused and Gen, None where not stated, and the format compared here)
PAPER = {
    "cell": ("sum(X*Y*Z), sparse 1M x 1K, 20 iterations", (82, 11.7, 5.9), "csr"),
    "magg": ("sum(X*Y), sum(Y*Z), sparse 1M x 1K", (129, 12.4, 7.1), "csr"),
    "L2SVM": ("dense 100M x 10, 20 iterations", (496, 219, 32), "dense"),
    "MLogReg": ("dense 100M x 10", (None, 512, 193), "dense"),
    "GLM-probit": ("dense 100M x 10, 20/10 iterations", (2500, 2722, 145), "dense"),
    "KMeans": ("dense 100M x 10, k=5, 20 iterations", (None, 1972, 128), "dense"),
}
RED_OPEN, RED_CLOSE = '<span style="color:red">', "</span>"


def write_data(records: list[dict], out: str) -> list[str]:
    """runs.json (all fields) and runs.csv (scalar fields) in ``out``."""
    os.makedirs(out, exist_ok=True)
    json_path, csv_path = os.path.join(out, "runs.json"), os.path.join(out, "runs.csv")
    with open(json_path, "w") as f:
        json.dump(records, f, indent=1, default=_plain)
    fields: list[str] = []
    for r in records:
        fields += [k for k in r if k not in fields and not isinstance(r[k], list)]
    with open(csv_path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(records)
    return [csv_path, json_path]


def _plain(value):
    return float(value) if isinstance(value, int | float) else str(value)


def markdown(records: list[dict], meta: dict, plots: list[str], modes: tuple[str, ...]) -> str:
    found = rows(records)
    fits = [r for r in found if r.kind == "fit"]
    micro = [r for r in found if r.kind == "micro"]
    parts = [
        _head(meta),
        "## Findings\n",
        *_findings(fits, micro),
        _table("End-to-end fits (median seconds per fit)", fits, modes),
        _table("Micro-benchmarks (median seconds per evaluation)", micro, modes),
        _beside_paper(found),
        _overheads(fits),
        "## Plots\n\n"
        + "\n".join(f"![{os.path.basename(p)}](plots/{os.path.basename(p)})" for p in plots)
        + "\n",
    ]
    return "\n".join(parts)


def _head(meta: dict) -> str:
    cache = ("a fresh kernel cache (every kernel compiled cold)" if meta["fresh_cache"]
             else f"the kernel cache in {meta['cache_dir']}")  # fmt: skip
    status = "**interrupted (Ctrl-C): the cases below are those done**\n\n" if meta[
        "interrupted"] else ""  # fmt: skip
    return (
        f"# fusedml reproduce: {meta['preset']} run\n\n{status}"
        f"`{meta['command']}` on {platform.node()} ({os.cpu_count()} cores, "
        f"{platform.processor() or platform.machine()}), {meta['date']}: {meta['seconds']:.0f} s, "
        f"{meta['cases']} cases, median of {meta['repeat']} timed calls per mode after a first "
        f"call (modes timed in turns), {cache}. Modes by the paper's names: "
        + ", ".join(f"{LABELS[m]} = `{m}`" for m in LABELS)
        + ".\n"
    )


def _findings(fits: list[Row], micro: list[Row]) -> list[str]:
    lines = []
    for name, found in (("fits", fits), ("micro-benchmarks", micro)):
        lines += _speedups(name, found)
    lines += _near_best(fits + micro)
    lines += _overhead_findings(fits)
    lines += _agreement(fits + micro)
    return ["\n".join(f"- {line}" for line in lines) + "\n"]


def _spread(values: list[float]) -> str:
    if not values:
        return "no runs"
    return (f"median {statistics.median(values):.2f}x, "
            f"{min(values):.2f}x to {max(values):.2f}x")  # fmt: skip


def _speedups(name: str, found: list[Row]) -> list[str]:
    if not found:
        return []
    base = [x for r in found if (x := r.speedup("none")) is not None]
    fused = [(x, r) for r in found if (x := r.speedup("hand")) is not None]
    lines = [f"**{name}, Gen vs Base**: {_spread(base)} over {len(base)} cases."]
    if fused:
        top, at = max(fused, key=lambda t: t[0])
        lines.append(f"**{name}, Gen vs Fused**: {_spread([x for x, _ in fused])}; the largest "
                     f"is {top:.2f}x ({at.label}).")  # fmt: skip
        if name == "fits":
            verdict = ("reaches" if top >= PAPER_GEN_VS_FUSED else
                       "does not reach: this machine contradicts it at these sizes")  # fmt: skip
            lines.append(f"The paper reports Gen up to {PAPER_GEN_VS_FUSED:.0f}x faster than "
                         f"Fused end to end; the largest here, {top:.2f}x, {verdict}.")  # fmt: skip
            slower = [r.label for x, r in fused if x < 1 / NEAR_BEST]
            if slower:
                lines.append("Gen is slower than Fused (by more than 5%) on: "
                             + "; ".join(slower) + ".")  # fmt: skip
    return lines


def _near_best(found: list[Row]) -> list[str]:
    timed = [r for r in found if r.gen_vs_best is not None]
    misses = [r for r in timed if r.gen_vs_best > NEAR_BEST]
    lines = [f"**Gen within 5% of the best mode** on {len(timed) - len(misses)} of {len(timed)} "
             "cases."]  # fmt: skip
    for r in misses:
        best = r.best
        gen, other = r.modes["cost_based"], r.modes[best]
        same = _operators(other) == _operators(gen)
        plans = ("the same operator counts: the plans differ in what the operators cover, or the "
                 "gap is noise" if same else
                 f"{_operators(other)} planned vs Gen's {_operators(gen)}")  # fmt: skip
        lines.append(
            f"Not on {r.label}: {LABELS[best]} is {r.gen_vs_best:.2f}x faster "
            f"({fmt_seconds(other['median_s'])} vs {fmt_seconds(gen['median_s'])}; {plans})."
        )
    return lines


def _operators(record: dict) -> str:
    counts = [f"{record.get(f'ops_{t}', 0)} {t}" for t in ("cell", "row", "magg", "outer", "hand")
              if record.get(f"ops_{t}", 0)]  # fmt: skip
    return ", ".join(counts) or "no fused operators"


def _shares(found: list[Row], *fields: str) -> list[float]:
    """Per fit, Gen's ``fields`` summed, over its median fit time."""
    out = []
    for r in found:
        g = r.modes.get("cost_based")
        if g and all(g.get(f) is not None for f in fields) and g.get("median_s"):
            out.append(sum(g[f] for f in fields) / g["median_s"])
    return out


def _overhead_findings(fits: list[Row]) -> list[str]:
    if not fits:
        return []
    opt = _shares(fits, "optimize_s")
    warm = _shares(fits, "warm_optimize_s", "warm_load_s")
    firsts = _cold_firsts(fits)
    within = sum(gen <= COLD_BOUND * base + COLD_SLACK_S for gen, base in firsts)
    gens = [r.modes.get("cost_based", {}) for r in fits]
    compiled = [g for g in gens if g.get("compile_s")]
    lines = [
        f"**Gen's optimization** (tracing, rewrites, exploration, selection, code generation) "
        f"as a share of one fit's time: {_percent(opt)}.",
        f"**Gen's cold first fit** (a new process, empty kernel cache) over Base's first fit: "
        f"{_spread([gen / base for gen, base in firsts])}, within {COLD_BOUND}x + {COLD_SLACK_S} s "
        f"in {within} of {len(firsts)} fits; its kernels took "
        f"{sum(g['compile_s'] for g in compiled):.1f} s of compile "
        f"({sum(g.get('kernels_compiled', 0) for g in compiled)} kernels).",
    ]
    if warm:
        lines.append(
            f"**Warm** (a new process, kernels loaded from the disk cache): optimization + "
            f"loading take {_percent(warm)} of one fit's time."
        )
    negligible = bool(opt) and max(opt) < 0.05
    cheap = bool(firsts) and within == len(firsts)
    lines.append(
        "The paper calls optimization and code generation overhead negligible. Here "
        + ("optimization agrees (under 5% of every fit); " if negligible else
           "optimization is not negligible on every fit; ")
        + (f"a cold start agrees: no cold first fit took more than {COLD_BOUND}x Base's first "
           f"fit plus {COLD_SLACK_S} s." if cheap else
           f"a cold start does not on every fit (more than {COLD_BOUND}x Base's first fit plus "
           f"{COLD_SLACK_S} s): on those fits compiling, or running unfused while the kernels "
           "compile, takes longer than the fit itself.")
    )  # fmt: skip
    return lines


# a cold first fit costs nothing worth naming when within this factor of Base's first fit + slack
COLD_BOUND = 1.25
COLD_SLACK_S = 0.2


def _cold_firsts(fits: list[Row]) -> list[tuple[float, float]]:
    """Per fit, (Gen's cold first fit, Base's first fit) in seconds."""
    out = []
    for r in fits:
        gen, base = r.modes.get("cost_based", {}), r.modes.get("none", {})
        if gen.get("first_s") and base.get("first_s"):
            out.append((gen["first_s"], base["first_s"]))
    return out


def _percent(values: list[float]) -> str:
    if not values:
        return "no runs"
    return (f"median {100 * statistics.median(values):.1f}%, "
            f"{100 * min(values):.1f}% to {100 * max(values):.1f}%")  # fmt: skip


def _agreement(found: list[Row]) -> list[str]:
    wrong = [(r, m) for r in found for m in r.disagreeing]
    if not wrong:
        return ["**Results**: every mode gave the Base result (within each experiment's "
                "tolerance) on every case."]  # fmt: skip
    return [f"{RED_OPEN}**{LABELS[m]} disagrees with Base on {r.label}** (relative difference "
            f"{r.modes[m]['difference']:.3g}){RED_CLOSE}" for r, m in wrong]  # fmt: skip


def _table(title: str, found: list[Row], modes: tuple[str, ...]) -> str:
    if not found:
        return ""
    head = ["case", "rows x cols", *(LABELS[m] for m in modes), "Gen vs Base", "Gen vs Fused",
            "Gen/best", "modes agree"]  # fmt: skip
    lines = [f"## {title}\n", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in found:
        wrong = r.disagreeing
        agree = (
            "yes"
            if not wrong
            else RED_OPEN
            + "NO: "
            + ", ".join(f"{LABELS[m]} ({r.modes[m]['difference']:.2g})" for m in wrong)
            + RED_CLOSE
        )
        cells = [r.label, r.shape, *(_cell(r, m) for m in modes),
                 fmt_ratio(r.speedup("none")), fmt_ratio(r.speedup("hand")),
                 fmt_ratio(r.gen_vs_best), agree]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _beside_paper(found: list[Row]) -> str:
    """The paper's Gen speed-ups next to this run's on the largest case of the same format."""
    head = ["experiment", "paper's setting", "paper: Gen vs Base", "paper: Gen vs Fused",
            "here (largest case)", "here: vs Base", "here: vs Fused", "verdict"]  # fmt: skip
    lines = ["## Beside the paper\n",
             "The paper's numbers are development measurements from SystemML's history "
             "(reference/paper.md), on a 2x6-core server at 100x to 1000x these sizes.\n",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]  # fmt: skip
    for name, (setting, (base, fused, gen), fmt) in PAPER.items():
        mine = [r for r in found if r.experiment == name and r.format == fmt
                and r.seconds("cost_based") is not None]  # fmt: skip
        if not mine:
            continue
        r = max(mine, key=lambda r: (_generated(r.data), r.size))
        paper = [base / gen if base else None, fused / gen]
        here = [r.speedup("none"), r.speedup("hand")]
        cells = [name, setting, fmt_ratio(paper[0]), fmt_ratio(paper[1]), r.label,
                 fmt_ratio(here[0]), fmt_ratio(here[1]), _verdict(paper[1], here[1])]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _generated(data: str) -> bool:
    """Whether a case's data is generated (as the paper's synthetic data), not a real data set."""
    entry = REGISTRY.get(data)
    return entry is None or entry.package is None


def _verdict(paper: float, here: float | None) -> str:
    """How this run's Gen vs Fused compares with the paper's."""
    if here is None:
        return "-"
    if here < 1 / NEAR_BEST:
        return f"{RED_OPEN}contradicts: Gen is slower than Fused here{RED_CLOSE}"
    if here >= paper / 2:
        return "agrees"
    return "same direction, less than half the paper's gain"


def _cell(r: Row, mode: str) -> str:
    record = r.modes.get(mode)
    if record is None:
        return "-"
    if record.get("skipped"):
        return f"skipped ({record['skipped']})"
    text = fmt_seconds(record.get("median_s"))
    return f"**{text}**" if mode == r.best else text


def _overheads(fits: list[Row]) -> str:
    if not fits:
        return ""
    head = ["case", "fit (Gen)", "first fit cold", "optimize", "compile cold (kernels)",
            "calls run unfused while compiling",
            "first fit warm", "load warm (kernels)", "plans costed", "fused operators",
            "peak memory"]  # fmt: skip
    lines = ["## Overheads of Gen (cost_based)\n",
             "First fit = the whole first call: tracing, optimization, compiles and one fit. "
             "Cold compiles in the cold pass's compile mode; in the background mode a fused "
             "operator runs unfused while its kernel compiles, and compile seconds are the "
             "compile worker's CPU time. "
             "Warm = a new process whose kernels come from the disk cache.\n",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]  # fmt: skip
    for r in fits:
        g = r.modes.get("cost_based")
        if not g or g.get("skipped"):
            continue
        peak = g.get("peak_mb")
        cells = [
            r.label, fmt_seconds(g.get("median_s")), fmt_seconds(g.get("first_s")),
            fmt_seconds(g.get("optimize_s")),
            f"{fmt_seconds(g.get('compile_s'))} ({g.get('kernels_compiled', 0)})",
            str(g.get("ops_awaiting_kernel", "-")),
            fmt_seconds(g.get("warm_first_s")),
            f"{fmt_seconds(g.get('warm_load_s'))} ({g.get('warm_kernels_loaded', '-')})",
            str(g.get("plans_costed", 0)), _operators(g),
            "-" if peak is None else f"{peak:.0f} MB",
        ]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def meta_of(options, outcome, command: str, date: str) -> dict:
    return {**asdict(options), "command": command, "date": date, "seconds": outcome.seconds,
            "interrupted": outcome.interrupted, "cache_dir": outcome.cache_dir,
            "cases": len(rows(outcome.records))}  # fmt: skip
