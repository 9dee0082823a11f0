"""TPU compile study: both jax#20909 and equinox#192 compiled for TPU v3/v4/v5e/v6e on a CPU with libtpu.

One module per concern: :mod:`.topology` (generations, libtpu set-up),
:mod:`.compile` (timed AOT compiles), :mod:`.bundles` (the final VLIW
schedule), :mod:`.estimate` (static cycles and clocks), :mod:`.sweep`,
:mod:`.dispatch_step` (the equinox#192 step on a v3-8), :mod:`.report`,
:mod:`.figures`, :mod:`.settings`. Nothing here executes on a TPU.
"""

from .settings import TpuSettings
