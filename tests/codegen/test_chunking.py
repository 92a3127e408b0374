"""How many row chunks a generated kernel splits its main input into."""

from hypothesis import given
from hypothesis import strategies as st

from fusedml.codegen.chunking import CHUNKS, MIN_CHUNK_CELLS, chunks_source


def chunks(m: int, n: int, most: int = CHUNKS) -> int:
    return eval(chunks_source(most), {}, {"m": m, "n": n})


@given(st.integers(0, 10**7), st.integers(0, 10**4), st.integers(1, CHUNKS))
def test_chunks_cover_enough_cells_and_never_outnumber_rows(m, n, most):
    k = chunks(m, n, most)
    assert k <= min(m, most)
    if m >= 2 and most >= 2:
        assert k >= 2  # partials are combined even on the smallest inputs
    if k > 2:
        assert m * n >= k * MIN_CHUNK_CELLS
    if m and m * n >= most * MIN_CHUNK_CELLS and m >= most:
        assert k == most  # large inputs: as many chunks as allowed


def test_a_small_input_gets_few_chunks_and_a_large_one_all():
    assert chunks(0, 10) == 0
    assert chunks(1, 10) == 1
    assert 2 < chunks(1797, 64) < CHUNKS // 4  # digits: 64 partials cost more than they balanced
    assert chunks(1_000_000, 10) == CHUNKS
