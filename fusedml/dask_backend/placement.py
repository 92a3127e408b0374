"""Where each step of a plan over distributed data runs: per block on Dask, or in this process.

A step that reads a partitioned value runs per block unless the cost model finds it cheaper to
fetch its partitioned inputs and run it here (``CostModel.distributed`` vs ``gathered``: a task's
overhead per block against moving the data), which happens only for small data. Steps over small
values only run here. ``placements`` makes the same decisions from a plan's metadata (leaves of
distributed values carry their number of row blocks), for ``fm.explain``; the backend decides
again with the values in hand, by the same rule. Nothing here imports Dask.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence

from fusedml.cplan.plan import FusedOp, Plan, Step
from fusedml.ir.node import Node
from fusedml.ir.ops import AGGREGATE, Op
from fusedml.select.constants import current_constants
from fusedml.select.cost import CostModel, node_bytes

_workers: list[float] = [0.0, 0]  # (time looked up, count)


def worker_count() -> int:
    """Workers of the current Dask client (looked up at most once a second), or this machine's
    cores under Dask's local schedulers."""
    now = time.monotonic()
    if now - _workers[0] < 1.0 and _workers[1]:
        return int(_workers[1])
    count = os.cpu_count() or 1
    try:
        from distributed import default_client

        count = max(1, len(default_client().scheduler_info(n_workers=-1)["workers"]))
    except (ImportError, ValueError, KeyError, TypeError):
        pass
    _workers[:] = [now, count]
    return count


def unfused_s(node: Node) -> float:
    return CostModel(current_constants()).unfused(node)


def _reduced_bytes(outputs: Sequence[Node]) -> float:
    return sum(node_bytes(o) for o in outputs)


class Placer:
    """The placement rule with one cost model and a worker count."""

    def __init__(self, workers: int) -> None:
        self.model = CostModel(current_constants())
        self.workers = workers

    def local(
        self,
        local_s: float,
        split: Sequence[Node],
        whole: Sequence[Node],
        outputs: Sequence[Node],
        blocks: int,
    ) -> bool:
        """Whether a step reading the partitioned ``split`` inputs runs here: they are small
        (``dask_local_below_bytes``) and fetching them costs less than a task per block."""
        split_bytes = sum(node_bytes(n) for n in split)
        if split_bytes > self.model.c.dask_local_below_bytes:
            return False
        whole_bytes = sum(node_bytes(n) for n in whole if not n.meta.is_scalar)
        rows = {n.meta.rows for n in split}
        partials = [o for o in outputs if o.meta.rows not in rows]  # aggregated over rows
        out_bytes = _reduced_bytes(partials)
        dist = self.model.distributed(local_s, blocks, self.workers, whole_bytes, out_bytes)
        here = self.model.gathered(local_s, split_bytes)
        return here < dist


def _step_io(step: Step) -> tuple[tuple[Node, ...], tuple[Node, ...], float]:
    if isinstance(step, FusedOp):
        return step.inputs, step.roots, step.estimated_cost_s
    return step.inputs, (step,), unfused_s(step)


def _row_outputs(step: Step, rows: set[int]) -> list[Node]:
    """The outputs of a distributed step that stay partitioned (rows of the split inputs)."""
    if isinstance(step, FusedOp):
        return [r for r, k in zip(step.roots, step.cplan.outputs, strict=True) if k.per_row]
    if step.op in AGGREGATE and step.attr("axis") != 1:
        return []
    if step.op is Op.MATMUL and step.inputs[0].op is Op.TRANSPOSE:
        return []
    return [step] if step.meta.rows in rows else []


def placements(plan: Plan, workers: int | None = None) -> dict[Step, str]:
    """ "dask" or "local" for each step of a plan whose leaves include distributed values
    (empty for a local plan)."""
    leaves = {n: n.attr("blocks") for n in plan.dag.leaves if n.attr("blocks")}
    if not leaves:
        return {}
    placer = Placer(workers or worker_count())
    blocks = dict(leaves)  # partitioned node -> its number of blocks
    out: dict[Step, str] = {}
    for step in plan.schedule:
        inputs, outputs, local_s = _step_io(step)
        split = [i for i in inputs if i in blocks]
        if not split:
            out[step] = "local"
            continue
        n = max(blocks[i] for i in split)
        whole = [i for i in inputs if i not in blocks]
        if placer.local(local_s, split, whole, outputs, n):
            out[step] = "local"
            continue
        out[step] = "dask"
        for o in _row_outputs(step, {i.meta.rows for i in split}):
            blocks[o] = n
    return out
