"""Running a fused operator's generated kernel: input values in, one partial per output out.

Everything that depends only on the operator (its kernel spec, kernel module and literal values) is
prepared once per operator and kept while the plan lives. A call runs the module's ``setup`` (the
chunk count, outputs and partials), packs the values its chunk function reads into a frame, runs
the chunks on the shared threads (``launch.py``) and lets ``finish`` combine their partials.
The chunk function is compiled once per kinds of those values (numba specializes on dtypes: a CSR
matrix may have int32 or int64 indices), usually once. ``partials`` runs the kernel over whatever
rows it is given (a backend may give it one row block at a time); ``results`` finishes the
combined partials into the outputs' values.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from fusedml import _stats
from fusedml.codegen import compiler, frame
from fusedml.codegen.cache import get_kernel, kernel_file, python_functions
from fusedml.codegen.source import Kernel
from fusedml.codegen.spec import KernelSpec, kernel_spec
from fusedml.cplan.kinds import mean_count
from fusedml.cplan.plan import FusedOp
from fusedml.formats import Format
from fusedml.runtime.launch import run_chunks
from fusedml.runtime.threads import serial_scipy_blas


class KernelNotReady(Exception):
    """The operator's kernel has no machine code yet (a worker is compiling it)."""


@dataclass(eq=False)
class Prepared:
    """What a call of one operator's kernel needs beyond its inputs."""

    spec: KernelSpec
    kernel: Kernel
    literals: list[float]
    setup: Any  # the module's setup and finish, plain Python
    finish: Any
    reads: list[int]  # indices into (arguments, state) of the values the chunk function reads
    chunks: dict[tuple, tuple[Any, int]] = field(default_factory=dict)  # kinds -> (fn, address)


_prepared: weakref.WeakKeyDictionary[FusedOp, Prepared] = weakref.WeakKeyDictionary()
_lock = threading.Lock()
# kernel key -> (kernel, setup, finish, reads): operators of one structure share them
_built: dict[Any, tuple[Kernel, Any, Any, list[int]]] = {}


def prepared(op: FusedOp) -> Prepared:
    """The operator's ``Prepared``, made on first use (its kernel built once per kernel key)."""
    found = _prepared.get(op)
    if found is None:
        spec = kernel_spec(op.cplan)
        built = _built.get(spec.key)
        if built is None:
            with _stats.timed("codegen"):
                kernel = spec.build()
                setup, finish = python_functions(kernel)
            names = [*kernel.args, *kernel.state]
            reads = [names.index(n) for n in kernel.reads]
            built = _built[spec.key] = (kernel, setup, finish, reads)
        kernel, setup, finish, reads = built
        nodes = op.cplan.body.nodes
        literals = [float(nodes[k].attr("value")) for k in kernel.literal_positions]
        found = _prepared[op] = Prepared(spec, kernel, literals, setup, finish, reads)
    return found


def partials(op: FusedOp, inputs: Sequence[Any]) -> list[Any]:
    """One partial per output of the kernel run over ``inputs`` (values of ``op.inputs``, the
    aligned ones possibly one row block of them)."""
    p = prepared(op)
    values = [*p.spec.arguments(inputs), *p.literals]
    state = p.setup(*values)
    every = values + list(state)
    kinds, words, copies = frame.describe([every[k] for k in p.reads])
    fn, address = _chunk(p, kinds)
    frame_words = frame.pack(words)
    try:
        with serial_scipy_blas() if p.kernel.blas else contextlib.nullcontext():
            run_chunks(address, state[0], frame.address(frame_words))
    except Exception as exc:
        exc.add_note(f"kernel file: {kernel_file(fn)}")
        raise
    del copies  # read by the chunks: kept until they ran
    raw = p.finish(*values, *state)
    _stats.bump("kernels_executed")
    return p.spec.partials(raw, inputs)


def _chunk(p: Prepared, kinds: tuple) -> tuple[Any, int]:
    """The compiled chunk function for values of these kinds and its address; raises
    ``KernelNotReady`` while it has no machine code (the compile mode decides, ``compiler``)."""
    found = p.chunks.get(kinds)
    if found is not None:
        return found
    with _lock:
        fn = get_kernel((p.spec.key, kinds), lambda: p.kernel.source(kinds))
        try:
            ready = compiler.obtain(fn)
        except Exception as exc:
            exc.add_note(f"kernel file: {kernel_file(fn)}")
            raise
        if not ready:
            raise KernelNotReady
        found = p.chunks[kinds] = (fn, compiler.address(fn))
    return found


def results(op: FusedOp, blocks: Sequence[list[Any]]) -> list[Any]:
    """The outputs' values from the partials of consecutive row blocks (each a list with one
    partial per output), combined by each output's kind."""
    cplan = op.cplan
    out = []
    for k, (root, kind, agg) in enumerate(
        zip(op.roots, cplan.outputs, cplan.aggregations, strict=True)
    ):
        value = kind.combine([b[k] for b in blocks], agg)
        value = kind.finalize(value, agg, mean_count(cplan.body.roots[k], kind))
        if not root.meta.is_scalar and Format.of(value) is not root.meta.format:
            value = root.meta.format.from_value(value)  # rows written dense, stored as meta says
        out.append(value)
    return out


def run(op: FusedOp, inputs: Sequence[Any]) -> list[Any]:
    """The outputs' values of one kernel call over all rows."""
    return results(op, [partials(op, inputs)])
