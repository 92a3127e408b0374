"""The cost model: seconds per operator, ``write + max(read, compute)`` plus dispatch and compile.

Per fused operator (SystemDS V2, reference/systemds-codegen.md section 4.3):

    T = write_bytes / BW_write + max(read_bytes / BW_read, flops / F) + dispatch
        + compile_s / compile_amortization_calls      (if its kernel is not cached yet)

Rates depend on where the work runs: generated kernels, BLAS products and hand-written kernels use
every core; numpy's elementwise loops and reductions and scipy.sparse use one (``numpy_*``
constants), so a lone elementwise operator over big data is worth fusing into a parallel kernel.

Sparsity-aware, through the formats' traits: each format gives the bytes and visited cells of a
value; a sparse-safe operator driven by a sparse input (one whose zeros annihilate and whose
layout visits non-zeros only; its body's result is sparse, see ir/meta.py) reads its dense side
inputs and computes only at the driver's non-zeros; an Outer operator computes ``U[i] . V[j]``
only at its sparse driver's non-zeros. Compressed values are costed on the bytes they hold and
the groups a row visits (``layout``), and operations that run once per distinct stored value
(dictionaries: ``per_value_unfused``, ``per_value_operator``) on their dictionaries' bytes and
values. Unfused nodes are costed alike, as operators of one node
(transposes and column ranges of formats with views cost only their dispatch).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass

from fusedml.fusion.templates import TemplateType, outer_product
from fusedml.ir.dag import row_product_operands
from fusedml.ir.node import Node
from fusedml.ir.ops import AGGREGATE, ELEMENTWISE, FLOPS_PER_AGGREGATED_CELL, FLOPS_PER_CELL, Op
from fusedml.select.candidates import Candidate, Selection
from fusedml.select.constants import CostConstants


@functools.lru_cache(maxsize=1 << 14)
def node_bytes(n: Node) -> float:
    meta = n.meta
    return 8.0 if meta.is_scalar else meta.format.nbytes(meta)


def _work_cells(n: Node) -> float:
    return n.meta.format.work_cells(n.meta)


def _nonzeros_only(n: Node) -> bool:
    """Whether work over ``n`` visits only its non-zeros (a sparse layout)."""
    return n.meta.format.iterates_nonzeros


def drives_sparse(n: Node) -> bool:
    """Whether ``n`` can drive an operator over its non-zeros alone: its zeros annihilate and its
    layout iterates them."""
    fmt = n.meta.format
    return fmt.zeros_annihilate and fmt.iterates_nonzeros


@functools.lru_cache(maxsize=1 << 14)
def node_flops(n: Node) -> float:
    if n.op in ELEMENTWISE:
        exponent = n.inputs[1].attr("value") if n.op is Op.POW else None
        weight = 1.0 if exponent == 2.0 else FLOPS_PER_CELL[n.op]  # x**2 is computed as x*x
        return weight * _work_cells(n)
    if n.op in AGGREGATE:
        return FLOPS_PER_AGGREGATED_CELL[n.op] * _work_cells(n.inputs[0])
    if n.op is Op.MATMUL:
        a, b = n.inputs
        if _nonzeros_only(a):
            return 2.0 * a.meta.nnz * b.meta.cols
        if _nonzeros_only(b):
            return 2.0 * b.meta.nnz * a.meta.rows
        if b.meta.layout and not a.meta.layout:
            return 2.0 * _work_cells(b) * a.meta.rows
        return 2.0 * _work_cells(a) * b.meta.cols  # a's cells, or a compressed a's group visits
    if n.op in (Op.TRANSPOSE, Op.COLS, Op.HSTACK, Op.ONEHOT):
        return FLOPS_PER_CELL[n.op] * _work_cells(n)
    if n.op is Op.HAND:  # the work of what it replaces, ignoring the sparsity it exploits
        body = n.attr("definition")
        stack, seen, total = [body], set(), 0.0
        while stack:
            m = stack.pop()
            if m not in seen:
                seen.add(m)
                total += node_flops(m)
                stack.extend(m.inputs)
        return total
    return 0.0


def _stored(n: Node) -> tuple[float, float] | None:
    return None if n.meta.is_scalar else n.meta.format.stored(n.meta)


def per_value_unfused(n: Node) -> Node | None:
    """The input whose distinct stored values alone an unfused node computes on (a compressed
    matrix: an elementwise op with scalars maps its dictionaries, a full or column aggregate
    weights them by their counts), or None."""
    if n.op in ELEMENTWISE and _stored(n) is not None:
        return next(i for i in n.inputs if not i.meta.is_scalar)
    if n.op in AGGREGATE and n.op is not Op.ARGMAX and n.attr("axis") in (None, 0):
        return n.inputs[0] if _stored(n.inputs[0]) is not None else None
    return None


def per_value_operator(op: Candidate) -> Node | None:
    """The input a Cell or MAgg operator runs over once per distinct stored value (its main
    input, when the others are scalars or row vectors and every root is a full or column
    aggregate or a result of its format), or None (codegen/cla_cell.py)."""
    if op.type not in (TemplateType.CELL, TemplateType.MAGG):
        return None
    mains = [i for i in op.inputs if _stored(i) is not None and i.meta.rows > 1]
    if len(mains) != 1:
        return None
    (x,) = mains
    if any(i is not x and not i.meta.is_scalar and i.meta.rows != 1 for i in op.inputs):
        return None
    for r in op.roots:
        aggregate = r.op in AGGREGATE and r.op is not Op.ARGMAX and r.attr("axis") in (None, 0)
        if not aggregate and r.meta.format is not x.meta.format:
            return None
    return x


def _is_view(n: Node) -> bool:
    return n.op in (Op.TRANSPOSE, Op.COLS) and n.inputs[0].meta.format.views


def sparse_driver(op: Candidate) -> Node | None:
    """The sparse input whose non-zeros alone drive the operator (None: it scans every cell)."""
    if op.type is TemplateType.OUTER:
        for n in op.nodes:
            if n.op in (Op.MUL, Op.DIV) and n.meta.format.zeros_annihilate:
                drivers = [i for i in n.inputs if drives_sparse(i) and i not in op.nodes]
                if drivers:
                    return drivers[0]
        return None
    bodies = [r.inputs[0] if r.op in AGGREGATE else r for r in op.roots]
    if not all(b.meta.format.zeros_annihilate for b in bodies):
        return None
    shape = bodies[0].shape
    whole = read_whole(op)
    drivers = [i for i in op.inputs if drives_sparse(i) and i.shape == shape and i not in whole]
    return max(drivers, key=lambda i: i.meta.nnz) if drivers else None


def read_whole(op: Candidate) -> set[Node]:
    """The inputs a Row operator reads whole for every row: the right operands of its products
    ``(...) @ B`` and ``(...) @ B.T``. Their rows are not the rows it iterates, even where their
    shape says so (``A @ B`` with A square: B has the output's shape)."""
    if op.type is not TemplateType.ROW:
        return set()
    whole = row_product_operands(op.nodes)  # B, or a transposed B computed before the operator
    whole |= {b.inputs[0] for b in whole if b.op is Op.TRANSPOSE}  # B of a transpose inside it
    return whole & set(op.inputs)


def all_cores(n: Node) -> bool:
    """Whether an unfused node runs on every core: products whose operands' formats have
    threaded products (BLAS) and hand-written kernels do; numpy's elementwise loops and
    reductions and scipy.sparse run on one."""
    if n.op is Op.HAND:
        return True
    return n.op is Op.MATMUL and all(i.meta.format.threaded_products for i in n.inputs)


def _row_vector(n: Node) -> bool:
    return n.op in ELEMENTWISE and not n.meta.is_scalar and n.shape[1] > 1


def _dense_row_flops(op: Candidate) -> float:
    """The extra work of a Row kernel over sparse rows: it computes an elementwise row vector over
    the row's whole width, after scattering each sparse input it reads so into a zeroed scratch
    row (codegen/row.py), where ``node_flops`` counted only non-zeros."""
    extra = 0.0
    scattered: set[Node] = set()
    for n in op.nodes:
        if not _row_vector(n):
            continue
        if _nonzeros_only(n) and n.meta.nnz < n.meta.cells:
            extra += node_flops(n) * (n.meta.cells / max(n.meta.nnz, 1.0) - 1.0)
        scattered.update(i for i in n.inputs if _nonzeros_only(i) and i not in op.nodes)
    return extra + sum(2.0 * i.meta.cells for i in scattered)  # zero the row, then scatter


class CostModel:
    def __init__(self, constants: CostConstants) -> None:
        self.c = constants
        self._cost: dict[Candidate | Node, float] = {}  # per operator or unfused node
        self._op_work: dict[Candidate, tuple[float, float, float]] = {}
        c = constants
        self._parallel = (
            c.read_bandwidth_bytes_per_s,
            c.write_bandwidth_bytes_per_s,
            c.flops_per_s,
        )
        self._numpy = (
            c.numpy_read_bandwidth_bytes_per_s, c.numpy_write_bandwidth_bytes_per_s,
            c.numpy_flops_per_s,
        )  # fmt: skip
        self._fastest = tuple(map(max, self._parallel, self._numpy))  # for lower bounds

    @staticmethod
    def _work(write: float, read: float, flops: float, rates: tuple[float, float, float]):
        read_bw, write_bw, flop_rate = rates
        return write / write_bw + max(read / read_bw, flops / flop_rate)

    def _seconds(self, write: float, read: float, flops: float, rates=None) -> float:
        return self._work(write, read, flops, rates or self._parallel) + self.c.dispatch_s

    def unfused(self, n: Node) -> float:
        if _is_view(n):
            return self.c.dispatch_s
        read = sum(node_bytes(i) for i in n.inputs)
        flops = node_flops(n)
        x = per_value_unfused(n)
        if x is not None:  # on the dictionaries (the result shares x's codes)
            (stored_bytes, values), cells = _stored(x), max(x.meta.cells, 1)
            read += stored_bytes - node_bytes(x)
            flops *= values / cells
            write = _stored(n)[0] if _stored(n) is not None else node_bytes(n)
            return self._seconds(write, read, flops, self._rates(n))
        if n.op in (Op.EXP, Op.LOG):
            flops /= max(self.c.base_exp_log_speedup, 1e-9)
        return self._seconds(node_bytes(n), read, flops, self._rates(n))

    def distributed(
        self, local_s: float, blocks: int, workers: int, whole_bytes: float, out_bytes: float
    ) -> float:
        """A step run as one task per row block: its work shared by the workers, a task's
        overhead per block, the whole inputs sent to every worker, the partials of aggregated
        outputs (``out_bytes`` per block) moved to their reduction, and the call's wait for
        them (row outputs stay on the workers: nothing to wait for)."""
        c, parallel = self.c, max(1, min(blocks, workers))
        moved = whole_bytes * parallel + out_bytes * blocks
        wait = c.dask_round_trip_s if out_bytes else 0.0
        tasks = blocks * c.dask_task_s / parallel
        return local_s / parallel + tasks + moved / c.network_bytes_per_s + wait

    def gathered(self, local_s: float, split_bytes: float) -> float:
        """The same step run in this process after its partitioned inputs are fetched (once:
        later calls over the same inputs find them here)."""
        return split_bytes / self.c.network_bytes_per_s + local_s

    def _rates(self, n: Node) -> tuple[float, float, float]:
        return self._parallel if all_cores(n) else self._numpy

    def compile_seconds(self, op: Candidate | None) -> float:
        """Every fused operator pays its amortized compile: at selection time its kernel's
        identity (the CPlan key) is not known yet, so the model assumes a plan-cache miss."""
        return self.c.compile_s / max(self.c.compile_amortization_calls, 1.0)

    def operator(self, op: Candidate) -> float:
        cost = self._cost.get(op)
        if cost is None:
            cost = self._cost[op] = self._operator(op)
        return cost

    def _operator(self, op: Candidate) -> float:
        return self._seconds(*self._operator_work(op)) + self.compile_seconds(op)

    def lone_pays(self, op: Candidate) -> bool:
        """Whether one operation that numpy or scipy.sparse runs on one core (elementwise, a
        product with a CSR operand) runs faster as a fused, parallel operator, compile included."""
        (node,) = op.nodes
        one_core = node.op in ELEMENTWISE or (node.op is Op.MATMUL and not all_cores(node))
        return one_core and self.operator(op) < self.unfused(node)

    def runs_parallel(self, op: Candidate) -> bool:
        """Whether the operator's work pays for a parallel launch (else it runs on one thread)."""
        return self._work(*self._operator_work(op), self._parallel) >= self.c.serial_below_s

    def _operator_work(self, op: Candidate) -> tuple[float, float, float]:
        """(write, read, flops) of a fused operator (computed once per model)."""
        work = self._op_work.get(op)
        if work is None:
            work = self._op_work[op] = self._new_operator_work(op)
        return work

    def _new_operator_work(self, op: Candidate) -> tuple[float, float, float]:
        driver = sparse_driver(op)
        # transposes inside an operator are access patterns (row i of X for X.T @ y), not work
        flops = sum(node_flops(n) for n in op.nodes if n.op is not Op.TRANSPOSE)
        if op.type is TemplateType.ROW:
            flops += _dense_row_flops(op)
        read = 0.0
        if op.type is TemplateType.OUTER:
            if driver is not None:  # U[i] . V[j] only at the driver's non-zeros
                flops *= driver.meta.sparsity
            read = sum(node_bytes(i) for i in op.inputs)
        else:
            scale = driver.meta.sparsity if driver is not None else 1.0
            for i in op.inputs:
                dense_side = driver is not None and i is not driver and i.shape == driver.shape
                read += node_bytes(i) * (scale if dense_side else 1.0)
        write = sum(node_bytes(r) for r in op.roots)
        x = per_value_operator(op)
        if x is not None:  # dictionaries read, results written per stored value
            (stored_bytes, values), cells = _stored(x), max(x.meta.cells, 1)
            read += stored_bytes - node_bytes(x)
            flops *= values / cells
            write = sum(_stored(r)[0] if _stored(r) else node_bytes(r) for r in op.roots)
        return write, read, flops

    def steps(self, steps: Iterable[Candidate | Node]) -> float:
        """Total cost of operators and unfused nodes (each costed once per model)."""
        total = 0.0
        for s in steps:
            if isinstance(s, Candidate):
                total += self.operator(s)
            else:
                cost = self._cost.get(s)
                if cost is None:
                    cost = self._cost[s] = self.unfused(s)
                total += cost
        return total

    def selection(self, sel: Selection) -> float:
        return self.steps([*sel.operators, *sel.unfused])

    def plan_floor(self, scope: ScopeBound, unfused: Iterable[Node]) -> float:
        """No plan of the scope costs less: one with a fused operator does its work
        (``lower_bound``) and pays at least one compile; one without runs at least the nodes
        ``unfused`` one at a time."""
        with_operator = self.lower_bound(scope) + self.compile_seconds(None)
        return min(with_operator, self.steps(unfused))

    def lower_bound(self, scope: ScopeBound, extra_bytes: float = 0.0) -> float:
        """No plan of the scope costs less: every output and every extra materialized
        intermediate is written once; inputs and intermediates read back are read at least at the
        sparsest driver's density, and the computation is charged at least its ``flops_scale``;
        one dispatch. (A sum of maxima >= the maximum of sums.)"""
        read = (scope.read_bytes + extra_bytes) * scope.density
        write, flops = scope.write_bytes + extra_bytes, scope.flops * scope.flops_scale
        return self._seconds(write, read, flops, self._fastest)


@dataclass(frozen=True)
class ScopeBound:
    """The plan-independent work of a set of nodes, for lower bounds."""

    read_bytes: float  # its external inputs
    write_bytes: float  # the outputs every plan writes
    flops: float
    density: float  # the sparsest sparse-layout node's density (1.0 if none)
    # the least share of ``flops`` a plan may be charged: the model scales a node's flops only
    # in an Outer operator over a sparse driver (its density) and over a compressed matrix's
    # distinct values (values / cells); ``node_flops`` already counts a CSR node's non-zeros
    flops_scale: float = 1.0

    @classmethod
    def of(cls, nodes: Iterable[Node], external: Iterable[Node], outputs: Iterable[Node]):
        nodes, external = list(nodes), list(external)
        density = min((n.meta.sparsity for n in nodes if _nonzeros_only(n)), default=1.0)
        every = nodes + external
        scale = 1.0
        if any(outer_product(n) for n in nodes):
            scale = min((n.meta.sparsity for n in every if _nonzeros_only(n)), default=1.0)
        for n in every:
            stored = _stored(n)
            if stored is not None:
                scale = min(scale, stored[1] / max(n.meta.cells, 1))
        return cls(
            sum(node_bytes(i) for i in external),
            sum(node_bytes(o) for o in outputs),
            # transposes and column ranges may cost nothing (views, or read in place by operators)
            sum(node_flops(n) for n in nodes if n.op not in (Op.TRANSPOSE, Op.COLS)),
            density,
            scale,
        )
