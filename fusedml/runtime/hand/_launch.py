"""How a hand-written kernel runs: as a generated one does, a serial numba function of one row
chunk run on the shared threads by the chunk launcher (``runtime/launch.py``).

A kernel's body is ``body(c, chunks, *values)``: chunk ``c`` of ``chunks``, writing only its own
rows and its own partials, into arrays its Python caller allocated. ``run(body, chunks,
*values)`` runs every chunk. The launcher calls a C function ``int64 chunk(int64 c, int64
frame)``, so for each body and kinds of values (``codegen/frame.py``) a *reader* module reads
the values from the frame and calls the body; it is compiled once and kept in the kernel cache,
as the body is.

Outputs and partials are numpy's arrays (numpy asks for transparent huge pages on 4 MB and more,
as ``cellops.huge_pages`` does for arrays numba allocates).

Why not ``prange``, as these kernels had. A parallel loop costs numba a second compile of its
body as a gufunc, its wrapper and the scheduling code, and the hand-written kernels are
generic (dense and CSR operands in one function): ``tak+*`` over CSR took 5.2-6.6 s to compile
with ``prange``, 1.3-1.9 s as a serial body and its reader.
"""

from __future__ import annotations

import threading
from typing import Any

from fusedml._native import cfunc_address
from fusedml.codegen import frame
from fusedml.codegen.cache import load_module
from fusedml.codegen.chunking import JIT
from fusedml.codegen.compiler import SIGNATURE
from fusedml.codegen.frame import NATIVE_DIGEST
from fusedml.runtime.launch import run_chunks

_READER = """\
import numba
import numpy as np

import fusedml._native as native  # native {native}
from fusedml.runtime.hand import kernel_body  # {module}

_body = kernel_body({name!r}, {function!r})


@numba.njit(**{jit!r})
def chunk(c, frame):
{reads}
    _body(c, {values})
    return 1
"""

_lock = threading.Lock()
# (body, kinds) -> address of its reader's chunk function (the reader's module stays alive in
# sys.modules, where load_module puts it)
_readers: dict[tuple, int] = {}


def run(body: Any, chunks: int, *values: Any) -> None:
    """Run ``body(c, chunks, *values)`` for every chunk ``c`` on the shared threads."""
    kinds, words, copies = frame.describe((chunks, *values))
    address = _readers.get((body, kinds))
    if address is None:
        address = _reader(body, kinds)
    block = frame.pack(words)
    run_chunks(address, chunks, frame.address(block))
    del copies  # alive until the chunks ran


def _reader(body: Any, kinds: tuple) -> int:
    from fusedml.runtime.hand import module_name

    names = [f"v{k}" for k in range(len(kinds))]
    source = _READER.format(
        native=NATIVE_DIGEST,
        module=body.py_func.__module__,  # the body module's content digest
        name=module_name(body.py_func.__module__),
        function=body.py_func.__name__,
        jit=JIT,
        reads="\n".join("    " + line for line in frame.unpack(names, kinds)),
        values=", ".join(names),
    )
    with _lock:
        address = _readers.get((body, kinds))
        if address is None:
            module = load_module(source)
            module.chunk.compile(SIGNATURE)  # or loaded from numba's disk cache
            address = _readers[(body, kinds)] = cfunc_address(module.chunk, SIGNATURE)
    return address
