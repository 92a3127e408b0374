"""How kernels split their rows, generated and hand-written alike: in row chunks, deterministically.

A kernel runs its chunks on the shared threads (``runtime/launch.py``); the number of row chunks
is set by the input's size, never by the thread count, and per-chunk partials are combined in
chunk order afterwards (deterministic). Kernels whose partial is a matrix (column aggregates,
``X.T @ Y``) use fewer chunks when it is wide: 64 chunks of a 10 x 1000 partial were 5 MB to zero
and combine per call, 40 % of a KMeans step on a 20k x 1000 CSR matrix, where 16 chunks cost a
quarter of that. Kernels over small inputs use fewer chunks too (``chunks_source``, and
``row_chunks`` for the hand-written ones).
"""

from __future__ import annotations

CHUNKS = 64  # row chunks per kernel call: enough for load balance, few partials to combine
MIN_PARTIAL_CHUNKS = 16  # load balance first: a wide partial never gets fewer chunks
PARTIAL_CELLS = 1 << 17  # per-chunk partial cells times chunks kept within 1 MB if it can be
# a generated kernel's chunk covers at least this many of its main input's cells: on a KMeans step
# over 1,797 x 64, 64 chunks' one-hot sums P.T @ X took 50 us (zeroing and combining 64 partials
# of 10 x 64), 8 chunks' 18 us
MIN_CHUNK_CELLS = 1 << 14

# ``reassoc`` lets LLVM reorder and vectorize the accumulations across cells that the kernels
# write; every cell's own arithmetic goes through ``cellops`` (``f.``), where no flag reaches.
# No ``contract`` either: a fused multiply-add would round a cell's value differently. Serial: a
# generated kernel is one chunk's function, run in parallel by the launcher.
JIT = dict(error_model="numpy", fastmath={"reassoc"}, cache=True)


def partial_chunks(cells: int) -> int:
    """Chunks of a kernel whose per-chunk partial has ``cells`` entries."""
    return max(MIN_PARTIAL_CHUNKS, min(CHUNKS, PARTIAL_CELLS // max(cells, 1)))


def partial_chunks_source(cells: str) -> str:
    """``partial_chunks`` as kernel source, for a partial size known only at run time."""
    return f"max({MIN_PARTIAL_CHUNKS}, min({CHUNKS}, {PARTIAL_CELLS} // max({cells}, 1)))"


def chunks_source(most: int | str) -> str:
    """Kernel source for the row chunks over an m x n main input: at most ``most`` (a number or
    an expression) and at most one per row; at least ``MIN_CHUNK_CELLS`` cells each, except that
    an input of 2 or more rows always has 2 chunks (so that small inputs, the tests' among them,
    still combine partials)."""
    return f"min(m, max(2, m * n // {MIN_CHUNK_CELLS}), {most})"
