"""Pallas -> Triton -> SASS on a CPU: lower, compile, read the machine code, count loop work.

Nothing here runs a kernel: every number is compile time, code size or a
count read from the compiler's output, for a named NVIDIA target, on the CPU
of this machine. One module per concern:

- :mod:`.toolchain`: is the optional ``triton`` extra usable (targets: :mod:`jaxperf.compilers.cuda`);
- :mod:`.capture`: export a Pallas kernel for CUDA and keep its Triton module
  (:func:`.capture.capture`; the package exports no function of that name, so
  ``jaxperf.compilers.triton.capture`` is always the module);
- :mod:`.compile`: that module through ttir, ttgir, llir, PTX and cubin, each stage timed;
- :mod:`.sass`: read the machine code (instructions, loops and their trip counts, the mix, the
  dynamic instructions per program: a static estimate, not a measurement).

The compile study that uses them (notebook 04) is :mod:`jaxperf.triton`.
"""

from typing import TYPE_CHECKING

from ..._lazy import exports

if TYPE_CHECKING:
    from .capture import TRITON_CUSTOM_CALL, CapturedModule, DoesNotLower, cuda_export, raise_site
    from .compile import STAGES, CompileResult, compile_ttir
    from .sass import CATEGORIES, SassStats, disassemble, ptx_instructions, sass_stats
    from .toolchain import (
        DEFAULT_TARGET,
        NOT_INSTALLED,
        REPORTER_TARGET,
        TARGETS,
        TritonStatus,
        TritonUnavailableError,
        check_target,
        label,
        require,
        status,
    )

# Loaded on first use: importing this package (or its settings) imports no JAX.
__getattr__, __dir__ = exports(
    __name__,
    {
        "TRITON_CUSTOM_CALL": (".capture", "TRITON_CUSTOM_CALL"),
        "CapturedModule": (".capture", "CapturedModule"),
        "DoesNotLower": (".capture", "DoesNotLower"),
        "cuda_export": (".capture", "cuda_export"),
        "raise_site": (".capture", "raise_site"),
        "STAGES": (".compile", "STAGES"),
        "CompileResult": (".compile", "CompileResult"),
        "compile_ttir": (".compile", "compile_ttir"),
        "CATEGORIES": (".sass", "CATEGORIES"),
        "SassStats": (".sass", "SassStats"),
        "disassemble": (".sass", "disassemble"),
        "ptx_instructions": (".sass", "ptx_instructions"),
        "sass_stats": (".sass", "sass_stats"),
        "DEFAULT_TARGET": (".toolchain", "DEFAULT_TARGET"),
        "NOT_INSTALLED": (".toolchain", "NOT_INSTALLED"),
        "REPORTER_TARGET": (".toolchain", "REPORTER_TARGET"),
        "TARGETS": (".toolchain", "TARGETS"),
        "TritonStatus": (".toolchain", "TritonStatus"),
        "TritonUnavailableError": (".toolchain", "TritonUnavailableError"),
        "check_target": (".toolchain", "check_target"),
        "label": (".toolchain", "label"),
        "require": (".toolchain", "require"),
        "status": (".toolchain", "status"),
    },
)
