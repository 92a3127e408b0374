"""Generated kernels vs hand-written numba, numexpr and numpy/scipy on the paper's patterns at
sizes that stream memory, and per-call overhead."""

import numpy as np
from fusedml.datasets import sparse_matrix

import fusedml as fm

from . import handwritten

DENSE_ROWS, COLS = 2_000_000, 20
OUTER_SHAPE, OUTER_DENSITY, RANK = (20_000, 5_000), 0.01, 10


def dense_inputs(seed=0):
    rng = np.random.default_rng(seed)
    X, Y, Z = (rng.standard_normal((DENSE_ROWS, COLS)) for _ in range(3))
    return X, Y, Z, rng.standard_normal(DENSE_ROWS), rng.standard_normal(COLS)


def outer_inputs(seed=0):
    rng = np.random.default_rng(seed)
    # fusedml's generator: scipy's sp.random builds an m*n-sized temporary to pick positions
    W = sparse_matrix(*OUTER_SHAPE, OUTER_DENSITY, seed)
    return (
        W,
        rng.standard_normal((OUTER_SHAPE[0], RANK)),
        rng.standard_normal((OUTER_SHAPE[1], RANK)),
    )


def implementations():
    """pattern -> {implementation: (setup -> callable)}."""
    import numexpr

    cell = fm.jit(lambda X, Y, Z: fm.sum(X * Y * Z))
    magg = fm.jit(lambda X, Y: (fm.sum(X**2), fm.sum(X * Y), fm.sum(Y**2)))
    chain = fm.jit(lambda X, w, v: X.T @ (w * (X @ v)))
    outer = fm.jit(lambda W, U, V: fm.sum(W * (U @ V.T) ** 2))

    def modes(fn, args):
        out = {}
        for mode in ("none", "hand", "fuse_all", "fuse_no_redundancy", "cost_based"):
            out[f"fusedml {mode}"] = lambda mode=mode: fm_call(fn, args, mode)
        return out

    def fm_call(fn, args, mode):
        with fm.config(fusion=mode):
            return fn(*args)

    X, Y, Z, w, v = dense_inputs()
    W, U, V = outer_inputs()
    return {
        "sum(X*Y*Z)": {
            **modes(cell, (X, Y, Z)),  # "fusedml hand" is tak+*
            "numexpr": lambda: numexpr.evaluate("sum(X * Y * Z)", {"X": X, "Y": Y, "Z": Z}),
            "numpy": lambda: np.sum(X * Y * Z),
        },
        "sum(X**2), sum(X*Y), sum(Y**2)": {
            **modes(magg, (X, Y)),
            "hand-written numba": lambda: handwritten.magg_xy(X, Y),
            "numexpr": lambda: tuple(
                numexpr.evaluate(f"sum({e})", {"X": X, "Y": Y}) for e in ("X * X", "X * Y", "Y * Y")
            ),
            "numpy": lambda: (np.sum(X**2), np.sum(X * Y), np.sum(Y**2)),
        },
        "X.T @ (w * (X @ v))": {
            **modes(chain, (X, w, v)),  # "fusedml hand" is mmchain
            "numpy": lambda: X.T @ (w * (X @ v)),
        },
        "sum(W * (U @ V.T)**2)": {
            **modes(outer, (W, U, V)),
            "hand-written numba": lambda: handwritten.outer_sq_loss(
                W.data, W.indices, W.indptr, U, V
            ),
            "numpy": lambda: W.multiply((U @ V.T) ** 2).sum(),
        },
    }


class Patterns:
    """asv: every implementation of every pattern (setup warms compiles and plan caches)."""

    timeout = 900
    params = (
        ["sum(X*Y*Z)", "sum(X**2), sum(X*Y), sum(Y**2)", "X.T @ (w * (X @ v))",
         "sum(W * (U @ V.T)**2)"],
        ["fusedml none", "fusedml hand", "fusedml fuse_all", "fusedml fuse_no_redundancy",
         "fusedml cost_based", "hand-written numba", "numexpr", "numpy"],
    )  # fmt: skip
    param_names = ["pattern", "implementation"]

    def setup(self, pattern, implementation):
        impls = implementations()[pattern]
        if implementation not in impls:
            raise NotImplementedError  # asv: skip (no numexpr for products, no hand op for magg)
        self.fn = impls[implementation]
        self.fn()

    def time_pattern(self, pattern, implementation):
        self.fn()


class Overhead:
    """Per-call overhead of a jit body on tiny inputs (kernel time is negligible)."""

    def setup(self):
        self.step = fm.jit(fusion="fuse_all")(
            lambda X, y: (fm.sum(X * y), fm.sum(fm.exp(X), axis=1))
        )
        self.X, self.y = np.ones((4, 3)), np.ones(3)
        self.step(self.X, self.y)

    def time_tiny_call(self):
        self.step(self.X, self.y)

    def track_fused_operators(self):
        return len(self.step.explain(self.X, self.y).operators)


class PeakMemory:
    """The outer pattern never materializes U @ V.T: the memory a call adds at its peak, relative
    to its inputs' size (Linux: the peak RSS is reset before the call)."""

    params = (["cost_based", "none"],)
    param_names = ["fusion"]

    def setup(self, fusion):
        self.W, self.U, self.V = outer_inputs()
        self.loss = fm.jit(fusion=fusion)(lambda W, U, V: fm.sum(W * (U @ V.T) ** 2))
        self.loss(self.W, self.U, self.V)  # compile outside the measurement
        W = self.W
        self.input_bytes = W.data.nbytes + W.indices.nbytes + W.indptr.nbytes
        self.input_bytes += self.U.nbytes + self.V.nbytes

    def peakmem_outer(self, fusion):
        self.loss(self.W, self.U, self.V)

    def track_peak_added_over_inputs(self, fusion):
        before = _status_kb("VmRSS")
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset the peak RSS (VmHWM) to the current RSS
        self.loss(self.W, self.U, self.V)
        return (_status_kb("VmHWM") - before) * 1024 / self.input_bytes

    track_peak_added_over_inputs.unit = "x input size"


def _status_kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


# One line (asv embeds setup code in another string, where escaped newlines would break it): the
# MLogReg iteration body, whose plan has several fused operators, as an estimator would run it.
_KERNEL = (
    "from fusedml.datasets.bodies import mlogreg_step, mlogreg_data; "
    "fm.jit(fusion='fuse_all')(mlogreg_step)(*mlogreg_data(2000))"
)


def _setup(fresh_cache):
    prime = f"import numpy as np, fusedml as fm; {_KERNEL}"
    return (
        "import os, shutil, subprocess, sys, tempfile\n"
        "d = os.path.join(tempfile.gettempdir(), 'fusedml-asv-timeraw')\n"
        + (
            "shutil.rmtree(d, ignore_errors=True)\n"
            if fresh_cache
            else "subprocess.run([sys.executable, '-c', "
            + repr(prime)
            + "], env=dict(os.environ, FUSEDML_CACHE_DIR=d), check=True)\n"
        )
        + "os.environ['FUSEDML_CACHE_DIR'] = d\n"
        "import numpy as np, fusedml as fm\n"
    )


def timeraw_cold_compile():
    """A new process with an empty kernel cache: optimize, generate, compile and run a kernel."""
    return _KERNEL, _setup(fresh_cache=True)


def timeraw_warm_disk_cache():
    """A new process whose disk cache holds the kernel (primed by another process): optimize,
    load and run it."""
    return _KERNEL, _setup(fresh_cache=False)
