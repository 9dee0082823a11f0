"""Compile a captured Triton module for an NVIDIA target on a CPU, ttir -> cubin, each stage timed.
Unlike ``triton.compile`` on an IR file, the ``make_ttir`` passes run too: this drives triton's own
stage functions (``make_backend(...).add_stages``), checked against :data:`STAGES`."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import check_int
from ..cuda import DEFAULT_TARGET, check_target
from .sass import disassemble
from .toolchain import TritonUnavailableError, require

# The stages of triton.compile for a Triton-language kernel, in order.
STAGES = ("ttir", "ttgir", "llir", "ptx", "cubin")
SHARED_LIMIT = {86: 101376, 90: 232448}  # bytes of opt-in shared memory per block, per capability


@dataclass(frozen=True)
class CompileResult:
    """One compile: per-stage wall time and the machine code."""

    stage_ms: dict[str, float]  # per stage in STAGES, wall clock
    sass: str  # cuobjdump -sass output

    @property
    def total_ms(self) -> float:
        return sum(self.stage_ms.values())


def compile_ttir(
    ttir: str, *, target: str = DEFAULT_TARGET, num_warps: int = 4, num_stages: int = 3
) -> CompileResult:
    """Compile a Triton module (text .ttir) for ``target`` through every stage, uncached; ValueError
    for a bad target or option, TritonUnavailableError without the triton extra."""
    capability = check_target(target)
    check_int("num_warps", num_warps, minimum=1)
    check_int("num_stages", num_stages, minimum=1)
    require()
    from triton._C.libtriton import ir
    from triton.backends.compiler import GPUTarget, Language
    from triton.compiler.compiler import make_backend
    from triton.runtime.errors import OutOfResources

    gpu = GPUTarget("cuda", capability, 32)
    backend = make_backend(gpu)
    options = backend.parse_options(
        {"num_warps": num_warps, "num_stages": num_stages, "num_ctas": 1, "enable_fp_fusion": True}
    )
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    with tempfile.TemporaryDirectory(prefix="jaxperf-ttir-") as tmp:
        path = Path(tmp) / "kernel.ttir"
        path.write_text(ttir)
        module = ir.parse_mlir_module(str(path), context)
    module.context = context

    stages: dict[str, Callable[[Any, dict], Any]] = {}
    backend.add_stages(stages, options, Language.TRITON)
    if tuple(stages) != STAGES:
        raise TritonUnavailableError(f"triton's stages {tuple(stages)} differ from the expected {STAGES}")
    metadata: dict[str, Any] = {"hash": "jaxperf", "target": gpu, **options.__dict__}
    stage_ms: dict[str, float] = {}
    for stage, run in stages.items():
        start = time.perf_counter()
        module = run(module, metadata)
        stage_ms[stage] = (time.perf_counter() - start) * 1e3
    if metadata.get("shared", 0) > SHARED_LIMIT[capability]:  # what the driver refuses at load
        raise OutOfResources(metadata["shared"], SHARED_LIMIT[capability], "shared memory")
    return CompileResult(stage_ms=stage_ms, sass=disassemble(module))
