"""Pieces every kernel module shares: the prelude, indented source lines, aggregation folds, and
the module itself.

A kernel module has three functions over the same values (``m``, ``n``, the operands' arguments,
the literals ``c0, c1, ...``):

- ``setup(...)``, plain Python: the chunk count, the outputs and per-chunk partials it allocates,
  and whatever else is computed once per call; returns them (its *state*, ``nchunk`` first);
- ``chunk(c, frame)``, compiled by numba: chunk ``c`` of the rows, reading every value it needs
  (arguments and state) from the frame (``frame.py``); run by the launcher on the shared threads;
- ``finish(..., <state>)``, plain Python: the outputs from the chunks' partials, combined in chunk
  order.

Only ``chunk`` is compiled, and it is serial: no parallel loop, no allocation of results, no
combining of partials goes through numba, whose compile time grows with every line it is given.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from fusedml.codegen import frame
from fusedml.codegen.cellops import SOURCE_DIGEST
from fusedml.codegen.chunking import JIT
from fusedml.codegen.frame import NATIVE_DIGEST
from fusedml.codegen.operands import Param
from fusedml.codegen.render import Literals

# the numba flags are written into each kernel's source: a change of them is a new kernel, and
# cellops' and _native's digests too (numba's cache does not notice a change of a module a kernel
# inlines)
PRELUDE = f"""\
import numba
import numpy as np

import fusedml._native as native  # native {NATIVE_DIGEST}
import fusedml.codegen.cellops as f  # cellops {SOURCE_DIGEST}

_JIT = {JIT!r}


@numba.njit(inline="always", error_model="numpy")
def _min(acc, v):
    return v if (acc == acc and not (acc <= v)) else acc


@numba.njit(inline="always", error_model="numpy")
def _max(acc, v):
    return v if (acc == acc and not (acc >= v)) else acc


# _min and _max as one select each (same values): faster folded along a tile of rows, slower
# (measured) in the row kernels' per-row loops
@numba.njit(inline="always", error_model="numpy")
def _vmin(acc, v):
    return v if (v < acc or v != v) else acc


@numba.njit(inline="always", error_model="numpy")
def _vmax(acc, v):
    return v if (v > acc or v != v) else acc
"""

# a vector a chunk function allocates, and an array element it assigns
_SCRATCH = re.compile(r"\s*[A-Za-z_][A-Za-z_0-9]* = np\.empty\(")
_STORE = re.compile(r"\s*[A-Za-z_][A-Za-z_0-9]*\[[^=]*\]\s*[-+*/]?=[^=]")
INIT = {"sum": "0.0", "mean": "0.0", "min": "np.inf", "max": "-np.inf"}


def fold(agg: str, acc: str, value: str) -> str:
    """Source adding ``value`` into the accumulator ``acc`` (a mean accumulates its sum)."""
    if agg in ("sum", "mean"):
        return f"{acc} += {value}"
    return f"{acc} = _{agg}({acc}, {value})"


def combine(agg: str, partial: str) -> str:
    """Python source folding per-chunk partials ``partial`` (chunks along axis 0) in chunk order,
    from the aggregate's initial value (no chunks: that value)."""
    ufunc = {"sum": "add", "mean": "add", "min": "minimum", "max": "maximum"}[agg]
    return f"np.{ufunc}.reduce({partial}, axis=0, initial={INIT[agg]})"


class Source:
    """Accumulates indented lines."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    def block(self, depth: int, lines: Iterable[str]) -> None:
        for line in lines:
            self(depth, line)

    def extend(self, lines: list[str]) -> None:
        self.lines.extend(lines)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


@dataclass
class Kernel:
    """A kernel module's parts (see the module docstring); ``source(kinds)`` assembles it once the
    kinds of the values its chunk function reads are known (``frame.describe``)."""

    args: list[str]  # setup's and finish's arguments
    setup: list[str]  # setup's statements (one level deep), ``nchunk`` among the names assigned
    chunk: list[str]  # the chunk function's statements (one level deep)
    finish: list[str]  # finish's statements (one level deep), ending with a return
    literal_positions: list[int]  # body.nodes index of the literal passed as c0, c1, ...
    helpers: list[str] = field(default_factory=list)  # module-level source, before the functions
    noalias: bool = False  # its body is compiled apart, arrays marked noalias (see ``source``)
    blas: bool = False  # its chunk function calls BLAS (``np.dot``): run with BLAS serial
    # scratch arrays (allocation statements) passed to the body as noalias arguments: LLVM then
    # knows them apart from each other, and vectorizes loops that read one and write another
    # (a BLAS tile's argmax over 100 columns: 60 -> 15 ms on 1M rows)
    scratch: list[str] = field(default_factory=list)

    @functools.cached_property
    def state(self) -> list[str]:
        """The names setup assigns (its result), ``nchunk`` first."""
        tree = ast.parse("\n".join(line[4:] for line in self.setup) or "pass")
        targets = [t for node in tree.body if isinstance(node, ast.Assign) for t in node.targets]
        names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
        ordered = list(dict.fromkeys(["nchunk", *names]))
        return [n for n in ordered if n not in self.args]

    @functools.cached_property
    def reads(self) -> list[str]:
        """The values (arguments, then state) the chunk function reads, in frame order."""
        text = "\n".join([*self.scratch, *self.chunk])
        used = set(re.findall(r"[A-Za-z_][A-Za-z_0-9]*", text)) | {"m", "nchunk"}
        return [n for n in [*self.args, *self.state] if n in used]

    @functools.cached_property
    def scatters(self) -> bool:
        """Whether the chunk function allocates vectors of its own (a Row body's per-row
        intermediates) and, inside its loops, writes arrays at indices read from a sparse
        input: then no store's target is provably apart from any other array."""
        allocates = any(_SCRATCH.match(line) for line in self.chunk)
        looped = [line for line in self.chunk if line.startswith(" " * 8)]
        sparse = any("_indices[" in line for line in looped)
        return allocates and sparse and any(_STORE.match(line) for line in looped)

    def source(self, kinds: Sequence | None = None) -> str:
        """The module's source for values of these kinds (None: the frame's reads as a comment,
        for reading)."""
        if kinds is None:
            header = [f"    # {', '.join(self.reads)} read from the frame"]
        else:
            header = ["    " + line for line in frame.unpack(self.reads, kinds)]
        if not (self.noalias or self.scatters or self.scratch):
            chunk = ["@numba.njit(**_JIT)", "def chunk(c, frame):", *header, *self.chunk,
                     "    return 1"]  # fmt: skip
            return self._assemble(["\n".join(chunk)])
        # a body taking the arrays as arguments, marked noalias: with the frame's raw addresses
        # LLVM assumes every store may change every array, the chunk's own vectors included (a
        # KMeans fit over CSR ran 8-12% slower so; over dense data no slower); a second function
        # costs 0.1-0.15 s of compile, paid only by the kernels that scatter
        scratch = [line.split("=", 1)[0].strip() for line in self.scratch]
        reads = ", ".join(["c", *self.reads, *scratch])
        body = [
            "@numba.njit(pipeline_class=native.NoAliasCompiler, no_cpython_wrapper=True,"
            " no_cfunc_wrapper=True, **_JIT)",
            f"def body({reads}):",
            *self.chunk,
            "    return 1",
        ]
        chunk = [
            "@numba.njit(**_JIT)",
            "def chunk(c, frame):",
            *header,
            *("    " + line for line in self.scratch),
            f"    return body({reads})",
        ]
        return self._assemble(["\n".join(body), "\n".join(chunk)])

    def python_source(self) -> str:
        """The module without its chunk function: what runs as plain Python."""
        return self._assemble([])

    def _assemble(self, chunk: list[str]) -> str:
        args, state = ", ".join(self.args), ", ".join(self.state)
        parts = [
            PRELUDE,
            *self.helpers,
            "\n".join([f"def setup({args}):", *self.setup, f"    return ({state},)"]),
            *chunk,
            "\n".join([f"def finish({args}, {state}):", *self.finish]),
        ]
        return "\n\n\n".join(p.rstrip("\n") for p in parts) + "\n"


def arguments(params: list[Param], literals: Literals) -> list[str]:
    """The kernel's values: the row and column counts, the operands' arguments, the literals."""
    args = ["m", "n"]
    for p in params:
        args += p.args()
    return args + [f"c{k}" for k in range(len(literals.nodes))]


def dedent(lines: Iterable[str], levels: int = 1) -> list[str]:
    """Lines moved ``levels`` indentation levels to the left."""
    cut = "    " * levels
    return [line[len(cut) :] if line.startswith(cut) else line.lstrip() for line in lines]


def module(
    params: list[Param], literals: Literals, body, setup: Source, chunk: Source,
    finish: Source, helpers: Sequence[str] = (), noalias: bool = False, blas: bool = False,
    scratch: Sequence[str] = (),
) -> Kernel:  # fmt: skip
    """The kernel from its functions' statements: ``setup`` and ``finish`` one level deep, the
    chunk's two (as inside the loop over chunks they were written for); each operand's helpers
    are added once. ``noalias``: the chunk writes no array another one may overlap."""
    operand_helpers = list(dict.fromkeys(p.operand.helpers for p in params if p.operand.helpers))
    return Kernel(
        args=arguments(params, literals), setup=list(setup.lines),
        chunk=dedent(chunk.lines), finish=list(finish.lines),
        literal_positions=literals.positions(body), helpers=[*operand_helpers, *helpers],
        noalias=noalias, blas=blas, scratch=list(scratch),
    )  # fmt: skip


def row_loop(params: list[Param]) -> str:
    """The row loop of a chunk. An unsigned row index lets LLVM drop numba's negative-index
    wrap-around and vectorize a loop over a column vector (6x on 1M rows), unless an operand
    needs signed row arithmetic."""
    if any(p.operand.signed_rows for p in params):
        return "for i in range(lo, hi):"
    return "for i in range(np.uint64(lo), np.uint64(hi)):"
