"""Hand-written operators compute the reference interpreter's values (``fusion="none"``) on dense
and CSR data of every shape, including empty, one-row, all-zero, NaN/inf and int inputs."""

from unittest import mock

import numpy as np
import pytest
import scipy.sparse as sp
from fusedml.datasets import HAND_PATTERNS as PATTERNS
from hypothesis import example, given, settings
from hypothesis import strategies as st

import fusedml as fm
from fusedml.ir.ops import Op
from fusedml.runtime import reference
from fusedml.runtime.reference import evaluate_node
from tests.exprgen import assert_close_to_any, leaf_data


def as_array(value):
    return value.toarray() if sp.issparse(value) else np.asarray(value)


@st.composite
def pattern_data(draw):
    m = draw(st.sampled_from([0, 1, 2, 5, 70]))  # 70 rows: more rows than kernel chunks
    n = draw(st.sampled_from([1, 3, 8]))
    k = draw(st.sampled_from([1, 2]))
    shapes = {"X": (m, n), "Y": (m, n), "Z": (m, n), "W": (m, n), "U": (m, k), "V": (n, k)}
    data = {
        key: draw(leaf_data(shape, allow_sparse=key not in "UV")) for key, shape in shapes.items()
    }
    for key, size in (("v", n), ("w", m), ("y", m)):
        data[key] = draw(leaf_data((size, 1), allow_sparse=False)).reshape(-1)
    data["s"] = draw(leaf_data((), allow_sparse=False))
    return data


def magnitude(expr) -> float:
    """The largest finite |value| of any node of the unfused plan: a sum over cells may be
    reassociated, and its rounding error (cancellation included) is bounded by cells * eps *
    this."""
    plan = fm.explain(expr, fusion="none")
    values = dict(expr.bindings)
    largest = 0.0
    for node in plan.dag.nodes:
        if node not in values:
            values[node] = (node.attr("value") if node.op is Op.CONST
                            else evaluate_node(node, [values[i] for i in node.inputs]))  # fmt: skip
        value = values[node]
        value = np.abs(value.data if sp.issparse(value) else np.asarray(value, dtype=float))
        finite = value[np.isfinite(value)]
        largest = max(largest, float(finite.max()) if finite.size else 0.0)
    return largest


def rounded_product(a, b):
    """``a @ b`` with every term rounded before it is summed, as the kernels' loops do (BLAS's
    fused multiply-adds do not round them)."""
    with np.errstate(all="ignore"):
        return (np.asarray(a)[:, :, None] * np.asarray(b)[None, :, :]).sum(axis=1)


def check(name, data):
    build = PATTERNS[name].build_from
    exprs = {key: fm.matrix(value) for key, value in data.items()}
    expr = build(exprs)
    want = fm.evaluate(expr, fusion="none")
    before = fm.stats()
    got = fm.evaluate(expr, fusion="hand")
    after = fm.stats()
    assert sp.issparse(got) == sp.issparse(want) and np.shape(got) == np.shape(want)
    cells = max(np.size(v) for v in data.values())
    atol = max(1e-9, 4 * cells * np.finfo(float).eps * magnitude(expr))
    got, want = as_array(got), as_array(want)
    if not np.allclose(got, want, rtol=1e-9, atol=atol, equal_nan=True):
        with mock.patch.object(reference, "dense_product", rounded_product):
            rounded = as_array(fm.evaluate(expr, fusion="none"))
        assert_close_to_any(got, [want, rounded], rtol=1e-9, atol=atol)
    plan = fm.explain(expr, fusion="hand")
    ran = after.get("hand_ops_executed", 0) - before.get("hand_ops_executed", 0)
    assert ran == len(plan.hand_operators)
    assert after.get("hand_ops_by_reference", 0) == before.get("hand_ops_by_reference", 0)
    return plan.hand_operators


# a term that overflows beside an infinite one: wdivmm's loop gives NaN where BLAS gives inf
_ROWS = np.array([[2.0, 1.0, 0.0], [-1.0, -1.0, -2.0]])
OVERFLOW_BESIDE_INF = {
    "X": np.array([[0.126, -0.132, 0.640], [0.105, -0.536, 0.362]]), "Y": _ROWS, "Z": _ROWS,
    "W": _ROWS, "U": np.array([[-np.inf, -1.198], [-1.724, -1e300]]),
    "V": np.array([[0.126, -0.132], [0.640, 0.105], [-0.536, 0.362]]),
    "v": np.array([2.0, 1.0, 0.0]), "w": np.array([2.0, 1.0]), "y": np.array([0.126, -0.132]),
    "s": np.array(0.0),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(PATTERNS))
@settings(max_examples=20)
@given(data=pattern_data())
@example(data=OVERFLOW_BESIDE_INF)
def test_hand_operators_match_the_reference(name, data):
    check(name, data)


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_int_inputs_and_larger_shapes(name):
    rng = np.random.default_rng(1)
    m, n, k = 300, 40, 4
    data = {key: rng.integers(-3, 4, size=(m, n)) for key in "XYZW"}
    data["X"] = sp.csr_array(np.where(rng.random((m, n)) < 0.1, data["X"], 0))
    data["U"], data["V"] = rng.random((m, k)) + 0.5, rng.random((n, k)) + 0.5
    data["v"], data["w"], data["y"] = rng.random(n), rng.random(m), rng.integers(0, 2, size=m)
    data["s"] = np.int64(3)
    # each pattern's operator is chosen and run here, whichever worker ran the corpus above
    assert set(PATTERNS[name].expected) <= set(check(name, data))


def special_matrix(rng, shape, csr):
    values = rng.normal(size=shape)
    values[rng.random(shape) < 0.4] = 0.0
    mask = rng.random(shape) < 0.25
    values[mask] = rng.choice([np.inf, -np.inf, np.nan], size=int(mask.sum()))
    if not csr:
        return values
    out = sp.csr_array(values)
    out.data[rng.random(out.nnz) < 0.2] = 0.0  # stored zeros annihilate like implicit ones
    return out


@pytest.mark.parametrize("factors", ["finite", "special"])
@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_csr_zeros_annihilate_inf_and_nan_in_every_format_combination(name, factors):
    rng = np.random.default_rng(7)
    m, n, k = 9, 5, 2
    for combo in range(16):  # which of X, Y, Z, W are CSR
        data = {
            key: special_matrix(rng, (m, n), bool(combo >> bit & 1))
            for bit, key in enumerate("XYZW")
        }
        data["U"], data["V"] = rng.normal(size=(m, k)), rng.normal(size=(n, k))
        if factors == "special":
            data["U"][0, 0], data["V"][1, 1], data["U"][3, 1] = np.inf, np.nan, 0.0
        data["v"], data["w"], data["y"] = (rng.normal(size=size) for size in (n, m, m))
        data["v"][0] = np.inf
        data["s"] = np.float64(np.inf if combo % 3 == 0 else 0.25)
        check(name, data)


def test_wsloss_expansion_that_overflows_falls_back_to_the_cell_sum():
    """sum((U V' - X)^2) by sum((U'U) * (V'V)) computes 0 * 1e400 = nan where every cell is 0."""
    X = fm.matrix(sp.csr_array((1, 1)))
    U, V = fm.matrix(np.array([[0.0]])), fm.matrix(np.array([[1e200]]))
    expr = fm.sum((U @ V.T - X) ** 2)
    assert fm.explain(expr, fusion="hand").hand_operators == ("wsloss[none]",)
    assert fm.evaluate(expr, fusion="hand") == fm.evaluate(expr, fusion="none") == 0.0
