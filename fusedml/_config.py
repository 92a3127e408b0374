"""Scoped configuration: one immutable `Config` per context, changed only through `config(...)`.

The defaults come from environment variables once, at import time:

| variable            | field     | meaning                                                  |
|---------------------|-----------|----------------------------------------------------------|
| FUSEDML_FUSION      | fusion    | default fusion mode (see FUSION_MODES)                   |
| FUSEDML_DEBUG       | debug     | 0 quiet; 1 verify DAGs, stage timings; 2 + plans; 3 +    |
|                     |           | memo tables; 4 + each generated kernel's source          |
| FUSEDML_CACHE_DIR   | cache_dir | generated kernels and calibration are kept here          |
| FUSEDML_CODEGEN     | codegen   | 0: fused operators run through the reference interpreter |
| FUSEDML_COMPILE     | compile   | when kernels compile (see COMPILE_MODES)                 |

A context variable (not a global) holds the current config, so threads and asyncio tasks each see
their own scope and estimators stay picklable.
"""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import os
from dataclasses import dataclass
from typing import Any

# The paper's labels: none = Base, hand = Fused, fuse_all = FA, fuse_no_redundancy = FNR,
# cost_based = Gen.
FUSION_MODES = ("none", "hand", "fuse_all", "fuse_no_redundancy", "cost_based")
DEFAULT_FUSION = "cost_based"
# background: a worker process compiles a kernel while its operator runs through the reference
# interpreter; eager: compile in this process at the first call; off: only kernels already in
# the disk cache run (fusedml.codegen.compiler)
COMPILE_MODES = ("background", "eager", "off")


def check_fusion_mode(mode: object) -> str:
    if not isinstance(mode, str) or mode not in FUSION_MODES:
        raise ValueError(
            f"unknown fusion mode {mode!r}; expected one of {', '.join(map(repr, FUSION_MODES))}"
        )
    return mode


def _default_cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "fusedml")


COST_FIELDS = (
    "read_bandwidth_bytes_per_s",
    "write_bandwidth_bytes_per_s",
    "flops_per_s",
    "numpy_read_bandwidth_bytes_per_s",
    "numpy_write_bandwidth_bytes_per_s",
    "numpy_flops_per_s",
    "serial_below_s",
    "dispatch_s",
    "dask_task_s",
    "dask_round_trip_s",
    "network_bytes_per_s",
    "dask_local_below_bytes",
    "compile_s",
    "compile_amortization_calls",
    "base_exp_log_speedup",
)


@dataclass(frozen=True)
class Config:
    fusion: str = DEFAULT_FUSION
    debug: int = 0
    cache_dir: str = ""
    codegen: bool = True  # run fused operators as generated kernels (False: reference only)
    compile: str = "background"  # one of COMPILE_MODES
    # where plans run: None = this process (fusedml.runtime.backend.LocalBackend); any object
    # with that class's methods (Dask's backend, a test's row-block backend)
    backend: Any = None
    # cost-model constants; None = calibrated value or documented default (select/constants.py)
    read_bandwidth_bytes_per_s: float | None = None
    write_bandwidth_bytes_per_s: float | None = None
    flops_per_s: float | None = None
    numpy_read_bandwidth_bytes_per_s: float | None = None
    numpy_write_bandwidth_bytes_per_s: float | None = None
    numpy_flops_per_s: float | None = None
    serial_below_s: float | None = None
    dispatch_s: float | None = None
    compile_s: float | None = None
    compile_amortization_calls: float | None = None
    base_exp_log_speedup: float | None = None
    dask_task_s: float | None = None
    dask_round_trip_s: float | None = None
    network_bytes_per_s: float | None = None
    dask_local_below_bytes: float | None = None

    def __post_init__(self) -> None:
        check_fusion_mode(self.fusion)
        if not isinstance(self.debug, int) or self.debug < 0:
            raise ValueError(f"debug must be a non-negative int, got {self.debug!r}")
        if self.compile not in COMPILE_MODES:
            raise ValueError(
                f"unknown compile mode {self.compile!r}; expected one of "
                f"{', '.join(map(repr, COMPILE_MODES))}"
            )
        if self.backend is not None and not callable(getattr(self.backend, "run_fused", None)):
            raise ValueError(f"backend must be a fusedml backend, got {self.backend!r}")
        for name in COST_FIELDS:
            value = getattr(self, name)
            if value is not None and not (isinstance(value, int | float) and value >= 0):
                raise ValueError(f"{name} must be a non-negative number, got {value!r}")

    @functools.cached_property
    def cost_key(self) -> tuple:
        """The cost-model fields' values (plans are kept per cost setting)."""
        return tuple(getattr(self, name) for name in COST_FIELDS)

    @property
    def cost_overrides(self) -> dict[str, float | None]:
        return {name: getattr(self, name) for name in COST_FIELDS}


def _from_env() -> Config:
    fusion = os.environ.get("FUSEDML_FUSION", DEFAULT_FUSION)
    try:
        check_fusion_mode(fusion)
    except ValueError as exc:
        raise ValueError(f"environment variable FUSEDML_FUSION: {exc}") from None
    debug = os.environ.get("FUSEDML_DEBUG", "0")
    if not debug.isdigit():
        raise ValueError(f"environment variable FUSEDML_DEBUG must be an integer, got {debug!r}")
    cache_dir = os.environ.get("FUSEDML_CACHE_DIR") or _default_cache_dir()
    codegen = os.environ.get("FUSEDML_CODEGEN", "1") not in ("0", "false", "no")
    compile_mode = os.environ.get("FUSEDML_COMPILE", "background")
    if compile_mode not in COMPILE_MODES:
        raise ValueError(
            f"environment variable FUSEDML_COMPILE must be one of {', '.join(COMPILE_MODES)}, "
            f"got {compile_mode!r}"
        )
    return Config(
        fusion=fusion, debug=int(debug), cache_dir=cache_dir, codegen=codegen,
        compile=compile_mode,
    )  # fmt: skip


# The default (not a set()) so that new threads, which start from an empty context, see it too.
_current: contextvars.ContextVar[Config] = contextvars.ContextVar(
    "fusedml_config",
    default=_from_env(),  # noqa: B039 - Config is a frozen dataclass
)


def get_config() -> Config:
    """The configuration in force in this context."""
    return _current.get()


class config:
    """Override configuration fields for the duration of a ``with`` block.

    >>> import fusedml as fm
    >>> with fm.config(fusion="none"):
    ...     fm.get_config().fusion
    'none'
    """

    def __init__(self, **overrides: object) -> None:
        fields = {f.name for f in dataclasses.fields(Config)}
        unknown = sorted(set(overrides) - fields)
        if unknown:
            raise TypeError(f"unknown config field(s) {unknown}; known: {sorted(fields)}")
        self._new = dataclasses.replace(get_config(), **overrides)  # validates eagerly
        self._tokens: list[contextvars.Token[Config]] = []

    def __enter__(self) -> Config:
        self._tokens.append(_current.set(self._new))
        return self._new

    def __exit__(self, *exc: object) -> None:
        _current.reset(self._tokens.pop())
