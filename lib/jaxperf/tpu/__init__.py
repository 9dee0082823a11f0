"""TPU compile study: both jax#20909 and equinox#192 compiled for TPU v3/v4/v5e/v6e on a CPU with libtpu.

What the compiler does (generations and libtpu set-up, timed AOT compiles, the
final VLIW schedule, static cycles) is :mod:`jaxperf.compilers.mosaic_tpu`;
this package is the study on top of it: :mod:`.sweep`, :mod:`.dispatch_step`
(the equinox#192 step on a v3-8), :mod:`.report`, :mod:`.figures`,
:mod:`.settings`. Nothing here executes on a TPU.
"""

from .settings import TpuSettings
