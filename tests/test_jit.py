"""fm.jit traces once per input signature and binds new values on every call."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp

import fusedml as fm


def l2svm_step(X, y, w, lam):
    out = 1 - y * (X @ w)
    return fm.sum(out * out), X.T @ (out * y) - lam * w


def numpy_step(X, y, w, lam):
    out = 1 - y * (X @ w)
    return np.sum(out * out), X.T @ (out * y) - lam * w


def test_hundred_calls_same_shapes_trace_once(fresh_stats):
    step = fm.jit(fusion="none")(l2svm_step)
    rng = np.random.default_rng(0)
    for i in range(100):
        X, y, w = rng.normal(size=(30, 4)), np.sign(rng.normal(size=30)), rng.normal(size=4)
        lam = float(i) / 10  # a new runtime scalar every call: must not retrace
        loss, grad = step(X, y, w, lam)
        want_loss, want_grad = numpy_step(X, y, w, lam)
        assert loss == pytest.approx(want_loss, rel=1e-12)
        np.testing.assert_allclose(grad, want_grad, rtol=1e-12)
    counters = fresh_stats()
    assert counters["traces"] == 1
    assert counters["trace_cache_hits"] == 99
    assert counters["plans_optimized"] == 1


def test_new_shape_or_sparse_input_retraces(fresh_stats):
    step = fm.jit(fusion="none")(l2svm_step)
    rng = np.random.default_rng(1)
    X = rng.normal(size=(20, 3))
    y, w = np.ones(20), np.ones(3)
    step(X, y, w, 0.5)
    step(rng.normal(size=(25, 3)), np.ones(25), w, 0.5)  # new shape
    Xs = sp.random(20, 3, density=0.3, format="csr", random_state=2)
    loss, grad = step(Xs, y, w, 0.5)  # sparse input
    step(sp.random(20, 3, density=0.3, format="csr", random_state=3), y, w, 0.5)  # same again
    assert fresh_stats()["traces"] == 3
    want_loss, want_grad = numpy_step(Xs.toarray(), y, w, 0.5)
    assert loss == pytest.approx(want_loss)
    np.testing.assert_allclose(grad, want_grad)


def test_sparsity_decade_is_part_of_the_signature(fresh_stats):
    step = fm.jit(fusion="none")(lambda X: fm.sum(X * X))
    step(sp.random(100, 100, density=0.3, format="csr", random_state=0))
    step(sp.random(100, 100, density=0.001, format="csr", random_state=0))
    assert fresh_stats()["traces"] == 2


def test_static_arguments_are_baked_in_by_value(fresh_stats):
    @fm.jit(fusion="none", static_argnames=("k",))
    def first_cols(X, k):
        return fm.sum(X[:, :k], axis=1)

    X = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(first_cols(X, 2), X[:, :2].sum(axis=1))
    np.testing.assert_array_equal(first_cols(X, k=3), X[:, :3].sum(axis=1))
    np.testing.assert_array_equal(first_cols(X, 2), X[:, :2].sum(axis=1))
    assert fresh_stats()["traces"] == 2


def test_closed_over_data_and_constant_outputs():
    C = np.arange(6.0).reshape(3, 2)

    @fm.jit(fusion="none")
    def g(X):
        return X + fm.matrix(C), 2.5

    out, two_and_half = g(np.ones((3, 2)))
    np.testing.assert_array_equal(out, 1 + C)
    assert two_and_half == 2.5


def test_explain_and_modes_per_call(fresh_stats):
    step = fm.jit(l2svm_step)
    args = (np.ones((5, 2)), np.ones(5), np.ones(2), 0.1)
    with fm.config(fusion="none"):
        plan = step.explain(*args)
        step(*args)
    assert isinstance(plan, fm.Plan) and plan.fusion == "none"
    assert "matmul" in str(plan)
    assert fresh_stats()["traces"] == 1


def test_plans_are_chosen_again_under_other_cost_settings(fresh_stats):
    step = fm.jit(l2svm_step)
    args = (np.ones((5, 2)), np.ones(5), np.ones(2), 0.1)
    tiny = step.explain(*args, fusion="cost_based")  # tiny data: numpy's calls win
    with fm.config(dispatch_s=0.0, compile_s=0.0):  # no fixed costs: fused operators win
        free = step.explain(*args, fusion="cost_based")
    assert not tiny.operators and free.operators
    assert step.explain(*args, fusion="cost_based") is tiny  # each kept for its settings
    assert fresh_stats()["traces"] == 1


def test_jit_rejects_lazy_arguments_and_bad_modes():
    step = fm.jit(fusion="none")(l2svm_step)
    with pytest.raises(TypeError, match="argument 'lam': unsupported dtype object"):
        step(np.ones((2, 2)), np.ones(2), np.ones(2), {"lam": 0.1})
    with pytest.raises(TypeError, match="concrete arrays"):
        step(fm.matrix(np.ones((2, 2))), np.ones(2), np.ones(2), 0.1)
    with pytest.raises(ValueError, match="unknown fusion mode"):
        fm.jit(fusion="fastest")(l2svm_step)
    with pytest.raises(ValueError, match="static_argnames"):
        fm.jit(static_argnames=("nope",))(l2svm_step)


SCALE = 0.5
TABLE = np.ones((2, 2))


def test_rebound_global_or_closure_variable_retraces(fresh_stats):
    global SCALE, TABLE
    scaled = fm.jit(lambda X: fm.sum(X) * SCALE)
    weighted = fm.jit(lambda X: fm.sum(X * TABLE))
    X = np.ones((2, 2))
    try:
        assert scaled(X) == 2.0 and weighted(X) == 4.0
        SCALE, TABLE = 2.0, np.full((2, 2), 3.0)  # numpy semantics: the new values count
        assert scaled(X) == 8.0 and weighted(X) == 12.0
        SCALE = 2.0 * 1.0  # an equal number: the trace still holds
        assert scaled(X) == 8.0
    finally:
        SCALE, TABLE = 0.5, np.ones((2, 2))
    offset = 1.0
    shifted = fm.jit(lambda X: fm.sum(X) + offset)
    assert shifted(X) == 5.0
    offset = 5.0  # read through the closure
    assert shifted(X) == 9.0
    counters = fresh_stats()
    assert counters["retraces_for_rebound_variables"] == 3  # one per function
    assert counters["traces"] == 3 * 2


def test_compressed_size_class_is_part_of_the_signature(fresh_stats):
    step = fm.jit(fusion="none")(lambda X: fm.sum(X * X))
    rng = np.random.default_rng(0)
    small = rng.integers(0, 4, (2000, 3)).astype(float)
    step(fm.compress(small))
    step(fm.compress(small[::-1].copy()))  # other values, the same sizes
    assert fresh_stats()["traces"] == 1
    step(fm.compress(rng.integers(0, 1000, (2000, 3)).astype(float), min_ratio=0.0))
    assert fresh_stats()["traces"] == 2


def test_plain_arrays_and_floats_get_the_registry_s_signature():
    """float64 arrays and Python floats are recognized without the format registry; their
    signature entries are those the registry gives equal values of other types."""
    from fusedml.ir.trace import normalize_arg

    for a in (np.ones(3), np.ones((4, 2)), np.ones((0, 3)), np.asfortranarray(np.ones((2, 3)))):
        spec, value = normalize_arg("x", a, False)
        assert value is a
        assert spec == normalize_arg("x", a.astype(np.int64), False)[0]
    spec, value = normalize_arg("s", 2.5, False)
    assert value == 2.5 and type(value) is float
    assert spec == normalize_arg("s", np.float64(2.5), False)[0]
    assert normalize_arg("k", 2.5, True)[0].kind == "static"
    for a in (np.ones((4, 2)), sp.csr_array(np.eye(3)), 2.5, True, ("a", 1)):
        spec = normalize_arg("x", a, False)[0]  # hashes kept per entry: rebuilt by pickling
        again = pickle.loads(pickle.dumps(spec))
        assert again == spec and hash(again) == hash(spec) and {spec: 1}[again] == 1


def test_outputs_never_share_memory_with_arguments():
    @fm.jit
    def f(X, v, S):
        return X.T, v, S * 2.0, X * 1, X + 1

    X, v = np.ones((3, 2)), np.ones(3)
    S = sp.csr_array(X)

    def arrays(a):
        return [a.data, a.indices, a.indptr] if sp.issparse(a) else [a]

    outs = f(X, v, S)
    np.testing.assert_array_equal(outs[0], X.T)
    np.testing.assert_array_equal(outs[1], v)
    for out in outs:
        for inp in (X, v, S):
            assert not any(np.shares_memory(a, b) for a in arrays(out) for b in arrays(inp))
