"""Golden sources: the generated kernel module's functions (setup, chunk, finish) of one operator
per template (the last of an expression's operators; and a sparse driver), compared line by line
with files under ``golden/``. A change of a skeleton shows up here as a readable diff;
``FUSEDML_UPDATE_GOLDEN=1`` rewrites the files after such a change."""

import os
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from fusedml.datasets.bodies import kmeans_step

import fusedml as fm
from fusedml.codegen.spec import kernel_spec

GOLDEN = Path(__file__).parent / "golden"
RNG = np.random.default_rng(0)
X, Y = RNG.normal(size=(50, 6)), RNG.normal(size=(50, 6))
S = sp.random(50, 6, density=0.3, format="csr", random_state=0)
T = sp.random(50, 6, density=0.3, format="csr", random_state=2)
W = sp.random(300, 280, density=0.02, format="csr", random_state=1)
U, V = RNG.normal(size=(300, 4)), RNG.normal(size=(280, 4))
v, w = RNG.normal(size=6), RNG.normal(size=50)


def _cases():
    x, y, s, t = fm.matrix(X), fm.matrix(Y), fm.matrix(S), fm.matrix(T)
    wm, um, vm, dm = fm.matrix(W), fm.matrix(U), fm.matrix(V), fm.matrix(W.toarray())
    return {
        "cell_dense_row_sums": (fm.sum(x * y + 2.0, axis=1), "fuse_all"),
        "cell_csr_sparse_safe": (fm.sum(s * fm.exp(x)), "fuse_all"),
        "magg_dense": ((fm.sum(x * x), fm.sum(x * y), fm.max(y)), "cost_based"),
        "magg_csr_union": ((fm.sum(s * s), fm.sum(s * t), fm.sum(t * t)), "cost_based"),
        "row_mmchain": (x.T @ (w * (x @ v)), "fuse_all"),
        "outer_csr_loss": (fm.sum(wm * (um @ vm.T) ** 2), "fuse_all"),
        "outer_dense_skipping_zeros": (fm.sum(dm * (um @ vm.T) ** 2), "fuse_all"),
        # a Row body with its own vectors, scattering into a CSR input's columns (a noalias body)
        "row_csr_kmeans_step": (list(kmeans_step(s, fm.matrix(X[:3]))), "cost_based"),
    }


def kernel_function(expr, mode) -> str:
    with fm.config(compile_s=0.0, dispatch_s=0.0):
        op = fm.explain(expr, fusion=mode).operators[-1]
    source = kernel_spec(op.cplan).build().source()
    return source[source.index("def setup(") :]


@pytest.mark.parametrize("name", sorted(_cases()))
def test_generated_source_matches_golden(name):
    expr, mode = _cases()[name]
    got = kernel_function(expr, mode)
    path = GOLDEN / f"{name}.py.txt"
    if os.environ.get("FUSEDML_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(exist_ok=True)
        path.write_text(got)
    assert got.splitlines() == path.read_text().splitlines()
