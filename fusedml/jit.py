"""``@fm.jit``: trace a function once per input signature, optimize once per fusion mode, run.

Each distinct signature (see ``ir.trace``) is traced once and cached with its plans; calls with new
values of the same shapes only bind values and execute.

A trace bakes in whatever the function reads besides its arguments: global and closure variables
(a scalar becomes a literal, an array a constant input). Each call therefore first checks that
those variables still hold the objects they held at the trace (``Environment``, a few identity
tests); when one was rebound, every trace is dropped and the function is traced anew, so the
result is what calling it eagerly with numpy would give. Not tracked: the variables of functions
it calls, and arrays changed in place (rebind the name, or pass the array as an argument).
"""

from __future__ import annotations

import builtins
import functools
import inspect
import numbers
import threading
import types
from collections.abc import Callable, Iterable
from typing import Any

from fusedml import _stats, pipeline
from fusedml._config import check_fusion_mode, get_config
from fusedml.cplan.plan import Plan
from fusedml.ir.trace import Traced, bind_value, normalize_arg, trace


class _Program:
    __slots__ = ("plans", "traced")

    def __init__(self, traced: Traced) -> None:
        self.traced = traced
        self.plans: dict[tuple, Plan] = {}  # by fusion mode and cost settings


def _global_names(code: types.CodeType) -> set[str]:
    """Names a function's code (and the lambdas, comprehensions and inner functions in it) may
    read as globals."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


class Environment:
    """The global and closure variables a function reads, as they are now."""

    __slots__ = ("cells", "globals", "names")

    def __init__(self, fn: Callable[..., Any]) -> None:
        fn = inspect.unwrap(fn)
        code = getattr(fn, "__code__", None)
        self.globals = getattr(fn, "__globals__", {})
        own = _global_names(code) if code is not None else set()
        self.names = tuple(sorted(n for n in own if n in self.globals or hasattr(builtins, n)))
        self.cells = tuple(getattr(fn, "__closure__", None) or ())

    def snapshot(self) -> tuple:
        missing = _MISSING
        values = tuple(self.globals.get(n, missing) for n in self.names)
        return values + tuple(_cell_value(c) for c in self.cells)


_MISSING = object()


def _cell_value(cell: types.CellType) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # a closure variable not assigned yet
        return _MISSING


def _same(a: Any, b: Any) -> bool:
    """Whether a trace made with ``a`` holds for ``b``: the same object, or an equal number or
    string (``lam = 0.5`` rebound to another 0.5 needs no new trace)."""
    if a is b:
        return True
    plain = (numbers.Number, str, bytes)
    return isinstance(a, plain) and type(a) is type(b) and bool(a == b)


class JitFunction:
    def __init__(
        self, fn: Callable[..., Any], fusion: str | None, static_argnames: Iterable[str]
    ) -> None:
        self.fn = fn
        self.fusion = fusion
        self.signature = inspect.signature(fn)
        self.static_argnames = frozenset(static_argnames)
        unknown = self.static_argnames - set(self.signature.parameters)
        if unknown:
            raise ValueError(f"static_argnames {sorted(unknown)} are not parameters of {fn!r}")
        # a call with every parameter given positionally binds without inspect (its own cost
        # was a fifth of a small call's)
        plain = inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.POSITIONAL_ONLY
        parameters = self.signature.parameters.values()
        self._names = tuple(p.name for p in parameters)
        self._positional = all(p.kind in plain for p in parameters)
        self._programs: dict[tuple, _Program] = {}
        self._lock = threading.Lock()
        self._environment = Environment(fn)
        self._seen = self._environment.snapshot()
        functools.update_wrapper(self, fn)

    def _check_environment(self) -> None:
        """Drop every trace if a global or closure variable the function reads was rebound."""
        now = self._environment.snapshot()
        if all(_same(a, b) for a, b in zip(self._seen, now, strict=True)):
            return
        with self._lock:
            self._programs.clear()
            self._seen = now
        _stats.bump("retraces_for_rebound_variables")

    def _prepare(self, args: tuple, kwargs: dict, fusion: str | None):
        self._check_environment()
        if self._positional and not kwargs and len(args) == len(self._names):
            given = zip(self._names, args, strict=True)
        else:
            bound = self.signature.bind(*args, **kwargs)
            bound.apply_defaults()
            given = bound.arguments.items()
        static = self.static_argnames
        arguments = {name: normalize_arg(name, value, name in static) for name, value in given}
        key = tuple(spec for spec, _ in arguments.values())
        with self._lock:
            program = self._programs.get(key)
            if program is None:
                with _stats.timed("trace"):
                    program = _Program(trace(self.fn, arguments))
                _stats.bump("traces")
                self._programs[key] = program
            else:
                _stats.bump("trace_cache_hits")
        mode = self.fusion if fusion is None else fusion
        requested = pipeline.resolve_fusion(mode)
        # a plan chosen under other cost settings (fm.config(dispatch_s=...)) is not this one
        config = get_config()
        plan_key = (requested, config.cost_key)
        with self._lock:
            plan = program.plans.get(plan_key)
        if plan is None:
            outputs = [o.node for o in program.traced.outputs]
            plan = pipeline.optimize_until(outputs, "plan", requested)
            with self._lock:
                program.plans[plan_key] = plan
        else:
            _stats.bump("plan_cache_hits")
        return program, plan, arguments

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        program, plan, arguments = self._prepare(args, kwargs, None)
        traced = program.traced
        bindings = dict(traced.captured)
        for (_, node), (_, value) in zip(traced.params, arguments.values(), strict=True):
            if node is not None:
                bindings[node] = bind_value(node, value)
        values = pipeline.run(plan, bindings)
        outputs = pipeline.user_outputs(traced.outputs, values, bindings)
        return outputs[0] if traced.structure is None else traced.structure(outputs)

    def explain(self, *args: Any, fusion: str | None = None, **kwargs: Any) -> Plan:
        """The plan a call with these arguments runs (traces if needed, does not execute)."""
        _, plan, _ = self._prepare(args, kwargs, fusion)
        return plan

    def __repr__(self) -> str:
        return f"<fm.jit {getattr(self.fn, '__qualname__', self.fn)} fusion={self.fusion!r}>"


def jit(
    fn: Callable[..., Any] | None = None,
    *,
    fusion: str | None = None,
    static_argnames: Iterable[str] = (),
):
    """Decorator: ``@fm.jit`` or ``@fm.jit(fusion="cost_based", static_argnames=("k",))``."""
    if fusion is not None:
        check_fusion_mode(fusion)
    if fn is None:
        return lambda f: JitFunction(f, fusion, static_argnames)
    return JitFunction(fn, fusion, static_argnames)
