"""The Mosaic GPU study (notebook 09): jax#20909 on Pallas' Hopper backend, without a GPU.

Pallas' Triton backend is deprecated since JAX 0.11; the Pallas docs send GPU users to Mosaic
GPU, which supports Hopper and newer only. Here the reporter's kernel, written the way Mosaic
GPU needs it (:mod:`jaxperf.jax20909.mosaic_gpu_kernel`), is checked in Mosaic GPU's
interpreter, lowered in every loop form and unroll, compiled for sm_90a on this CPU and read
level by level. What the compiler does is :mod:`jaxperf.compilers.mosaic_gpu`; this package
is the study: :mod:`.settings`, :mod:`.sweep`, :mod:`.mechanism`, :mod:`.analysis`,
:mod:`.report`, :mod:`.figures`. Nothing here runs on a GPU.
"""

from .settings import MosaicGpuSettings
