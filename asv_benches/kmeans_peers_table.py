"""KMeans Lloyd iterations against scikit-learn's and scikit-learn-intelex's, from the same initial
centres: per shape (n x d = 10M dense cells, or CSR), the milliseconds per centroid update of each
library's fit (20 updates, ``tol=0``; the fit's time over its ``n_iter_``), the ratios, the largest
difference of fusedml's centres from scikit-learn's after the fit, and the GFLOP/s of fusedml's
distance step (one Lloyd step: 2 n d k flops) next to numpy's BLAS product ``X @ C.T`` and the
compiled-loop flop rate ``fusedml calibrate`` measures. Medians of ``--repeat`` fits timed in turns
after an untimed one (which compiles fusedml's kernels).

scikit-learn-intelex falls back to scikit-learn on CSR input: its CSR rows show that.

Run: .venv/bin/python asv_benches/kmeans_peers_table.py [--dims 10,50,200,784]
[--clusters 5,20,100,256] [--csr-clusters 10,100] [--cells 10000000] [--repeat 3]"""

import argparse
import os
import warnings

os.environ.setdefault("FUSEDML_COMPILE", "eager")  # the untimed fit compiles, none timed does

import numpy as np
import scipy.sparse as sp
import sklearn.cluster
from fusedml.algorithms import KMeans
from fusedml.algorithms.kmeans import _lloyd_step_first
from sklearn.exceptions import ConvergenceWarning

from fusedml._timing import interleaved_median_seconds, median_seconds
from fusedml.select.calibrate import measure

UPDATES = 20


def _intelex():
    try:
        from sklearnex.cluster import KMeans as IntelexKMeans
    except ImportError:
        return None
    return IntelexKMeans


def fits(X, C0):
    """Each library's fit from C0, as a callable returning the fitted model."""
    k = len(C0)
    kwargs = dict(n_clusters=k, init=C0, n_init=1, max_iter=UPDATES, tol=0.0, algorithm="lloyd")
    out = {
        "fusedml": lambda: KMeans(**kwargs).fit(X),
        "sklearn": lambda: sklearn.cluster.KMeans(**kwargs).fit(X),
    }
    intelex = _intelex()
    if intelex is not None:
        out["sklearnex"] = lambda: intelex(**kwargs).fit(X)
    return out


def row(label, X, k, repeat, loop_gflops):
    rng = np.random.default_rng(0)
    n, d = X.shape
    rows = rng.choice(n, k, replace=False)
    C0 = X[rows].toarray() if sp.issparse(X) else X[rows].copy()
    runs = fits(X, C0)
    models = {name: fit() for name, fit in runs.items()}  # untimed: compiles
    seconds = interleaved_median_seconds(runs, repeat, warm_up=False)
    per_update = {name: seconds[name] / models[name].n_iter_ * 1e3 for name in runs}
    diff = np.abs(models["fusedml"].cluster_centers_ - models["sklearn"].cluster_centers_).max()
    step = median_seconds(lambda: _lloyd_step_first(X, C0), repeat)
    flops = 2.0 * (X.nnz if sp.issparse(X) else n * d) * k
    blas = ""
    if not sp.issparse(X):
        blas = f"{flops / median_seconds(lambda: X @ C0.T, repeat) / 1e9:6.1f}"
    ms = "".join(f"{per_update.get(name, float('nan')):10.2f}" for name in
                 ("fusedml", "sklearn", "sklearnex"))  # fmt: skip
    ratios = "".join(
        f"{per_update[name] / per_update['fusedml']:8.2f}" if name in per_update else f"{'-':>8}"
        for name in ("sklearn", "sklearnex")
    )
    print(f"{label:>18} {k:4d}{ms}{ratios} {diff:9.1e} {flops / step / 1e9:7.1f} {blas:>6} "
          f"{loop_gflops:6.1f}", flush=True)  # fmt: skip
    return per_update


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dims", default="10,50,200,784")
    parser.add_argument("--clusters", default="5,20,100,256")
    parser.add_argument("--csr-clusters", default="10,100")
    parser.add_argument("--cells", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)
    loop_gflops = measure(size_bytes=1 << 26, measure_compile=False)["flops_per_s"] / 1e9
    print(
        f"ms per centroid update ({UPDATES} updates from the same start, medians of "
        f"{args.repeat}); ratio = peer / fusedml; GF/s: fusedml's Lloyd step, numpy's X @ C.T, "
        "fusedml calibrate's compiled loop"
    )
    print(
        f"{'shape':>18} {'k':>4}{'fusedml':>10}{'sklearn':>10}{'sklearnex':>10}"
        f"{'sk/fm':>8}{'skx/fm':>8} {'max|dC|':>9} {'GF/s':>7} {'BLAS':>6} {'loop':>6}"
    )
    ratios = []
    for d in map(int, args.dims.split(",")):
        n = args.cells // d
        X = np.random.default_rng(d).standard_normal((n, d))
        for k in map(int, args.clusters.split(",")):
            ratios.append(row(f"{n}x{d} dense", X, k, args.repeat, loop_gflops))
    X = sp.random(200_000, 1000, density=0.01, format="csr", random_state=1)
    for k in map(int, args.csr_clusters.split(",")):
        ratios.append(row("200000x1000 1% CSR", X, k, args.repeat, loop_gflops))
    for peer in ("sklearn", "sklearnex"):
        values = [r[peer] / r["fusedml"] for r in ratios if peer in r]
        if values:
            print(f"{peer} / fusedml: median {np.median(values):.2f}, least {min(values):.2f}")


if __name__ == "__main__":
    main()
