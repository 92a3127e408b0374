"""Which hand operator each pattern selects (``fusion="hand"``), and when none may be selected."""

import numpy as np
import pytest
import scipy.sparse as sp
from fusedml.datasets import HAND_PATTERNS as PATTERNS

import fusedml as fm
from fusedml.ir.ops import Op
from tests.formats import FORMATS, csr, dense


def leaves(m=40, n=12, k=3, to_format=dense):
    rng = np.random.default_rng(0)

    def mat(shape):
        a = rng.random(shape)
        if to_format is csr:  # zeros for CSR to skip
            a[rng.random(shape) < 0.7] = 0.0
        return fm.matrix(to_format(a))

    d = {name: mat((m, n)) for name in "XYZW"}
    d["U"], d["V"] = fm.matrix(rng.random((m, k))), fm.matrix(rng.random((n, k)))
    d["v"], d["w"], d["y"] = (fm.matrix(rng.random(size)) for size in (n, m, m))
    d["s"] = fm.matrix(np.float64(0.5))  # a runtime scalar
    return d


@pytest.mark.parametrize("to_format", FORMATS)
@pytest.mark.parametrize("name", list(PATTERNS))
def test_each_pattern_selects_its_hand_operator(name, to_format):
    pattern = PATTERNS[name]
    build, expected = pattern.build_from, list(pattern.expected)
    expr = build(leaves(to_format=to_format))
    plan = fm.explain(expr, fusion="hand")
    if (name == "X+s*Y" or name == "X-Y*s") and to_format is csr:
        expected = []  # X and Y both CSR: the sum is CSR, left to scipy
    assert list(plan.hand_operators) == expected, str(plan)
    assert plan.operators == ()  # hand mode never generates code
    if expected:  # the operator replaces its whole pattern (1-D results add a transpose view)
        allowed = {Op.DATA, Op.CONST, Op.HAND, Op.TRANSPOSE}
        if name.startswith("((X!=0)"):
            allowed.add(Op.NE)  # the weight matrix W = (X != 0) is the operator's input
        assert {n.op for n in plan.dag.nodes} <= allowed
    assert fm.explain(expr, fusion="none").hand_operators == ()


def test_patterns_inside_larger_expressions_and_several_per_dag():
    d = leaves()
    q = d["X"] @ d["v"]
    loss = fm.sum(d["X"] * d["Y"] * d["Z"]) + fm.sum(d["X"] ** 2)
    grad = d["X"].T @ (d["w"] * q) - d["v"] * 2.0
    plan = fm.explain((loss, grad), fusion="hand")
    assert sorted(plan.hand_operators) == [
        "axpy[minus]",  # (...) - 2.0 * v
        "mmchain[XtwXv]",
        "tak+*[full]",
        "uasqk+[full]",
    ]


def test_an_intermediate_read_elsewhere_is_not_swallowed():
    d = leaves()
    q = d["X"] @ d["v"]  # X @ v is also an output: mmchain would have to recompute it
    plan = fm.explain((d["X"].T @ q, q), fusion="hand")
    assert plan.hand_operators == ()
    uv = d["U"] @ d["V"].T
    plan = fm.explain((fm.sum(d["W"] * (d["X"] - uv) ** 2), fm.sum(uv)), fusion="hand")
    assert plan.hand_operators == ()


def test_the_largest_pattern_wins():
    d = leaves()
    # sigmoid alone is a hand operator, but under W * it is part of wsigmoid
    plan = fm.explain(d["W"] * fm.sigmoid(d["U"] @ d["V"].T), fusion="hand")
    assert plan.hand_operators == ("wsigmoid[basic]",)
    # (X - U V')**2 summed is wsloss, not the sum of squares of an intermediate
    plan = fm.explain(fm.sum((d["X"] - d["U"] @ d["V"].T) ** 2), fusion="hand")
    assert plan.hand_operators == ("wsloss[none]",)


def test_guards():
    d = leaves()
    # a product of full rank is not a low-rank U @ V.T
    big = leaves(m=4, n=3, k=5)
    plan = fm.explain(big["W"] * fm.exp(big["U"] @ big["V"].T), fusion="hand")
    assert plan.hand_operators == ()
    # mmchain needs a vector v
    plan = fm.explain(d["X"].T @ (d["X"] @ d["U"].T[:, :12].T), fusion="hand")
    assert all(not h.startswith("mmchain") for h in plan.hand_operators)
    # tak+* needs three operands of one shape (no broadcasting)
    column = fm.matrix(np.ones((40, 1)))
    plan = fm.explain(fm.sum(d["X"] * d["Y"] * column), fusion="hand")
    assert plan.hand_operators == ()
    # a wide CSR tsmm would need a dense n x n accumulator
    wide = fm.matrix(sp.random(10, 5000, density=0.001, format="csr", random_state=0))
    assert fm.explain(wide.T @ wide, fusion="hand").hand_operators == ()
    assert fm.explain(wide @ wide.T, fusion="hand").hand_operators == ("tsmm[right]",)
    # int inputs are converted to float64 when bound, so they match too
    ints = fm.matrix(np.arange(12).reshape(4, 3))
    assert fm.explain(fm.sum(ints**2), fusion="hand").hand_operators == ("uasqk+[full]",)
