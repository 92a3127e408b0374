"""The differential corpus over Dask leaves: every fusion mode gives the numpy oracle's numbers
when the 2-D inputs are Dask arrays in one block, several even blocks, uneven blocks, CSR
blocks and compressed blocks, and the steps really ran per block."""

import dask
import dask.array as da
import pytest
import scipy.sparse as sp
from hypothesis import assume, given, settings

import fusedml as fm
from fusedml.formats import COMPRESSED
from tests import cla, exprgen
from tests.exprgen import check

MODES = ("none", "hand", "fuse_all", "fuse_no_redundancy", "cost_based")
# every step per block, however small the data: no task overhead, wait or transfer costs
DISTRIBUTE = {"dask_task_s": 0.0, "dask_round_trip_s": 0.0, "network_bytes_per_s": 1e30,
              "dask_local_below_bytes": 0.0, "dispatch_s": 0.0, "compile_s": 0.0}  # fmt: skip


def _chunks(rows: int, layout: str) -> tuple[int, ...]:
    if layout == "one" or rows < 2:
        return (rows,)
    if layout == "even":
        return (1,) * rows if rows % 2 else (2,) * (rows // 2)
    return (1, rows - 1) if rows < 4 else (1, 2, rows - 3)  # uneven


def _dask(layout: str):
    def convert(value):
        chunks = (_chunks(value.shape[0], layout), (value.shape[1],))
        return da.from_array(value, chunks=chunks, asarray=not sp.issparse(value))

    return convert


def _compressed_blocks(value):
    """Uneven blocks, each encoded on its own with groups of every kind (``tests.cla``)."""
    blocks = _dask("uneven")(value)
    return blocks.map_blocks(_encoded, dtype=float, meta=COMPRESSED.empty())


def _encoded(block):
    return cla.compressed(block, seed=block.shape[0])


@pytest.mark.parametrize("layout", ["one", "even", "uneven", "csr", "compressed"])
def test_differential_corpus_with_dask_leaves(layout, fresh_stats):
    convert = _dask("even" if layout == "csr" else layout)
    # csr: CSR leaves become Dask arrays of CSR blocks (and dense 2-D leaves of dense blocks);
    # compressed: dense 2-D leaves become Dask arrays of compressed blocks
    kw = {"sparse": convert, "dense": convert} if layout == "csr" else {"dense": convert}
    if layout == "compressed":
        kw = {"dense": _compressed_blocks}

    # compressed: half as many examples (each encodes every block and compiles the compressed
    # kernels of five modes; tests/test_compressed.py runs the corpus on compressed leaves too)
    @settings(max_examples=20 if layout == "compressed" else 40)
    @given(exprgen.expressions(max_depth=4, allow_sparse=layout != "compressed"))
    def corpus(case):
        tree, leaves = case
        assume(layout != "csr" or any(sp.issparse(v) for v in leaves))
        assume(layout != "compressed" or any(v.ndim == 2 and not sp.issparse(v) for v in leaves))
        with dask.config.set(scheduler="sync"), fm.config(**DISTRIBUTE):
            for mode in MODES:
                check(tree, leaves, fusion=mode, **kw)

    corpus()
    stats = fresh_stats()
    print(layout, {k: v for k, v in stats.items() if "dask" in k or "executed" in k})
    # 20-40 examples x 5 modes; locally the examples are random, and one-block leaves can run
    # as few as one task per fused step (40 in one seen run): the bound only asks that Dask ran
    assert stats.get("dask_block_tasks", 0) > 20, stats
