"""Kernel specs: every decision about a fused operator's kernel, made once from its CPlan.

A ``KernelSpec`` says how each input is read (its operand: a sparse input may be read whole as a
dense array, as the ``B`` of ``X @ B``), whether the kernel visits only the main input's stored
entries, which inputs are split into row blocks with the main input, the kernel's identity, its
source, and how its raw result becomes one partial per output. The runtime only calls it.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from fusedml.codegen import compressed as _compressed  # noqa: F401  (registers the format's code)
from fusedml.codegen import operands, row_tiles
from fusedml.codegen.operands import Param
from fusedml.codegen.outer import outer_factors
from fusedml.codegen.row import whole_matrices
from fusedml.codegen.skeletons import skeleton
from fusedml.codegen.source import Kernel
from fusedml.cplan.cplan import CPlan, cell_values, iterated_rows
from fusedml.cplan.kinds import OutputKind
from fusedml.fusion.templates import TemplateType, outer_product
from fusedml.ir.node import Node
from fusedml.ir.ops import Op


@dataclass(frozen=True, eq=False)
class KernelSpec:
    cplan: CPlan
    params: tuple[Param, ...]
    sparse: bool  # visits only the main input's stored entries
    aligned: tuple[bool, ...]  # per input: its row i belongs to the main input's row i
    key: Hashable  # equal keys, one kernel

    def build(self) -> Kernel:
        """The kernel's source, from the skeleton registered for its template and driver."""
        driver = self.params[0].node.meta.format
        return skeleton(self.cplan.template, driver)(self)

    def arguments(self, inputs: Sequence[Any]) -> list[Any]:
        """Kernel arguments (before the literals) for input values, main input first: its rows
        (of this block) and the width the kernel scans, then each operand's arguments."""
        args: list[Any] = [inputs[0].shape[0], self._scan_cols]
        for p, value in zip(self.params, inputs, strict=True):
            args += p.operand.marshal(p, value)
        return args

    @functools.cached_property
    def _scan_cols(self) -> int:
        return self.params[0].node.meta.cols

    def partials(self, raw: Any, inputs: Sequence[Any]) -> list[Any]:
        """One partial per output from the kernel's raw result: the output's IR form over the
        block's rows (a mean still a sum, see ``kinds.py``)."""
        cplan = self.cplan
        if cplan.template is TemplateType.ROW:
            results = raw if len(cplan.outputs) > 1 else (raw,)
        elif len(cplan.outputs) > 1:  # MAgg: one value per full aggregate
            results = [raw[k : k + 1] for k in range(len(cplan.outputs))]
        else:
            results = [raw]
        return [
            self._partial(kind, r, inputs) for kind, r in zip(cplan.outputs, results, strict=True)
        ]

    def _partial(self, kind: OutputKind, result: Any, inputs: Sequence[Any]) -> Any:
        if kind is OutputKind.FULL_AGG:
            return float(result[0])
        if kind is OutputKind.COL_AGG:
            return result.reshape(1, -1)
        if kind is OutputKind.ROW_AGG:
            return result.reshape(-1, 1)
        if kind is OutputKind.NO_AGG and self.sparse:  # one value per stored entry of the driver
            main = self.params[0]
            return main.operand.entry_result(inputs[0], result)
        return result


def _read_whole(cplan: CPlan) -> set[Node]:
    """Placeholders a kernel reads whole, as dense arrays: the right operands of ``X @ B`` (Row),
    the factors and product operands of an Outer operator, and an Outer driver whose every cell
    counts (not sparse-safe)."""
    body = cplan.body
    if cplan.template is TemplateType.ROW:
        return whole_matrices(body)
    if cplan.template is not TemplateType.OUTER:
        return set()
    whole = {f for n in body.nodes if outer_product(n) for f in outer_factors(n)[:2]}
    (root,) = body.roots
    if root.op is Op.MATMUL:
        whole.add(root.inputs[1])
    if not cplan.sparse_safe:
        whole.add(cplan.params[0])
    return whole


def _read_at_other_rows(cplan: CPlan) -> set[Node]:
    """Placeholders whose row t a kernel reads for other rows i of the main input: the ``B`` of
    ``X @ B``, the ``V`` of an outer product ``U @ V.T`` and the ``R`` of ``(...) @ R``."""
    body = cplan.body
    if cplan.template is TemplateType.ROW:
        return whole_matrices(body)
    if cplan.template is not TemplateType.OUTER:
        return set()
    others = {outer_factors(n)[1] for n in body.nodes if outer_product(n)}
    (root,) = body.roots
    if root.op is Op.MATMUL and root.inputs[0].op is not Op.TRANSPOSE:
        others.add(root.inputs[1])
    return others


def _signature(params: Sequence[Param]) -> tuple:
    return tuple(
        (p.node.meta.format, type(p.operand), p.scalar, p.node.meta.rows == 1,
         p.node.meta.cols == 1)
        for p in params
    )  # fmt: skip


def kernel_spec(cplan: CPlan) -> KernelSpec:
    """The spec of a CPlan's kernel."""
    whole = _read_whole(cplan)
    params = tuple(
        Param(p, p.attr("name"), operands.operand(p, whole=p in whole)) for p in cplan.params
    )
    main = params[0]
    template = cplan.template
    if template is TemplateType.OUTER:
        sparse = main.nonzero_layout
    else:
        sparse = template is not TemplateType.ROW and main.operand.visits_stored(cplan, params)
    rows, others = main.node.meta.rows, _read_at_other_rows(cplan)
    aligned = tuple(
        not p.scalar and p.node not in others and p.node.meta.rows == rows for p in params
    )
    key: tuple = (cplan.key, _signature(params), sparse)
    # the skeletons index every input by the main input's rows (Row) or cells: never run a kernel
    # whose main input does not span them
    if template is TemplateType.ROW:  # scratch vectors are sized from the column counts
        key += (tuple(n.shape[1] if not n.meta.is_scalar else -1 for n in cplan.body.nodes),)
        if any(iterated_rows(r) != rows for r in cplan.body.roots):
            raise ValueError("row operator whose main input does not have its rows")
    elif cell_values(cplan.body.roots[0], template).shape != main.node.shape:
        raise ValueError(f"{template.label} operator whose main input is not its cells' shape")
    spec = KernelSpec(cplan, params, sparse, aligned, key)
    if template is TemplateType.ROW:  # the same body over few or many rows: a different kernel
        spec = dataclasses.replace(spec, key=(*key, row_tiles.applicable(spec)))
    return spec
