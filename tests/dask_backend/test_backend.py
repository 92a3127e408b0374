"""The Dask backend's contract: Dask leaves of either format, results that stay Dask arrays,
hybrid placement shown by ``fm.explain``, clear errors, and kernels compiled once per worker."""

import gc

import dask
import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp

import fusedml as fm

# every step per block, however small the data: no task overhead, wait or transfer costs
DISTRIBUTE = {"dask_task_s": 0.0, "dask_round_trip_s": 0.0, "network_bytes_per_s": 1e30,
              "dask_local_below_bytes": 0.0}  # fmt: skip


def test_vectors_and_matrices_round_trip_as_dask_arrays():
    rng = np.random.default_rng(0)
    X, v = rng.normal(size=(9, 3)), rng.normal(size=9)
    dX, dv = da.from_array(X, chunks=(4, 3)), da.from_array(v, chunks=4)
    x, y = fm.matrix(dX), fm.matrix(dv)
    with fm.config(**DISTRIBUTE), dask.config.set(scheduler="threads"):
        rows, total, cols = fm.evaluate(((x.T * y).T * 2, fm.sum(y * y), fm.sum(x, axis=0)))
        scaled = fm.evaluate(y * 3)
    assert isinstance(rows, da.Array) and rows.chunks == dX.chunks
    np.testing.assert_allclose(rows.compute(), X * v[:, None] * 2, rtol=1e-14)
    assert isinstance(total, float) and np.isclose(total, v @ v, rtol=1e-14)
    assert isinstance(cols, np.ndarray) and cols.shape == (3,)
    assert isinstance(scaled, da.Array) and scaled.shape == (9,)
    np.testing.assert_allclose(scaled.compute(), 3 * v, rtol=1e-15)


def test_csr_blocks_and_int_data_are_converted_lazily():
    S = sp.random(12, 5, density=0.3, format="csr", random_state=0)
    dS = da.from_array(S, chunks=(5, 5), asarray=False)
    ints = da.from_array(np.arange(12).reshape(6, 2), chunks=(3, 2))
    with fm.config(**DISTRIBUTE), dask.config.set(scheduler="sync"):
        s = fm.matrix(dS)
        assert s.node.meta.format.name == "csr" and s.node.meta.nnz == S.nnz
        out = fm.evaluate(s * 2)
        assert isinstance(out, da.Array) and sp.issparse(out._meta)
        np.testing.assert_allclose(out.compute().toarray(), 2 * S.toarray())
        assert fm.evaluate(fm.sum(fm.matrix(ints))) == 66.0


def test_compress_compresses_each_block_where_it_lives():
    rng = np.random.default_rng(1)
    A = rng.integers(0, 3, size=(3000, 4)).astype(float)
    A[:1000, 1:] = rng.normal(size=(1000, 3))  # the first block: mostly distinct values
    X = da.from_array(A, chunks=(1000, 4))
    with dask.config.set(scheduler="sync"):
        C = fm.compress(X, min_ratio=2.0)  # the first block does not pay that much
        assert isinstance(C, da.Array) and fm.formats.Format.of(C) is fm.formats.COMPRESSED
        blocks = [C.blocks[i].compute() for i in range(3)]
        assert all(isinstance(b, fm.CompressedMatrix) for b in blocks)
        assert [len(b.uc_cols) for b in blocks] == [4, 0, 0]  # held as one uncompressed group
        assert np.array_equal(C.compute().view(np.int64), A.view(np.int64))  # bit for bit
        c = fm.matrix(C)
        each = [fm.matrix(b).node.meta for b in blocks]
        assert c.node.meta.nnz == np.count_nonzero(A) == sum(m.nnz for m in each)
        stacked = c.node.meta.layout  # bytes and values added up, the most groups of a block
        sums = [sum(m.layout[k] for m in each) for k in range(4)]
        assert stacked == (sums[0], sums[1], max(m.layout[2] for m in each), sums[3])
    with pytest.raises(TypeError, match="timings"):
        fm.compress(X, timings={})


def test_column_chunks_are_rechunked_with_a_warning():
    dX = da.ones((6, 4), chunks=(3, 2))
    with pytest.warns(fm.RechunkWarning, match="one column chunk"):
        x = fm.matrix(dX)
    with dask.config.set(scheduler="sync"):
        assert fm.evaluate(fm.sum(x)) == 24.0


@pytest.mark.parametrize(
    ("value", "error", "match"),
    [
        (da.from_array(np.array([["a", "b"]])), TypeError, "unsupported dtype"),
        (da.ones((2, 2, 2)), ValueError, "1-D or 2-D"),
        (da.ones(4)[da.ones(4) > 0], ValueError, "unknown chunk sizes"),
    ],
)
def test_bad_dask_arrays_are_refused(value, error, match):
    with pytest.raises(error, match=match):
        fm.matrix(value)


def test_persist_converts_dask_arrays_and_leaves_others():
    local = np.ones((3, 2))
    assert fm.persist(local) is local
    with dask.config.set(scheduler="sync"):
        out = fm.persist(da.from_array(np.arange(6).reshape(3, 2), chunks=(2, 2)))
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out.compute(), np.arange(6).reshape(3, 2))


def test_explain_marks_a_hybrid_plan():
    # 80 MB of data in 8 blocks (never computed: explain only plans) beside a local vector
    X = fm.matrix(da.zeros((1_000_000, 10), chunks=(125_000, 10)))
    v = fm.matrix(np.ones(50))
    plan = fm.explain((fm.sum(fm.exp(X) * 2), fm.sum(fm.exp(v) * 2)), fusion="cost_based")
    index = plan.dag.index
    where = {index[n]: place for step, place in plan.placement.items()
             for n in (step.roots if isinstance(step, fm.FusedOp) else (step,))}  # fmt: skip
    over_x = next(index[r] for r in plan.dag.roots)
    assert where.pop(over_x) == "dask", str(plan)
    assert set(where.values()) == {"local"}, str(plan)  # every step over v
    assert "@dask" in str(plan) and "@local" in str(plan)
    # the same data in one small block: moving it is cheaper than a task, so it stays local
    small = fm.matrix(da.zeros((100, 10), chunks=(50, 10)))
    assert set(fm.explain(fm.sum(fm.exp(small) * 2)).placement.values()) == {"local"}


def test_small_dask_data_runs_locally_and_large_data_per_block(fresh_stats):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 3))
    with dask.config.set(scheduler="sync"):
        got = fm.evaluate(fm.sum(fm.exp(fm.matrix(da.from_array(X, chunks=(10, 3))))))
    assert np.isclose(got, np.exp(X).sum())
    assert fresh_stats().get("dask_block_tasks", 0) == 0 and fresh_stats()["dask_inputs_gathered"]


def test_kernels_compile_once_per_worker(client):
    X = da.random.default_rng(2).random((4_000, 6), chunks=(500, 6)).persist()
    x = fm.matrix(X)
    expr = fm.sum(fm.sqrt(x) * x + 1.5, axis=0)

    def kernels():
        counts = client.run(lambda: fm.stats())
        return {
            w: s.get("kernels_compiled", 0) + s.get("kernels_loaded_from_disk", 0)
            for w, s in counts.items()
        }

    before = kernels()
    with fm.config(**DISTRIBUTE):
        results = [fm.evaluate(expr, fusion="fuse_all") for _ in range(4)]
    got = {w: n - before.get(w, 0) for w, n in kernels().items()}
    # one Cell kernel: each worker compiled or loaded it at most once, over four calls
    assert sum(got.values()) >= 1 and max(got.values()) <= 1, got
    Xl = X.compute()
    for result in results:
        np.testing.assert_allclose(result, (np.sqrt(Xl) * Xl + 1.5).sum(axis=0), rtol=1e-12)


def test_a_vector_result_holds_its_blocks_only_while_it_lives():
    from fusedml.dask_backend.collection import DASK_ARRAYS

    v = da.from_array(np.arange(8.0), chunks=4)
    with fm.config(**DISTRIBUTE), dask.config.set(scheduler="sync"):
        out = fm.evaluate(fm.matrix(v) * 2)  # a Dask vector made from a column of the graph
        name = out.name
        assert DASK_ARRAYS.backend._column(name) is not None  # passed back in: that column
        np.testing.assert_array_equal(fm.evaluate(fm.matrix(out) + 1).compute(), 2 * v + 1)
    del out
    gc.collect()
    assert DASK_ARRAYS.backend._column(name) is None  # forgotten: its blocks can be released
