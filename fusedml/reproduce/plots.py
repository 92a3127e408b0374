"""The run's PNG plots (matplotlib, drawn off screen): per experiment a grouped bar chart of the
modes' times per format and data set, for the micro-benchmarks the time against the number of
rows, and for the fits Gen's overhead breakdown."""

from __future__ import annotations

import os

from fusedml.reproduce.tables import LABELS, Row, fmt_seconds, rows

COLORS = {"none": "#7f7f7f", "hand": "#1f77b4", "fuse_all": "#2ca02c",
          "fuse_no_redundancy": "#ff7f0e", "cost_based": "#d62728"}  # fmt: skip


def write_plots(records: list[dict], out: str, modes: tuple[str, ...]) -> list[str]:
    """The PNG files written into ``out``/plots (none without matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    folder = os.path.join(out, "plots")
    os.makedirs(folder, exist_ok=True)
    found = rows(records)
    paths = []
    for name in dict.fromkeys(r.experiment for r in found):
        mine = [r for r in found if r.experiment == name]
        paths.append(_bars(plt, name, _largest(mine), modes, folder))
    micro = [r for r in found if r.kind == "micro"]
    if any(
        len({r.size for r in micro if r.experiment == e}) > 1 for e in {r.experiment for r in micro}
    ):
        paths.append(_sizes(plt, micro, modes, folder))
    fits = [r for r in found if r.kind == "fit" and r.seconds("cost_based") is not None]
    if fits:
        paths.append(_overheads(plt, fits, folder))
    return paths


def _largest(found: list[Row]) -> list[Row]:
    """Per format and data set, the case of the largest size."""
    best: dict[tuple, Row] = {}
    for r in found:
        key = (r.format, r.data)
        if key not in best or r.size > best[key].size:
            best[key] = r
    return list(best.values())


def _bars(plt, name: str, found: list[Row], modes, folder: str) -> str:
    fig, ax = plt.subplots(figsize=(1.6 + 1.5 * len(found), 3.6))
    width = 0.8 / len(modes)
    for i, mode in enumerate(modes):
        heights = [r.seconds(mode) or 0.0 for r in found]
        xs = [j + (i - (len(modes) - 1) / 2) * width for j in range(len(found))]
        ax.bar(xs, heights, width, label=LABELS[mode], color=COLORS[mode])
    ax.set_xticks(range(len(found)))
    ax.set_xticklabels([_case_label(r) for r in found], fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("median seconds (log)")
    ax.set_title(f"{name}: time per mode (lower is better)")
    ax.legend(fontsize=7, ncol=len(modes), loc="upper center", bbox_to_anchor=(0.5, -0.18))
    return _save(fig, plt, folder, f"{name}.png")


def _case_label(r: Row) -> str:
    if r.kind == "micro":
        return f"{r.format}\n{int(r.size):,} rows"
    return f"{r.format}\n{r.data}\n{r.shape}"


def _sizes(plt, micro: list[Row], modes, folder: str) -> str:
    panels = list(dict.fromkeys((r.experiment, r.format) for r in micro))
    cols = 3
    nrows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(4 * cols, 3 * nrows), squeeze=False)
    for ax, (name, fmt) in zip(axes.flat, panels, strict=False):
        mine = sorted((r for r in micro if (r.experiment, r.format) == (name, fmt)),
                      key=lambda r: r.size)  # fmt: skip
        for mode in modes:
            points = [(r.size, s) for r in mine if (s := r.seconds(mode)) is not None]
            if points:
                ax.plot(*zip(*points, strict=True), marker="o", label=LABELS[mode],
                        color=COLORS[mode])  # fmt: skip
        ax.set(xscale="log", yscale="log", title=f"{name} ({fmt})", xlabel="rows",
               ylabel="seconds")  # fmt: skip
        sizes = sorted({r.size for r in mine})
        ax.set_xticks(sizes, [f"{int(x):,}" for x in sizes], fontsize=7)
        ax.minorticks_off()
    for ax in list(axes.flat)[len(panels) :]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    return _save(fig, plt, folder, "micro_sizes.png")


def _overheads(plt, fits: list[Row], folder: str) -> str:
    """Per fit two bars: Gen's first fit in a new process on an empty kernel cache (cold) and on
    the filled one (warm), each split into optimization, what the first fit took beyond that and
    one fit (compiling or loading kernels, or running unfused while they compile in the
    background), and the fit itself, in units of Base's first fit in the same pass."""
    parts = (("optimization", "#9467bd"),
             ("kernels: compiled (eager), unfused meanwhile (background), loaded (warm)",
              "#d62728"),
             ("the fit itself", "#2ca02c"))  # fmt: skip
    bars, notes = [], []
    for r in fits:
        g, base = r.modes.get("cost_based", {}), r.modes.get("none", {})
        name = f"{r.experiment} / {r.format} / {r.data}"
        for label, prefix in (("cold", ""), ("warm", "warm_")):
            first, unit = g.get(f"{prefix}first_s"), base.get(f"{prefix}first_s")
            if first and unit:
                bars.append((f"{name}, {label}", [x / unit for x in _first_fit_parts(g, prefix)]))
                notes.append(f"{fmt_seconds(first)} (Base {fmt_seconds(unit)})")
    fig, ax = plt.subplots(figsize=(9, 0.3 * len(bars) + 1.6))
    labels = [label for label, _ in bars]
    left = [0.0] * len(bars)
    for i, (name, color) in enumerate(parts):
        widths = [values[i] for _, values in bars]
        ax.barh(labels, widths, left=left, label=name, color=color)
        left = [a + b for a, b in zip(left, widths, strict=True)]
    right = max([1.0, *left]) * 1.02
    ax.axvline(1.0, color="black", linestyle="--", linewidth=0.8, label="Base's first fit")
    for y, note in enumerate(notes):
        ax.text(right, y, note, va="center", fontsize=7)
    ax.set_xlim(0, right * 1.35)
    ax.set_xlabel("Gen's first fit over Base's first fit in the same process state "
                  "(seconds of both at the right)")  # fmt: skip
    ax.set_title("Gen's first fit in a new process, on a cold and a warm kernel cache")
    ax.tick_params(axis="y", labelsize=7)
    ax.invert_yaxis()
    ax.legend(fontsize=7, loc="lower center", bbox_to_anchor=(0.5, 1.02), ncol=2)
    return _save(fig, plt, folder, "overheads.png")


def _first_fit_parts(record: dict, prefix: str) -> list[float]:
    """A first fit's seconds as optimization, the rest beyond one fit, and one fit."""
    first = record[f"{prefix}first_s"]
    optimize = min(record.get(f"{prefix}optimize_s") or 0.0, first)
    fit = min(record["median_s"], first - optimize)
    return [optimize, first - optimize - fit, fit]


def _save(fig, plt, folder: str, name: str) -> str:
    path = os.path.join(folder, name)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
