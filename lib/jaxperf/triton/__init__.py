"""GPU compile time and machine code without a GPU: Pallas -> Triton -> SASS on a CPU (jax#20909).

Nothing here runs a kernel: every number is compile time, code size or a
count read from the compiler's output, for a named NVIDIA target, on the CPU
of this machine. One module per concern:

- :mod:`.toolchain`: is the optional ``triton`` extra usable; the targets (sm_80/86/90);
- :mod:`.capture`: export a Pallas kernel for CUDA and keep its Triton module;
- :mod:`.compile`: that module through ttir, ttgir, llir, PTX and cubin, each stage timed;
- :mod:`.sass`: read the machine code (instructions, loops and their trip counts, the mix);
- :mod:`.sweep`: every (kernel, loop form, unroll, T), one tidy row per compile;
- :mod:`.analysis`: medians, growth with T, the compile-time verdict, stage and code tables;
- :mod:`.mechanism`: where the reduction and the carry's work sit, per IR level and form;
- :mod:`.estimate`: dynamic SASS instructions per kernel call (a static estimate, not a measurement);
- :mod:`.report`, :mod:`.figures`, :mod:`.settings`: the notebook's summary, figures and parameters.

The pieces that need no other study are re-exported here; import the rest as submodules
(``from jaxperf.triton import sweep``), since they use :mod:`jaxperf.loops`, which uses this package.
"""

from .capture import TRITON_CUSTOM_CALL, CapturedModule, DoesNotLower, capture, cuda_export, raise_site
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
