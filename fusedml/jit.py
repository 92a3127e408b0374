"""``@fm.jit``: trace a function once per input signature, optimize once per fusion mode, run.

Each distinct signature (see ``ir.trace``) is traced once and cached with its plans; calls with new
values of the same shapes only bind values and execute.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable, Iterable
from typing import Any

from fusedml import _stats, pipeline
from fusedml._config import check_fusion_mode
from fusedml.cplan.plan import Plan
from fusedml.ir.trace import Traced, bind_value, normalize_arg, trace


class _Program:
    __slots__ = ("plans", "traced")

    def __init__(self, traced: Traced) -> None:
        self.traced = traced
        self.plans: dict[str, Plan] = {}


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
        self._programs: dict[tuple, _Program] = {}
        self._lock = threading.Lock()
        functools.update_wrapper(self, fn)

    def _prepare(self, args: tuple, kwargs: dict, fusion: str | None):
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        arguments = {
            name: normalize_arg(name, value, name in self.static_argnames)
            for name, value in bound.arguments.items()
        }
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
        with self._lock:
            plan = program.plans.get(requested)
        if plan is None:
            outputs = [o.node for o in program.traced.outputs]
            plan = pipeline.optimize_until(outputs, "plan", requested)
            with self._lock:
                program.plans[requested] = plan
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
