"""fusedml: SystemML-style operator fusion for numpy/scipy linear-algebra ML code.

Public API (DESIGN.md section 3); everything else is internal.
"""

from fusedml._config import FUSION_MODES, config, get_config
from fusedml._errors import (
    FusedMLError,
    KernelCacheWarning,
    KernelFallbackWarning,
    RewriteCycleError,
    ShapeError,
)
from fusedml._stats import reset_stats, stats
from fusedml.api import evaluate, explain
from fusedml.cplan.plan import FusedOp, Plan
from fusedml.dask_backend import RechunkWarning, persist
from fusedml.formats.compress import CompressionSkippedWarning, compress
from fusedml.formats.compressed import CompressedMatrix
from fusedml.ir.frontend import (
    Expr,
    abs,
    absolute,
    add,
    arctan,
    argmax,
    divide,
    equal,
    exp,
    greater,
    greater_equal,
    hstack,
    less,
    less_equal,
    log,
    matmul,
    matrix,
    max,
    maximum,
    mean,
    min,
    minimum,
    multiply,
    negative,
    not_equal,
    one_hot,
    power,
    sigmoid,
    sign,
    sqrt,
    subtract,
    sum,
    transpose,
    where,
)
from fusedml.jit import jit

__version__ = "0.1.0"

__all__ = [
    "FUSION_MODES", "CompressedMatrix", "CompressionSkippedWarning", "Expr", "FusedMLError",
    "FusedOp",
    "KernelCacheWarning", "KernelFallbackWarning", "Plan", "RechunkWarning",
    "RewriteCycleError", "ShapeError", "abs", "absolute", "add", "arctan", "argmax", "compress",
    "config",
    "divide",
    "equal", "evaluate", "exp", "explain", "get_config", "greater", "greater_equal", "hstack",
    "jit", "less", "less_equal", "log", "matmul", "matrix", "max", "maximum", "mean", "min",
    "minimum", "multiply", "negative", "not_equal", "one_hot", "persist", "power", "reset_stats",
    "sigmoid", "sign", "sqrt", "stats", "subtract", "sum", "transpose", "where",
]  # fmt: skip
