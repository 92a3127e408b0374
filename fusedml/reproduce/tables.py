"""The runner's records grouped per case (one row per experiment, format, data set and size, one
column per mode), the ratios the paper reports, and the console table.

Ratios are speed-ups: ``vs Base`` is Base's median seconds over Gen's (above 1: Gen is faster),
``vs Fused`` the same against the hand-written operators, ``Gen/best`` Gen's seconds over the
fastest mode's (1.00: Gen is the fastest).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

# the paper's names for the fusion modes
LABELS = {"none": "Base", "hand": "Fused", "fuse_all": "FA", "fuse_no_redundancy": "FNR",
          "cost_based": "Gen"}  # fmt: skip
NEAR_BEST = 1.05  # Gen counts as the best mode when within 5% of it
RED, RESET = "\033[31m", "\033[0m"


@dataclass
class Row:
    """One case: every mode's record."""

    experiment: str
    kind: str
    format: str
    data: str
    size: float
    shape: str
    modes: dict[str, dict] = field(default_factory=dict)

    def seconds(self, mode: str) -> float | None:
        record = self.modes.get(mode)
        return None if record is None or record.get("skipped") else record.get("median_s")

    def speedup(self, mode: str, over: str = "cost_based") -> float | None:
        """``mode``'s seconds over ``over``'s (how many times faster ``over`` is)."""
        a, b = self.seconds(mode), self.seconds(over)
        return a / b if a is not None and b else None

    @property
    def best(self) -> str | None:
        timed = {m: s for m in self.modes if (s := self.seconds(m)) is not None}
        return min(timed, key=timed.get) if timed else None

    @property
    def gen_vs_best(self) -> float | None:
        best = self.best
        return None if best is None else self.speedup("cost_based", best)

    @property
    def disagreeing(self) -> list[str]:
        return [m for m, r in self.modes.items() if not r.get("skipped") and not r.get("agrees")]

    @property
    def label(self) -> str:
        size = f"{int(self.size):,} rows" if self.kind == "micro" else self.data
        return f"{self.experiment} / {self.format} / {size}"


def rows(records: list[dict]) -> list[Row]:
    """The records grouped per case, in the order they ran."""
    found: dict[tuple, Row] = {}
    for r in records:
        key = (r["experiment"], r["format"], r["data"], r["size"])
        row = found.get(key)
        if row is None:
            row = found[key] = Row(r["experiment"], r["kind"], r["format"], r["data"], r["size"],
                                   r.get("shape", ""))  # fmt: skip
        row.modes[r["mode"]] = r
    return list(found.values())


def fmt_seconds(s: float | None) -> str:
    if s is None or math.isnan(s):
        return "-"
    return f"{s * 1e3:.1f} ms" if s < 1 else f"{s:.2f} s"


def fmt_ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}x"


def console_table(found: list[Row], modes: tuple[str, ...], color: bool = False) -> str:
    """One line per case: each mode's median, Gen's speed-up over Base and Fused, and whether
    every mode gave the reference result (disagreeing modes named, in red on a terminal)."""
    head = f"{'case':44} " + " ".join(f"{LABELS[m]:>9}" for m in modes)
    head += f" {'vs Base':>8} {'vs Fused':>8} {'Gen/best':>8}  agree"
    lines = [head, "-" * len(head)]
    for row in found:
        cells = " ".join(f"{fmt_seconds(row.seconds(m)):>9}" for m in modes)
        wrong = row.disagreeing
        agree = "yes" if not wrong else "NO: " + ", ".join(LABELS[m] for m in wrong)
        if wrong and color:
            agree = f"{RED}{agree}{RESET}"
        lines.append(
            f"{row.label[:44]:44} {cells} {fmt_ratio(row.speedup('none')):>8} "
            f"{fmt_ratio(row.speedup('hand')):>8} {fmt_ratio(row.gen_vs_best):>8}  {agree}"
        )
    return "\n".join(lines)
