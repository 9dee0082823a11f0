"""Compile a function for a TPU topology on this machine, timed, with its static schedule.

``jax.jit(f).trace(*args).lower().compile()`` with every argument a
``ShapeDtypeStruct`` placed on a ``Mesh`` of the topology's devices compiles for
that TPU without one. Each repeat compiles a *fresh* function (the builder is
called again), so no JAX cache serves a repeat; the compile time is the
median. With libtpu's bundle dump on (:func:`jaxperf.compilers.mosaic_tpu.topology.prepare`)
the kernel's final bundles of the first compile are parsed.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import bundles, topology

Builder = Callable[[], tuple[Any, tuple]]  # a fresh jitted function and its input structs
COST_KEYS = ("flops", "bytes accessed", "transcendentals", "optimal_seconds")


@dataclasses.dataclass
class CompileResult:
    """What one (variant, topology) compile gave: times, sizes, schedule, or the error."""

    compile_ms: list[float]
    code_bytes: int | None = None
    cost: dict[str, float] = dataclasses.field(default_factory=dict)
    schedules: list[bundles.Schedule] = dataclasses.field(default_factory=list)
    error: str | None = None
    refused: bool = False  # the compiler does not support the kernel: its lowering raised NotImplementedError
    compiled: Any = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def median_ms(self) -> float | None:
        return statistics.median(self.compile_ms) if self.compile_ms else None


def short_error(err: BaseException) -> str:
    """The first meaningful line of a compile error (libtpu's messages run to pages)."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return f"{type(err).__name__}: {lines[0] if lines else ''}"[:300]


def cost_of(compiled: Any) -> dict[str, float]:
    """The headline entries of ``compiled.cost_analysis()`` (empty where it has none)."""
    try:
        cost = compiled.cost_analysis()
    except Exception:  # noqa: BLE001 - some programs have no cost model
        return {}
    if isinstance(cost, (list, tuple)):
        cost = cost[0] if cost else {}
    return {key: float(cost[key]) for key in COST_KEYS if key in (cost or {})}


def lower_compile(build: Builder, mesh: Any) -> tuple[Any, float]:
    """One fresh build, traced with its arguments placed on ``mesh``, lowered and compiled; ms.
    Traced and lowered inside ``mesh``'s abstract mesh, so that a lowering rule that asks for
    the TPU's device kind (integer ``//`` does) sees the topology's, not this CPU's."""
    import jax

    fn, args = build()
    placed = topology.placed(args, mesh)
    started = time.perf_counter()
    with jax.sharding.use_abstract_mesh(mesh.abstract_mesh):
        compiled = fn.trace(*placed).lower().compile()
    return compiled, (time.perf_counter() - started) * 1e3


def compile_for(
    build: Builder,
    generation: str,
    *,
    repeats: int = 1,
    repeat_below_s: float = float("inf"),
    keep_compiled: bool = False,
) -> CompileResult:
    """Compile ``build()`` for ``generation``'s topology (on one of its devices).

    The first compile always runs; ``repeats - 1`` more follow only when it
    took under ``repeat_below_s``. A compile error is returned in ``error``
    (never raised). ``schedules`` holds the Mosaic kernels' final bundles of
    the first compile (empty when libtpu's dump is off).
    """
    mesh = topology.mesh(generation, 1)
    dump_dir = _dump_dir()
    before = {p.name for p in dump_dir.glob("*")} if dump_dir else set()
    result = CompileResult(compile_ms=[])
    try:
        compiled, ms = lower_compile(build, mesh)
    except Exception as err:  # noqa: BLE001 - every compile error is a result of the study
        result.error = short_error(err)
        result.refused = isinstance(err, NotImplementedError)
        _clean(dump_dir, before)
        return result
    result.compile_ms.append(ms)
    result.code_bytes = int(compiled.memory_analysis().generated_code_size_in_bytes)
    result.cost = cost_of(compiled)
    if dump_dir:
        files = bundles.new_files(dump_dir, before)
        result.schedules = [bundles.read(p) for p in bundles.kernel_files(files)]
        _clean(dump_dir, before)
    if keep_compiled:
        result.compiled = compiled
    if ms < repeat_below_s * 1e3:
        for _ in range(repeats - 1):
            result.compile_ms.append(lower_compile(build, mesh)[1])
            _clean(dump_dir, before)
    return result


def _dump_dir() -> Path | None:
    config = topology.config()
    return config.dump_dir if config else None


def _clean(dump_dir: Path | None, before: set[str]) -> None:
    """Remove this compile's dump files (they are parsed at once; a sweep writes thousands)."""
    if dump_dir is None:
        return
    for path in dump_dir.glob("*"):
        if path.name not in before and path.is_file():
            path.unlink(missing_ok=True)
