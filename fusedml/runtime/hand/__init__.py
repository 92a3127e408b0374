"""Hand-written fused operators (the paper's *Fused* baseline), run for ``Op.HAND`` nodes.

``run(node, args)`` calls the operator the node names with its input values and returns the
node's value in the format its meta names.

The kernel modules are imported through the content-addressed kernel cache (as generated kernels
are), keyed by their source *and* what they are compiled with (``_common.py``,
``fusedml.codegen.cellops``, the numba flags): numba's own ``cache=True`` keys a function by its
own file only, so an edited helper would otherwise leave stale machine code behind. Each module
is loaded on first use; its kernels run on the chunk launcher (``_launch.py``).
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from fusedml import _stats
from fusedml.codegen.cache import load_module
from fusedml.codegen.cellops import SOURCE_DIGEST
from fusedml.codegen.chunking import JIT
from fusedml.ir.node import Node

# operator name -> (kernel module, function)
OPERATORS: dict[str, tuple[str, str]] = {
    "tak+*": ("cellwise", "tak"),
    "uasqk+": ("cellwise", "sumsq"),
    "axpy": ("cellwise", "axpy"),
    "1-*": ("cellwise", "one_minus_product"),
    "sprop": ("cellwise", "sprop"),
    "sigmoid": ("cellwise", "sigmoid_op"),
    "mmchain": ("products", "mmchain"),
    "tsmm": ("products", "tsmm"),
    "wsloss": ("lowrank", "wsloss"),
    "wsigmoid": ("lowrank", "wsigmoid"),
    "wdivmm": ("lowrank", "wdivmm"),
    "wcemm": ("lowrank", "wcemm"),
    "wumm": ("lowrank", "wumm"),
}

_HERE = os.path.dirname(os.path.abspath(__file__))
_modules: dict[str, ModuleType] = {}
_names: dict[str, str] = {}  # loaded module's name -> its kernel module's ("cellwise")
_lock = threading.Lock()


def _read(name: str) -> str:
    with open(os.path.join(_HERE, f"{name}.py")) as f:
        return f.read()


def _module(name: str) -> ModuleType:
    with _lock:
        module = _modules.get(name)
        if module is None:
            helpers = hashlib.sha256(_read("_common").encode()).hexdigest()
            stamp = f"# helpers: _common.py sha256 {helpers}, cellops {SOURCE_DIGEST}, jit {JIT}"
            source = f"{_read(name)}\n{stamp}\n"
            module = _modules[name] = load_module(source)
            _names[module.__name__] = name
        return module


def kernel_body(module: str, function: str) -> Callable[..., Any]:
    """The numba function ``function`` of the kernel module ``module`` (``"cellwise"``)."""
    return getattr(_module(module), function)


def module_name(loaded: str) -> str:
    """The kernel module (``"cellwise"``) a loaded module's name stands for."""
    return _names[loaded]


def operator(name: str) -> Callable[..., Any]:
    module, function = OPERATORS[name]
    return getattr(_module(module), function)


def run(node: Node, args: Sequence[Any]) -> Any:
    out = operator(node.attr("name"))(node.attr("variant"), *args)
    _stats.bump("hand_ops_executed")
    return out
