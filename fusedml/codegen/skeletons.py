"""The skeleton registry: which hand-written skeleton builds a fused operator's kernel.

A skeleton owns the loops (one row chunk's: the launcher runs a fixed number of them, so results do
not depend on the thread count), reads its inputs through their operands (``operands.py``) and
combines per-chunk partials in chunk order (deterministic); generated code fills in only the body.
The registry is keyed by (template, driver format): the built-in skeletons serve every format
through the operand protocol (key ``(template, None)``); a format whose kernels want loops of
their own registers them for its key.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fusedml.codegen.cell import cell_kernel
from fusedml.codegen.outer import outer_kernel
from fusedml.codegen.row import row_kernel
from fusedml.codegen.source import Kernel
from fusedml.formats import Format
from fusedml.fusion.templates import TemplateType

Builder = Callable[[Any], Kernel]  # KernelSpec -> Kernel

_SKELETONS: dict[tuple[TemplateType, Format | None], Builder] = {
    (TemplateType.CELL, None): cell_kernel,
    (TemplateType.MAGG, None): cell_kernel,
    (TemplateType.ROW, None): row_kernel,
    (TemplateType.OUTER, None): outer_kernel,
}


def register(template: TemplateType, driver: Format, builder: Builder) -> None:
    """Use ``builder`` for operators of ``template`` whose main input has format ``driver``."""
    _SKELETONS[(template, driver)] = builder


def unregister(template: TemplateType, driver: Format) -> None:
    _SKELETONS.pop((template, driver), None)


def skeleton(template: TemplateType, driver: Format) -> Builder:
    """The builder for a template and driver format (the generic one unless one is registered)."""
    return _SKELETONS.get((template, driver)) or _SKELETONS[(template, None)]
