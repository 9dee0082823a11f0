"""Mosaic GPU (Pallas on Hopper and newer) without a GPU: lower, compile for sm_90a, read, count.

- :mod:`.lower`: export the jax#20909 port for CUDA on this CPU and keep Mosaic GPU's module;
- :mod:`.toolchain`: the compile environment (the CUDA plugin, in its own venv), the target,
  and the runtime check that a device can run Mosaic GPU at all;
- :mod:`.aot`: the worker that compiles inside that environment (XLA's deviceless topology:
  Mosaic GPU's passes, LLVM's NVPTX backend and ptxas, all on the CPU) and dumps the output;
- :mod:`.compile`: runs the worker from the project's venv and reads its rows and dumps;
- :mod:`.ir`, :mod:`.sass`: count each level (Mosaic's module, the LLVM dialect after its
  passes, PTX, SASS) inside and outside loops; the static SASS estimate.

The port itself is :mod:`jaxperf.jax20909.mosaic_gpu_kernel`; the study that uses all this
(notebook 09) is :mod:`jaxperf.mosaic_gpu`. Nothing here runs a kernel on a GPU.
"""
