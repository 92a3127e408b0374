"""``compress``: planning and encoding of dense and sparse matrices into a ``CompressedMatrix``.

Every result is checked against numpy oracles: it decompresses to the input bit for bit, and each
group's dictionary, codes, counts and offsets say what the input's columns hold (``check``).
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from fusedml.formats.compress import CompressionSkippedWarning, compress
from fusedml.formats.compressed import (
    CompressedMatrix,
    ConstGroup,
    DdcGroup,
    RleGroup,
    SdcGroup,
    UcGroup,
)

NAN_PAYLOAD = np.array([0x7FF8_0000_0000_0123], np.int64).view(np.float64)[0]
NEG_NAN = np.array([-0x0008_0000_0000_0000], np.int64).view(np.float64)[0]  # sign bit set
SPECIAL = np.array(
    [np.nan, NAN_PAYLOAD, NEG_NAN, np.inf, -np.inf, -0.0, 0.0, 1e300, 1e-300, 5e-324, -1.5]
)


def bits(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64).view(np.int64)


def dense(X) -> np.ndarray:
    """X as a float64 array; a sparse matrix's stored values by assignment, bits kept (scipy's
    toarray adds them to zeros, which turns a stored -0.0 into 0.0)."""
    if not sp.issparse(X):
        return np.asarray(X, dtype=np.float64)
    coo = sp.coo_array(X)
    out = np.zeros(coo.shape)
    out[coo.row, coo.col] = coo.data
    return out


def width(d: int) -> type:
    """The code type for d tuples, as the format defines it."""
    return np.uint8 if d <= 256 else np.uint16 if d <= 65536 else np.uint32


def distinct_rows(block: np.ndarray) -> int:
    return len(np.unique(bits(block), axis=0))


def check(cm: CompressedMatrix, expected: np.ndarray) -> None:
    """The groups partition the columns and each one holds exactly the input's values."""
    n = expected.shape[0]
    assert cm.shape == expected.shape
    assert np.array_equal(bits(cm.decompress()), bits(expected))
    cols = np.concatenate([g.cols for g in cm.groups] or [np.zeros(0, np.int64)])
    assert np.array_equal(np.sort(cols), np.arange(expected.shape[1]))
    for g in cm.groups:
        block = expected[:, g.cols]
        if isinstance(g, DdcGroup):
            check_ddc(g, block)
        elif isinstance(g, RleGroup):
            check_rle(g, block)
        elif isinstance(g, SdcGroup):
            check_sdc(g, block, n)
        elif isinstance(g, ConstGroup):
            assert np.array_equal(bits(block), np.broadcast_to(bits(g.values), block.shape))
        else:
            assert isinstance(g, UcGroup)
            assert np.array_equal(bits(g.values), bits(block))


def check_ddc(g: DdcGroup, block: np.ndarray) -> None:
    d = len(g.dictionary)
    assert g.codes.dtype == width(d)
    assert g.counts.dtype == np.int64
    assert np.array_equal(g.counts, np.bincount(g.codes, minlength=d))
    assert g.counts.sum() == len(block)
    assert np.all(np.diff(g.counts) <= 0)  # most frequent first
    assert distinct_rows(g.dictionary) == d == distinct_rows(block)
    assert np.array_equal(bits(g.dictionary[g.codes]), bits(block))


def check_rle(g: RleGroup, block: np.ndarray) -> None:
    d, n = len(g.dictionary), len(block)
    assert np.all(np.diff(g.ends) > 0) and g.ends[-1] == n
    assert np.all(g.codes[1:] != g.codes[:-1])  # runs are maximal
    rows = np.repeat(g.codes, np.diff(g.ends, prepend=0))
    assert np.array_equal(g.counts, np.bincount(rows, minlength=d))
    assert np.all(np.diff(g.counts) <= 0)  # most frequent first
    assert distinct_rows(g.dictionary) == d == distinct_rows(block)
    assert np.array_equal(bits(g.dictionary[rows]), bits(block))


def check_sdc(g: SdcGroup, block: np.ndarray, n: int) -> None:
    d = len(g.dictionary)
    assert np.all(np.diff(g.offsets) > 0)
    assert g.offsets.dtype == np.int32
    assert g.codes.max(initial=0) < d
    assert np.array_equal(g.counts, np.bincount(g.codes, minlength=d))
    defaults = n - len(g.offsets)
    assert g.counts.sum() + defaults == n
    assert defaults >= g.counts.max(initial=0)  # the default is the most frequent tuple
    assert np.all(np.diff(g.counts) <= 0)
    assert distinct_rows(np.vstack([g.default, g.dictionary])) == d + 1 == distinct_rows(block)
    assert np.array_equal(bits(g.dictionary[g.codes]), bits(block[g.offsets]))
    rest = np.ones(n, bool)
    rest[g.offsets] = False
    assert np.all(bits(block[rest]) == bits(g.default))


def roundtrip(X, **kw) -> CompressedMatrix:
    """compress(X) forced (min_ratio 0), checked against X."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompressionSkippedWarning)
        cm = compress(X, min_ratio=0.0, **kw)
    assert isinstance(cm, CompressedMatrix)
    check(cm, dense(X))
    return cm


def kinds(cm: CompressedMatrix) -> dict[int, str]:
    """Each column's group kind."""
    return {int(c): g.kind for g in cm.groups for c in g.cols}


def low_cardinality(n: int, m: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.column_stack([rng.integers(0, 2 + 5 * j, n) * 0.5 for j in range(m)])


# -- round trips -------------------------------------------------------------------------------
@pytest.mark.parametrize("cocode", [True, False])
def test_low_cardinality_columns(cocode):
    X = low_cardinality(5000, 6)
    cm = roundtrip(X, cocode=cocode)
    assert compress(X, cocode=cocode).nbytes == cm.nbytes  # pays without forcing
    assert cm.nbytes < X.nbytes / 5


@pytest.mark.parametrize("shape", [(0, 3), (5, 0), (0, 0)])
def test_empty_matrices_compress_without_warning(shape):
    X = np.zeros(shape)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cm = compress(X)
    check(cm, X)
    check(compress(sp.csr_array(X)), X)


def test_one_row_and_one_column():
    roundtrip(np.array([[1.0, -0.0, np.nan, 3.0]]))
    roundtrip(np.array([[2.5]]))
    roundtrip(low_cardinality(3000, 1))


def test_all_zero_matrix_is_empty_groups():
    X = np.zeros((4000, 7))
    cm = compress(X)
    check(cm, X)
    assert set(kinds(cm).values()) == {"empty"}
    assert cm.nbytes < 1000


def test_constant_columns_keep_their_bits():
    n = 3000
    X = np.column_stack([np.full(n, v) for v in (-0.0, np.nan, NAN_PAYLOAD, NEG_NAN, 7.0, 0.0)])
    cm = compress(X)
    check(cm, X)
    assert kinds(cm) == {0: "const", 1: "const", 2: "const", 3: "const", 4: "const", 5: "empty"}


@pytest.mark.parametrize("n", [50, 20000])
def test_special_values_compare_by_bit_pattern(n):
    rng = np.random.default_rng(1)
    X = np.column_stack(
        [
            rng.choice(SPECIAL, n),
            np.where(rng.random(n) < 0.9, 0.0, rng.choice(SPECIAL, n)),  # mostly +0.0
            np.where(rng.random(n) < 0.5, 0.0, -0.0),  # two values equal under ==
            rng.choice([np.nan, NAN_PAYLOAD, NEG_NAN], n),  # NaNs with different payloads
        ]
    )
    cm = roundtrip(X, cocode=False)
    ddc_or_sdc = [g for g in cm.groups if isinstance(g, DdcGroup | SdcGroup)]
    assert {g.distinct for g in ddc_or_sdc if list(g.cols) == [2]} == {2}
    assert {g.distinct for g in ddc_or_sdc if list(g.cols) == [3]} == {3}


@pytest.mark.parametrize(("d", "n"), [(256, 4096), (257, 4096), (65536, 2**19), (65537, 2**19)])
def test_code_widths_at_the_boundaries(d, n):
    rng = np.random.default_rng(d)
    x = rng.permutation(np.arange(n) % d) * 0.25 - 3.0
    cm = roundtrip(x[:, None])
    (g,) = cm.groups
    assert isinstance(g, DdcGroup)
    assert g.distinct == d
    assert g.codes.dtype == width(d)


def test_correlated_columns_are_cocoded():
    rng = np.random.default_rng(2)
    n = 20000
    a = rng.integers(0, 12, n).astype(float)
    X = np.column_stack([a, a * 3.0 + 7.0, rng.integers(0, 40, n), -a])
    cm = roundtrip(X)
    wide = [set(g.cols.tolist()) for g in cm.groups if len(g.cols) > 1]
    assert wide and any({0, 1} <= cols for cols in wide)
    assert not any(len(g.cols) > 1 for g in roundtrip(X, cocode=False).groups)


def test_many_columns_cocode_neighbours():
    # more candidates than every-pair co-coding scores: neighbouring columns are paired
    rng = np.random.default_rng(3)
    n = 6000
    base = [rng.integers(0, 6, n).astype(float) for _ in range(20)]
    X = np.column_stack([c for b in base for c in (b, b + 10.0)])
    cm = roundtrip(X)
    assert sum(len(g.cols) > 1 for g in cm.groups) >= 10
    assert cm.nbytes < 0.7 * roundtrip(X, cocode=False).nbytes


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8, bool])
def test_int_and_bool_input(dtype):
    rng = np.random.default_rng(4)
    X = rng.integers(0, 3, (3000, 4)).astype(dtype)
    cm = roundtrip(X)
    assert np.array_equal(cm.decompress(), X.astype(np.float64))


def test_lists_and_layouts():
    X = low_cardinality(4000, 5)
    roundtrip(X.tolist())
    roundtrip(np.asfortranarray(X))
    roundtrip(X[::2, ::2])  # neither C- nor F-contiguous
    X.flags.writeable = False
    roundtrip(X)


def sparse_input(n: int = 6000) -> sp.csr_array:
    rng = np.random.default_rng(5)
    X = np.column_stack(
        [
            rng.integers(1, 5, n) * 1.5,  # dense: no zero at all
            np.zeros(n),  # no stored entry
            np.where(rng.random(n) < 0.97, 0.0, rng.integers(1, 4, n)),
            np.where(rng.random(n) < 0.5, 0.0, rng.normal(size=n)),  # high cardinality
            np.where(rng.random(n) < 0.6, 2.0, 0.0),  # zero is not the most frequent
        ]
    )
    csr = sp.csr_array(X)
    csr.data[:3] = 0.0  # explicit zeros ...
    csr.data[3] = -0.0  # ... and an explicit -0.0, which is not a zero tuple
    return csr


@pytest.mark.parametrize("convert", [sp.csr_array, sp.csc_matrix, sp.coo_array])
def test_sparse_input(convert):
    X = convert(sparse_input())
    roundtrip(X)
    by_col = kinds(roundtrip(X, cocode=False))
    assert by_col[1] == "empty"
    assert by_col[2] == "SDC"
    assert by_col[3] == "uncompressed"


def test_sparse_input_is_never_densified_whole(monkeypatch):
    shapes = []
    for cls in (sp.csr_array, sp.csc_array):

        def spy(self, *args, _toarray=cls.toarray, **kwargs):
            shapes.append(self.shape)
            return _toarray(self, *args, **kwargs)

        monkeypatch.setattr(cls, "toarray", spy)
    cm = compress(sparse_input(), min_ratio=0.0)
    monkeypatch.undo()
    check(cm, dense(sparse_input()))
    assert kinds(cm)[3] == "uncompressed"
    assert shapes and all(shape[1] == 1 for shape in shapes)  # the uncompressed column only


def test_dominant_value_is_sdc_and_spread_values_ddc():
    rng = np.random.default_rng(6)
    n = 10000
    dominant = np.where(rng.random(n) < 0.95, 3.5, rng.integers(0, 5, n))
    spread = rng.permutation(np.arange(n) % 6) * 2.0
    cm = roundtrip(np.column_stack([dominant, spread]), cocode=False)
    assert kinds(cm) == {0: "SDC", 1: "DDC"}
    (sdc,) = [g for g in cm.groups if isinstance(g, SdcGroup)]
    assert sdc.default.tolist() == [3.5]


def test_built_groups_have_the_narrowest_code_types(monkeypatch):
    built = []
    pack = CompressedMatrix.from_groups

    def spy(shape, groups):
        built.extend(groups)
        return pack(shape, groups)

    monkeypatch.setattr(CompressedMatrix, "from_groups", spy)
    rng = np.random.default_rng(11)
    n = 30000
    X = np.column_stack(
        [
            np.where(rng.random(n) < 0.9, 1.0, rng.integers(0, 257, n) + 2.0),  # 257 others
            np.where(rng.random(n) < 0.97, 0.0, rng.integers(0, 300, n) + 1.0),
            rng.integers(0, 300, n),
        ]
    )
    cm = compress(X, cocode=False)
    monkeypatch.undo()
    check(cm, X)
    assert sorted(g.kind for g in built) == ["DDC", "SDC", "SDC"]
    for g in built:
        assert g.codes.dtype == width(len(g.dictionary))
        assert g.codes.dtype == width(int(g.codes.max()) + 1)  # as narrow as the codes allow
        if isinstance(g, SdcGroup):
            assert g.offsets.dtype == np.int32


def test_high_cardinality_column_stays_uncompressed():
    rng = np.random.default_rng(7)
    n = 8000
    X = np.column_stack([rng.random(n), rng.integers(0, 4, n), rng.integers(0, 9, n)])
    cm = compress(X)
    check(cm, X)
    assert kinds(cm)[0] == "uncompressed"
    assert kinds(cm)[1] != "uncompressed"


def test_encoding_corrects_a_wrong_plan(monkeypatch):
    # a planner that believes every column and joint holds two values, evenly: it plans one
    # co-coded DDC group of everything, which encoding must take apart again
    import fusedml.formats.compress as module

    monkeypatch.setattr(module, "_estimate", lambda counts, n, s: (2, n / 2))
    rng = np.random.default_rng(10)
    n = 20000
    X = np.column_stack([rng.random(n), rng.integers(0, 3, n), rng.integers(0, 200, n)])
    by_col = kinds(roundtrip(X))
    assert by_col == {0: "uncompressed", 1: "DDC", 2: "DDC"}
    Y = rng.random((n, 3))
    with pytest.warns(CompressionSkippedWarning, match="actual compression ratio"):
        assert compress(Y) is Y


def test_threaded_encoding_gives_the_same_groups(monkeypatch):
    import fusedml.formats.compress as module

    X = np.column_stack([low_cardinality(5000, 12), np.random.default_rng(12).random(5000)])
    csr = sparse_input()
    serial = [compress(X), compress(csr, min_ratio=0.0)]
    monkeypatch.setattr(module, "PARALLEL_CELLS", 0)  # threads for any work
    threaded = [roundtrip(X), roundtrip(csr)]
    for a, b in zip(serial, threaded, strict=True):
        assert [g.cols.tolist() for g in a.groups] == [g.cols.tolist() for g in b.groups]
        assert all(np.array_equal(x, y) for x, y in zip(a.arrays(), b.arrays(), strict=True))


# -- when compression does not pay --------------------------------------------------------------
def test_incompressible_data_is_returned_with_a_warning():
    X = np.random.default_rng(8).random((2000, 5))
    with pytest.warns(CompressionSkippedWarning, match=r"ratio 0\.\d+ .* below min_ratio=1"):
        assert compress(X) is X
    listed = X.tolist()
    with pytest.warns(CompressionSkippedWarning):
        assert compress(listed) is listed
    # a sparse matrix of random values: its CSR form is the smallest (dense CSR is not: 12
    # bytes a value against 8)
    csr = sp.random_array((5000, 40), density=0.05, rng=8, format="csr")
    with pytest.warns(CompressionSkippedWarning):
        assert compress(csr) is csr


def test_min_ratio():
    X = low_cardinality(5000, 4)
    ratio = X.nbytes / compress(X).nbytes
    with pytest.warns(CompressionSkippedWarning, match="min_ratio=1e"):
        assert compress(X, min_ratio=1e6) is X
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert isinstance(compress(X, min_ratio=ratio / 2), CompressedMatrix)


# -- inputs stay the caller's -------------------------------------------------------------------
def test_input_is_not_modified_nor_shared():
    rng = np.random.default_rng(9)
    n = 5000
    X = np.column_stack([rng.random(n), rng.integers(0, 5, n), np.zeros(n), rng.random(n)])
    before = X.copy()
    cm = compress(X)
    assert np.array_equal(bits(X), bits(before))
    assert kinds(cm)[0] == "uncompressed"
    X[:] = 42.0  # the caller reuses its array
    check(cm, before)
    assert not any(np.shares_memory(a, X) for a in cm.arrays())


def test_sparse_input_is_not_modified_nor_shared():
    X = sparse_input()
    before = X.copy()
    cm = compress(X)
    assert np.array_equal(bits(X.data), bits(before.data))
    assert np.array_equal(X.indices, before.indices)
    assert np.array_equal(X.indptr, before.indptr)
    X.data[:] = 42.0
    check(cm, dense(before))


def test_other_inputs():
    cm = roundtrip(low_cardinality(3000, 3))
    assert compress(cm) is cm
    with pytest.raises(ValueError, match="2-D"):
        compress(np.zeros(5))
    with pytest.raises(ValueError):
        compress(np.zeros((2, 2, 2)))
    with pytest.raises(TypeError):
        compress(np.array([["a", "b"]]))


def test_seed_picks_the_sample_and_results_are_deterministic():
    X = low_cardinality(50000, 5)
    a, b = compress(X, seed=3), compress(X, seed=3)
    assert [g.cols.tolist() for g in a.groups] == [g.cols.tolist() for g in b.groups]
    check(compress(X, seed=4), X)


def test_sorted_columns_are_runs():
    rng = np.random.default_rng(0)
    n = 20_000
    a = np.column_stack([np.sort(rng.integers(0, 12, n)), rng.integers(0, 12, n)]).astype(float)
    cm = compress(a, cocode=False)
    check(cm, a)
    kinds = {int(g.cols[0]): type(g) for g in cm.groups}
    assert kinds == {0: RleGroup, 1: DdcGroup}  # the shuffled column has a run per row or two
    runs = next(g for g in cm.groups if isinstance(g, RleGroup))
    assert len(runs.ends) == 12 and runs.codes.nbytes + runs.ends.nbytes < n // 100
