"""Mosaic GPU (Pallas on Hopper and newer) without a GPU: compile for sm_90a, read the SASS, count.

- :mod:`.toolchain`: the compile environment (the CUDA plugin, in its own venv), the target,
  and the runtime check that a device can run Mosaic GPU at all;
- :mod:`.aot`: the worker that compiles inside that environment (XLA's deviceless topology:
  Mosaic GPU's passes, LLVM's NVPTX backend and ptxas, all on the CPU) and keeps the SASS;
- :mod:`.compile`: runs the worker from the project's venv and reads its rows and SASS;
- :mod:`.sass`: reads that SASS (loops, barrier waits) for the static instruction count.

The loop study's engine (:mod:`jaxperf.loops.targets`) is its user. Nothing here runs a kernel
on a GPU.
"""
