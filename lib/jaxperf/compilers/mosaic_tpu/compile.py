"""Compile a function for a TPU topology on this machine (every argument a ``ShapeDtypeStruct`` on
a ``Mesh`` of its devices), timed, with the kernel's final bundles where libtpu's dump is on."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..lowering import error_text, refused
from . import bundles, topology

Builder = Callable[[], tuple[Any, tuple]]  # a fresh jitted function and its input structs


@dataclasses.dataclass
class CompileResult:
    """What one compile gave: its time and the kernels' schedules, or the error."""

    compile_ms: float | None = None
    schedules: list[bundles.Schedule] = dataclasses.field(default_factory=list)
    error: str | None = None
    refused: bool = False  # the compiler does not support the kernel (:func:`..lowering.refused`)

    @property
    def ok(self) -> bool:
        return self.error is None


def lower_compile(build: Builder, mesh: Any) -> tuple[Any, float]:
    """One fresh build placed on ``mesh``, lowered and compiled, and its ms; inside ``mesh``'s
    abstract mesh, so a lowering rule that asks the device kind (integer ``//`` does) sees a TPU's."""
    import jax

    fn, args = build()
    placed = topology.placed(args, mesh)
    started = time.perf_counter()
    with jax.sharding.use_abstract_mesh(mesh.abstract_mesh):
        compiled = fn.trace(*placed).lower().compile()
    return compiled, (time.perf_counter() - started) * 1e3


def compile_for(build: Builder, generation: str) -> CompileResult:
    """Compile ``build()`` for ``generation``'s topology: the error in ``error`` (never raised), the
    Mosaic kernels' final bundles in ``schedules`` (empty when libtpu's dump is off)."""
    mesh = topology.mesh(generation)
    dump_dir: Path | None = getattr(topology.config(), "dump_dir", None)
    before = {p.name for p in dump_dir.glob("*")} if dump_dir else set()
    try:
        _, ms = lower_compile(build, mesh)
    except Exception as err:  # noqa: BLE001 - every compile error is a result
        _clean(dump_dir, before)
        # the whole message on one line: a resource limit's numbers may follow its first line
        text = " ".join(str(err).split()) or error_text(err)
        return CompileResult(error=f"{type(err).__name__}: {text}"[:1000], refused=refused(err))
    result = CompileResult(compile_ms=ms)
    if dump_dir:
        result.schedules = [bundles.read(p) for p in bundles.kernel_files(dump_dir, before)]
        _clean(dump_dir, before)
    return result


def _clean(dump_dir: Path | None, before: set[str]) -> None:
    """Remove this compile's dump files (they are parsed at once; a sweep writes thousands)."""
    if dump_dir is None:
        return
    for path in dump_dir.glob("*"):
        if path.name not in before and path.is_file():
            path.unlink(missing_ok=True)
