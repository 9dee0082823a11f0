"""GPU compile time and machine code without a GPU: Pallas -> Triton -> SASS on a CPU.

Three steps, each usable alone:

- :func:`capture` exports a Pallas kernel for CUDA on a CPU-only machine (an
  abstract NVIDIA device stands in for the hardware) and keeps the Triton
  module that Pallas' Triton lowering produced, as text ``.ttir``, with the
  launch settings (``num_warps``, ``num_stages``, grid) from the custom call.
- :func:`compile_ttir` runs that module through every stage a normal Triton
  compile runs (the ``make_ttir`` passes, then ttgir, llir, PTX and cubin)
  for a named target, timing each stage.
- :func:`sass_stats` and :func:`ptx_stats` read the machine code: SASS
  instruction count, registers, spills and whether a backward branch (a loop)
  survives; PTX instruction count.

The ``triton`` package is an optional extra (``pip install -e '.[triton]'``,
about 1 GB): :func:`status` says whether it is usable and why not, and every
entry point raises :class:`TritonUnavailableError` (with that reason) instead
of an ImportError, so a study can record "not measured" and carry on.

Nothing here runs a kernel: the numbers are compile time and code size for
the target GPU, measured on the CPU of this machine.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import io
import re
import subprocess
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import check_choice, check_int

# Target name -> (compute capability, a device kind JAX's Pallas lowering maps
# to that capability). sm_86 is the seed's RTX A6000 generation (JAX knows the
# A10, same sm_86).
TARGETS: dict[str, tuple[int, str]] = {
    "sm_90": (90, "NVIDIA H100 80GB HBM3"),
    "sm_86": (86, "NVIDIA A10"),
    "sm_80": (80, "NVIDIA A100-SXM4-80GB"),
}
DEFAULT_TARGET = "sm_90"
# The stages of triton.compile for a Triton-language kernel, in order.
STAGES = ("ttir", "ttgir", "llir", "ptx", "cubin")
TRITON_CUSTOM_CALL = "__gpu$xla.gpu.triton"
INSTALL_HINT = "pip install -e '.[triton]' (or JAXPERF_EXTRAS=triton bash tools/setup_env.sh)"
NOT_INSTALLED = "not measured: triton extra not installed"


class TritonUnavailableError(RuntimeError):
    """The optional ``triton`` package (or its ptxas/cuobjdump) is not usable here."""


class DoesNotLower(NotImplementedError):
    """Pallas' Triton lowering rejected the kernel (e.g. ``fori_loop(unroll>1)``).

    ``where`` names the lowering function that raised, because JAX raises a
    bare ``NotImplementedError`` for some of these.
    """

    def __init__(self, message: str, where: str = "") -> None:
        super().__init__(message)
        self.where = where


# --------------------------------------------------------------------------
# Is triton here?


@dataclass(frozen=True)
class TritonStatus:
    available: bool
    version: str | None
    reason: str  # why not, or "" when available
    ptxas: dict[str, str] = field(default_factory=dict)  # target -> ptxas path
    cuobjdump: str | None = None

    def describe(self) -> str:
        if not self.available:
            return self.reason
        return f"triton {self.version} (ptxas: {', '.join(sorted(set(self.ptxas.values())))}; cuobjdump: {self.cuobjdump})"


def _import_triton() -> Any:
    """Import triton and the pieces of it this module uses."""
    triton = importlib.import_module("triton")
    importlib.import_module("triton._C.libtriton")
    importlib.import_module("triton.backends.compiler")
    importlib.import_module("triton.compiler.compiler")
    return triton


def status() -> TritonStatus:
    """Whether the triton extra is usable, never raising.

    Not cached, so a test can simulate absence by hiding the module.
    """
    try:
        triton = _import_triton()
    except ImportError as err:
        return TritonStatus(False, None, f"{NOT_INSTALLED} ({err}); install with {INSTALL_HINT}")
    except Exception as err:  # a broken install is as absent as a missing one
        return TritonStatus(
            False, None, f"not measured: triton failed to import ({type(err).__name__}: {err})"
        )
    try:
        from triton.backends.nvidia.compiler import get_ptxas
        from triton.knobs import nvidia

        ptxas = {name: get_ptxas(cap).path for name, (cap, _) in TARGETS.items()}
        cuobjdump = nvidia.cuobjdump.path
    except Exception as err:
        return TritonStatus(
            False,
            triton.__version__,
            f"not measured: triton {triton.__version__} has no usable ptxas/cuobjdump ({err})",
        )
    missing = [p for p in [*ptxas.values(), cuobjdump] if not p or not Path(p).exists()]
    if missing:
        return TritonStatus(
            False, triton.__version__, f"not measured: triton {triton.__version__} lacks {missing}"
        )
    return TritonStatus(True, triton.__version__, "", ptxas, cuobjdump)


def require() -> TritonStatus:
    """The status, or TritonUnavailableError carrying the reason."""
    st = status()
    if not st.available:
        raise TritonUnavailableError(st.reason)
    return st


def check_target(target: str) -> int:
    """The compute capability for ``target``; ValueError naming what is allowed."""
    check_choice("target", target, TARGETS)
    return TARGETS[target][0]


# --------------------------------------------------------------------------
# Capture: the Triton module Pallas produces


@dataclass(frozen=True)
class CapturedModule:
    ttir: str  # the Triton module as text (MLIR assembly)
    name: str  # kernel name in the custom call
    num_warps: int
    num_stages: int
    grid: tuple[int, int, int]
    target: str
    export_ms: float  # jax.export end to end: trace, Pallas->Triton, StableHLO
    triton_lowering_ms: float  # the Pallas->Triton module part of it

    @property
    def ttir_lines(self) -> int:
        return self.ttir.count("\n") + 1

    def write(self, path: str | Path) -> Path:
        path = Path(path).with_suffix(".ttir")
        path.write_text(self.ttir)
        return path


@contextlib.contextmanager
def _hook_triton_lowering(on_module: Callable[[Any, float], None]) -> Iterator[None]:
    """Call ``on_module(result, seconds)`` for each module Pallas' Triton lowering builds.

    No public API returns the module (the custom call carries it as MLIR
    bytecode only), so wrap the lowering function the registration calls.
    Shared with :mod:`jaxperf.lowering`; needs JAX only, not triton.
    """
    from jax._src.pallas.triton import lowering

    original = lowering.lower_jaxpr_to_triton_module

    def recording(*args: Any, **kwargs: Any):
        start = time.perf_counter()
        result = original(*args, **kwargs)
        on_module(result, time.perf_counter() - start)
        return result

    lowering.lower_jaxpr_to_triton_module = recording
    try:
        yield
    finally:
        lowering.lower_jaxpr_to_triton_module = original


@contextlib.contextmanager
def _cuda_export(
    device_kind: str, custom_calls: Sequence[str] = (TRITON_CUSTOM_CALL,)
) -> Iterator[Callable[..., Any]]:
    """Inside an abstract one-device mesh of ``device_kind`` (no GPU needed), yield
    ``jax.export.export`` bound to CUDA with ``custom_calls`` allowed. The caller
    calls it, so the exported module's source locations stay the caller's."""
    import jax
    from jax.sharding import AbstractDevice, AbstractMesh

    mesh = AbstractMesh(
        (1,), ("x",), abstract_device=AbstractDevice(device_kind=device_kind, num_cores=None, platform="cuda")
    )
    checks = [jax.export.DisabledSafetyCheck.custom_call(name) for name in custom_calls]
    with jax.sharding.use_abstract_mesh(mesh):
        yield functools.partial(jax.export.export, platforms=["cuda"], disabled_checks=checks)


def _raise_frame(err: BaseException) -> traceback.FrameSummary | None:
    """The frame where ``err`` was raised (for JAX's bare NotImplementedErrors)."""
    frames = traceback.extract_tb(err.__traceback__)
    return frames[-1] if frames else None


def capture(
    fn: Callable[..., Any], args: Sequence[Any], *, target: str = DEFAULT_TARGET, clear_caches: bool = True
) -> CapturedModule:
    """Export ``fn(*args)`` (which holds one Triton ``pallas_call``) for CUDA and
    return the Triton module Pallas built for it.

    Works without a GPU: an abstract NVIDIA device of ``target``'s generation
    stands in. ``args`` may be arrays or ``jax.ShapeDtypeStruct``. JAX's
    caches are cleared first (``clear_caches``) so that tracing and lowering
    really run and are timed. Raises :class:`DoesNotLower` when the lowering
    rejects the kernel with NotImplementedError, ValueError for a bad target.
    """
    import jax

    check_target(target)
    specs = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in args]
    if clear_caches:
        jax.clear_caches()
    sink: list[tuple[str, float]] = []

    def record(result: Any, seconds: float) -> None:
        sink.append((result.module.operation.get_asm(enable_debug_info=False), seconds))

    start = time.perf_counter()
    try:
        with (
            _hook_triton_lowering(record),
            _cuda_export(TARGETS[target][1]) as export,
            warnings.catch_warnings(),
        ):
            # "The Pallas Triton backend is deprecated": known, said once in the notebook.
            warnings.filterwarnings("ignore", message=".*Pallas Triton backend is deprecated.*")
            exported = export(jax.jit(fn))(*specs)
    except NotImplementedError as err:
        frame = _raise_frame(err)
        where = f"{Path(frame.filename).name}:{frame.name}" if frame else ""
        raise DoesNotLower(
            f"Pallas' Triton lowering raised NotImplementedError({str(err)!r}) in {where}", where
        ) from err
    export_ms = (time.perf_counter() - start) * 1e3
    if len(sink) != 1:
        raise ValueError(
            f"fn={fn!r} is not allowed: expected exactly one Triton pallas_call, found {len(sink)}."
        )
    text = exported.mlir_module()
    config = dict(re.findall(r"\b(grid_[xyz]|num_warps|num_stages) = (\d+) : i32", text))
    name = re.search(r'\bname = "([^"]+)"', text)
    ttir, lowering_s = sink[0]
    return CapturedModule(
        ttir=ttir,
        name=name.group(1) if name else "kernel",
        num_warps=int(config.get("num_warps", 4)),
        num_stages=int(config.get("num_stages", 3)),
        grid=tuple(int(config.get(k, 1)) for k in ("grid_x", "grid_y", "grid_z")),
        target=target,
        export_ms=export_ms,
        triton_lowering_ms=lowering_s * 1e3,
    )


# --------------------------------------------------------------------------
# Compile: ttir -> ttgir -> llir -> ptx -> cubin


@dataclass(frozen=True)
class SassStats:
    instructions: int  # SASS instructions, NOP padding excluded
    registers: int
    spill_stores_bytes: int
    spill_loads_bytes: int
    local_memory_instructions: int  # STL/LDL: where spills show up in the code
    backward_branches: int  # branches to a lower address (the trailing BRA-to-self excluded)
    shared_bytes: int | None = None

    @property
    def loop_present(self) -> bool:
        return self.backward_branches > 0


@dataclass(frozen=True)
class CompileResult:
    target: str
    stage_ms: dict[str, float]  # per stage in STAGES, wall clock
    parse_ms: float  # reading the .ttir text into MLIR (not a compile stage)
    ptx: str
    cubin: bytes
    sass: str  # cuobjdump -sass output
    ptxas_log: str
    sass_stats: SassStats
    ptx_instructions: int
    options: dict[str, Any]

    @property
    def total_ms(self) -> float:
        return sum(self.stage_ms.values())


def compile_ttir(
    ttir: str, *, target: str = DEFAULT_TARGET, num_warps: int = 4, num_stages: int = 3
) -> CompileResult:
    """Compile a Triton module (text .ttir) for ``target`` through every stage.

    Mirrors ``triton.compile`` for a Python-language kernel: unlike
    ``triton.compile`` on an IR file (which skips them), the ``make_ttir``
    passes run, then ttgir, llir, PTX and cubin (ptxas), each timed; no
    compile cache is used, so each call compiles. Raises ValueError for a bad
    target or option, TritonUnavailableError without the triton extra.
    """
    capability = check_target(target)
    check_int("num_warps", num_warps, minimum=1)
    check_int("num_stages", num_stages, minimum=1)
    require()
    from triton import knobs
    from triton._C.libtriton import ir
    from triton.backends.compiler import GPUTarget, Language
    from triton.compiler.compiler import make_backend

    gpu = GPUTarget("cuda", capability, 32)
    backend = make_backend(gpu)
    options = backend.parse_options(
        {"num_warps": num_warps, "num_stages": num_stages, "num_ctas": 1, "enable_fp_fusion": True}
    )
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="jaxperf-ttir-") as tmp:
        path = Path(tmp) / "kernel.ttir"
        path.write_text(ttir)
        module = ir.parse_mlir_module(str(path), context)
    module.context = context
    parse_ms = (time.perf_counter() - start) * 1e3

    stages: dict[str, Callable[[Any, dict], Any]] = {}
    backend.add_stages(stages, options, Language.TRITON)
    if tuple(stages) != STAGES:
        raise TritonUnavailableError(f"triton's stages {tuple(stages)} differ from the expected {STAGES}")
    metadata: dict[str, Any] = {"hash": "jaxperf", "target": gpu, **options.__dict__}
    stage_ms: dict[str, float] = {}
    log = io.StringIO()
    outputs: dict[str, Any] = {}
    saved_dump = knobs.nvidia.dump_ptxas_log
    try:
        knobs.nvidia.dump_ptxas_log = True  # make_cubin prints ptxas -v (registers, spills)
        for stage, run in stages.items():
            redirect = contextlib.redirect_stdout(log) if stage == "cubin" else contextlib.nullcontext()
            start = time.perf_counter()
            with redirect:
                module = run(module, metadata)
            stage_ms[stage] = (time.perf_counter() - start) * 1e3
            outputs[stage] = module
    finally:
        knobs.nvidia.dump_ptxas_log = saved_dump
    cubin: bytes = outputs["cubin"]
    ptx: str = outputs["ptx"]
    sass = disassemble(cubin)
    stats = sass_stats(sass, log.getvalue(), shared_bytes=metadata.get("shared"))
    return CompileResult(
        target=target,
        stage_ms=stage_ms,
        parse_ms=parse_ms,
        ptx=ptx,
        cubin=cubin,
        sass=sass,
        ptxas_log=log.getvalue(),
        sass_stats=stats,
        ptx_instructions=ptx_stats(ptx)["instructions"],
        options={
            "num_warps": num_warps,
            "num_stages": num_stages,
            "num_ctas": 1,
            "enable_fp_fusion": True,
            "arch": options.arch,
            "ptx_version": _ptx_version(ptx),
        },
    )


def _ptx_version(ptx: str) -> str | None:
    found = re.search(r"^\.version (\d+\.\d+)", ptx, re.MULTILINE)
    return found.group(1) if found else None


# --------------------------------------------------------------------------
# Reading machine code


def disassemble(cubin: bytes) -> str:
    """``cuobjdump -sass`` of a cubin, with the cuobjdump shipped in the triton wheel."""
    st = require()
    with tempfile.NamedTemporaryFile(suffix=".cubin") as handle:
        handle.write(cubin)
        handle.flush()
        proc = subprocess.run(
            [st.cuobjdump, "-sass", handle.name], capture_output=True, text=True, timeout=300
        )
    if proc.returncode != 0:
        raise RuntimeError(f"cuobjdump -sass failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return proc.stdout


_SASS_LINE = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", re.MULTILINE)
_PREDICATE = re.compile(r"^@!?U?P[T0-9]+\s+")
_BRANCH_TARGET = re.compile(r"^(?:BRA|BRX|JMP|CALL\.REL(?:\.NOINC)?)\b[^0-9]*?(0x[0-9a-f]+)")


def sass_stats(sass: str, ptxas_log: str = "", *, shared_bytes: int | None = None) -> SassStats:
    """Counts from ``cuobjdump -sass`` text and the ``ptxas -v`` log.

    A loop survives in machine code when a branch jumps backwards; the
    ``BRA`` to itself that ends every kernel is not one.
    """
    instructions = local = backward = 0
    for match in _SASS_LINE.finditer(sass):
        address = int(match.group(1), 16)
        text = _PREDICATE.sub("", match.group(2))
        opcode = text.split(None, 1)[0] if text else ""
        if opcode == "NOP":
            continue
        instructions += 1
        if opcode.split(".")[0] in ("STL", "LDL"):
            local += 1
        branch = _BRANCH_TARGET.match(text)
        if branch and int(branch.group(1), 16) < address:
            backward += 1
    registers = re.search(r"Used (\d+) registers", ptxas_log)
    stores = re.search(r"(\d+) bytes spill stores", ptxas_log)
    loads = re.search(r"(\d+) bytes spill loads", ptxas_log)
    return SassStats(
        instructions=instructions,
        registers=int(registers.group(1)) if registers else -1,
        # ptxas 13 leaves the stack/spill line out when all of it is zero.
        spill_stores_bytes=int(stores.group(1)) if stores else 0,
        spill_loads_bytes=int(loads.group(1)) if loads else 0,
        local_memory_instructions=local,
        backward_branches=backward,
        shared_bytes=shared_bytes,
    )


def ptx_stats(ptx: str) -> dict[str, int]:
    """PTX instruction count: statements ending in ';' that are not directives."""
    count = 0
    for line in ptx.splitlines():
        line = line.split("//", 1)[0].strip()
        if not line.endswith(";") or line.startswith((".", "{", "}")):
            continue
        count += 1
    return {"instructions": count}


# --------------------------------------------------------------------------
# One measurement point


def measure(
    fn: Callable[..., Any], args: Sequence[Any], *, target: str = DEFAULT_TARGET, repeats: int = 1
) -> list[dict[str, Any]]:
    """Capture once per repeat and compile it: one flat row per repeat.

    Each row holds ``export_ms`` (JAX: trace + Pallas->Triton + StableHLO),
    ``triton_lowering_ms``, a ``<stage>_ms`` column per Triton stage,
    ``triton_ms`` (their sum: ttir passes to cubin), ``compile_ms``
    (export_ms + triton_ms, the closest analogue of the seed's compile
    column), and the code metrics. Raises DoesNotLower, TritonUnavailableError
    or ValueError like :func:`capture` and :func:`compile_ttir`.
    """
    check_int("repeats", repeats, minimum=1)
    check_target(target)
    require()
    rows = []
    for repeat in range(repeats):
        captured = capture(fn, args, target=target)
        result = compile_ttir(
            captured.ttir, target=target, num_warps=captured.num_warps, num_stages=captured.num_stages
        )
        stats = result.sass_stats
        rows.append(
            {
                "repeat": repeat,
                "target": target,
                "export_ms": captured.export_ms,
                "triton_lowering_ms": captured.triton_lowering_ms,
                "parse_ms": result.parse_ms,
                **{f"{stage}_ms": ms for stage, ms in result.stage_ms.items()},
                "triton_ms": result.total_ms,
                "compile_ms": captured.export_ms + result.total_ms,
                "ttir_lines": captured.ttir_lines,
                "ptx_instructions": result.ptx_instructions,
                "sass_instructions": stats.instructions,
                "registers": stats.registers,
                "spill_stores_bytes": stats.spill_stores_bytes,
                "spill_loads_bytes": stats.spill_loads_bytes,
                "local_memory_instructions": stats.local_memory_instructions,
                "backward_branches": stats.backward_branches,
                "loop_present": stats.loop_present,
                "shared_bytes": stats.shared_bytes,
                "num_warps": captured.num_warps,
                "num_stages": captured.num_stages,
                "ptx_version": result.options["ptx_version"],
            }
        )
    return rows


__all__ = [
    "TARGETS",
    "DEFAULT_TARGET",
    "STAGES",
    "NOT_INSTALLED",
    "TritonUnavailableError",
    "DoesNotLower",
    "TritonStatus",
    "status",
    "require",
    "check_target",
    "CapturedModule",
    "capture",
    "SassStats",
    "CompileResult",
    "compile_ttir",
    "disassemble",
    "sass_stats",
    "ptx_stats",
    "measure",
]
