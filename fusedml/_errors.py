"""Exception and warning types shared by every layer (lowest layer: imports nothing of fusedml)."""


class FusedMLError(Exception):
    """Base class of fusedml's own errors."""


class ShapeError(FusedMLError, ValueError):
    """Operand shapes do not fit the operation; raised when the expression is built."""


class RewriteCycleError(FusedMLError, RuntimeError):
    """The rewrite fixpoint revisited a DAG it had already produced (the rule table has a cycle)."""


class KernelFallbackWarning(UserWarning):
    """A generated kernel failed to build or run; its operator ran through the reference."""


class KernelCacheWarning(UserWarning):
    """The kernel cache cannot be used as configured; kernels still compile and run."""
