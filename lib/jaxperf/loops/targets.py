"""The compilers the engine reads a kernel's loop work from, without their hardware: each *target*
(:data:`TARGETS`) compiles one (form, T) on this CPU and reads the work per program in its own unit.
:func:`present` says which compile here; a point that does not lower or compile is a result with
its error, never raised."""

from __future__ import annotations

import re
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

from ..compilers.lowering import error_text, export_variant, exported_compiler, refused
from .factory import Kernel, traced

#: target -> (compiler, what it compiles for, the unit of its work)
TARGETS = {
    "triton sm_86": ("triton", "sm_86", "SASS instructions per warp"),
    "triton sm_90": ("triton", "sm_90", "SASS instructions per warp"),
    "mosaic_gpu sm_90a": ("mosaic_gpu", "sm_90a", "SASS instructions per warp"),
    "mosaic_tpu v5e": ("mosaic_tpu", "v5e", "VLIW bundles (cycles)"),
}
OK, NO_LOWER, FAILED, NOT_PRESENT = "ok", "does not lower", "failed", "not present here"
NOT_REACHED, EXCEEDS = "not reached", "exceeds "  # past the kernel's time budget; a compiler's limit
LIMITS = (  # a compiler's own words for a resource it ran out of (Triton, ptxas, Mosaic TPU, Mosaic GPU)
    r"out of resource: (?P<what>[\w ]+), Required: (?P<need>\d+), Hardware limit: (?P<limit>\d+)",
    r"exceeds available (?P<what>shared memory): smem_bytes=(?P<need>\d+) > max_smem_bytes=(?P<limit>\d+)",
    r"uses too much (?P<what>shared data) \((?P<need>\w+) bytes, (?P<limit>\w+) max",
    r"Ran out of memory in memory space (?P<what>\w+)\. Used (?P<need>\S+) of (?P<limit>\S+)",
    r"Scoped allocation with size (?P<need>\S+) and limit (?P<limit>\S+) exceeded scoped (?P<what>vmem)",
    r"required for [^(]*\((?P<need>[^)]+)\) exceeds available (?P<what>HBM) \((?P<limit>[^)]+)\)",
)
NOT_FOR_MOSAIC_GPU = "not written for Mosaic GPU (the factory takes no compiler= keyword)"


def present() -> dict[str, str]:
    """Every target and "" where it compiles here, else the reason it does not."""
    from ..compilers.mosaic_gpu import toolchain as mgpu
    from ..compilers.mosaic_tpu import topology
    from ..compilers.triton import toolchain as triton

    found: dict[str, Any] = {"triton": triton.status(), "mosaic_gpu": mgpu.status()}
    out = {t: "" if found[c].available else found[c].reason for t, (c, _, _) in TARGETS.items() if c in found}
    tpu = topology.status()
    late = "not measured: libtpu started before its dump folder was set (it reads its flags once)"
    out["mosaic_tpu v5e"] = late if tpu.available and topology.prepare_dump().dump_dir is None else tpu.reason
    return out


def lowers(kernel: Kernel, form: str, T: int, compiler: str) -> dict[str, Any]:
    """Export (form, T) for ``compiler``'s platform, no compile: status ok or the error."""
    try:
        fn, args = kernel.build(form, T, compiler=compiler)
        got = exported_compiler(export_variant(fn, args, compiler).mlir_module())
    except Exception as err:  # noqa: BLE001 - the error is the result; whose lowering raised it: whose kernel
        frames = traceback.extract_tb(err.__traceback__)
        got = next((c for c in WHY if any(f"pallas/{c}/" in f.filename for f in frames)), compiler)
        if got == compiler:
            return dict(status=NO_LOWER, error=f"{type(err).__name__}: {error_text(err)}")
    if got is not None and got != compiler:  # a plain pallas_call on CUDA is a Triton kernel
        return dict(status=NOT_PRESENT, error=f"lowers as a {got} kernel, not {compiler} ({WHY[got]})")
    return dict(status=OK, error="")


WHY = {"triton": "a pallas_call without plgpu.CompilerParams() lowers through Triton on CUDA"}
WHY |= {c: f"the factory built a {c} kernel" for c in ("mosaic_gpu", "mosaic_tpu")}


def failure(compiler: str, err: BaseException | str) -> dict[str, Any]:
    """A point that did not compile: "exceeds <compiler>'s <resource> limit" with the compiler's numbers
    when its message says so, else "does not lower" (the compiler refused it) or "failed"."""
    text = err if isinstance(err, str) else f"{type(err).__name__}: {error_text(err)}"
    for m in filter(None, (re.search(p, text) for p in LIMITS)):
        limit = f"{compiler}'s {m['what']} limit (needs {m['need']}, limit {m['limit']})"
        return dict(status=EXCEEDS + limit, error=text)
    return dict(status=NO_LOWER if not isinstance(err, str) and refused(err) else FAILED, error=text)


def compile_point(kernel: Kernel, form: str, T: int, target: str) -> dict[str, Any]:
    """Compile (form, T) for a Triton or Mosaic TPU ``target``: a row as :func:`_counted`'s, or why not."""
    compiler, arch, _ = TARGETS[target]
    try:
        fn, args = kernel.build(form, T, compiler=compiler)
        steps, programs = traced(fn, args)
        row = _triton(fn, args, arch) if compiler == "triton" else _tpu(kernel, form, T, arch, programs)
    except Exception as err:  # noqa: BLE001 - a point that fails is a result
        return failure(compiler, err)
    return row | dict(steps=steps, programs=programs if row.get("programs") is None else row["programs"])


def _triton(fn: Any, args: tuple, arch: str) -> dict[str, Any]:
    from ..compilers.triton.capture import capture
    from ..compilers.triton.compile import compile_ttir
    from ..compilers.triton.sass import dynamic_counts

    got = capture(fn, args, target=arch)
    result = compile_ttir(got.ttir, target=arch, num_warps=got.num_warps, num_stages=got.num_stages)
    return _counted(got.export_ms + result.total_ms, dynamic_counts(result.sass), programs=got.programs)


def _counted(compile_ms: float, counts: Any, **more: Any) -> dict[str, Any]:
    """A compiled point's row from its SASS counts (None: no dump to count)."""
    return dict(
        status=OK,
        error="",
        compile_ms=compile_ms,
        work_per_program=None if counts is None else counts.per_program,
        loops_in_code=None if counts is None else counts.loops,
        **more,  # before classes: the points table's column order, as before
        classes=None if counts is None else counts.by_class,
    )


def _tpu(kernel: Kernel, form: str, T: int, generation: str, programs: int | None) -> dict[str, Any]:
    from ..compilers.mosaic_tpu import compile as tpu_compile
    from ..compilers.mosaic_tpu import estimate

    result = tpu_compile.compile_for(lambda: kernel.build(form, T, compiler="mosaic_tpu"), generation)
    if not result.ok:
        return failure("mosaic_tpu", str(result.error)) | (dict(status=NO_LOWER) if result.refused else {})
    work, slots = None, None
    if result.schedules and programs:
        try:
            work = estimate.static_cycles(result.schedules[0]) / programs
            slots = {k: v / programs for k, v in estimate.slot_counts(result.schedules[0]).items()}
        except ValueError:  # a loop without a constant trip count: no static count
            work = None
    loops = len(result.schedules[0].loops) if result.schedules else None
    row = dict(status=OK, error="", compile_ms=result.compile_ms, work_per_program=work)
    return row | dict(loops_in_code=loops, classes=slots)


def mosaic_gpu_points(
    kernel: Kernel, points: list[tuple[str, int]], *, budget_s: float = 300.0
) -> list[dict[str, Any]]:
    """Compile every (form, T) for sm_90a in Mosaic GPU's environment (one worker for all), rows as
    :func:`compile_point`'s; a factory without a ``compiler`` keyword is not written for Mosaic GPU."""
    from ..compilers.mosaic_gpu import compile as mgpu

    if not kernel.per_compiler:
        return [dict(status=NOT_PRESENT, error=NOT_FOR_MOSAIC_GPU) for _ in points]
    shapes: list[tuple[int | None, int | None] | Exception] = []
    for form, T in points:
        try:  # the loop steps of the factory's default build: Mosaic GPU's plgpu.kernel traces its body twice
            kernel.build(form, T, compiler="mosaic_gpu")
            shapes.append(traced(*kernel.build(form, T)))
        except Exception as err:  # noqa: BLE001 - recorded below as the point's error
            shapes.append(err)
    request = [dict(factory=kernel.path, form=form, T=T) for form, T in points]
    out_dir = Path(tempfile.mkdtemp(prefix="jaxperf-engine-mgpu-"))
    rows = mgpu.compile_points(request, out_dir, budget_s=budget_s, extra_paths=_module_root(kernel))
    out: list[dict[str, Any]] = []
    for row, shape in zip(rows, shapes, strict=True):
        if isinstance(shape, Exception):
            row, shape = dict(status=FAILED, error=shape), (None, None)  # failure() words it
        if row["status"] != OK:  # a failure read for a compiler's limit; the worker's other labels kept
            why = failure("mosaic_gpu", row.get("error", ""))
            out.append(why if row["status"] == FAILED else dict(why, status=row["status"]))
            continue
        texts = mgpu.read_dump(out_dir, row)
        counts = mgpu.sass.dynamic_counts(texts["sass"]) if texts else None
        ms = sum(row["lower_ms"]) / len(row["lower_ms"]) + sum(row["compile_ms"]) / len(row["compile_ms"])
        out.append(_counted(ms, counts, steps=shape[0], programs=shape[1]))
    return out


def _module_root(kernel: Kernel) -> tuple[str, ...]:
    """The folder the factory's top-level package is imported from (for the worker's path)."""
    top = kernel.path.split(":")[0].split(".")[0]
    module = sys.modules.get(top)
    where = getattr(module, "__file__", None)
    if not where:
        return ()
    path = Path(where).resolve().parent
    return (str(path.parent if path.name == top else path),)
