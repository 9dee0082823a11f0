"""What each compiler does, below the studies that use it: lower, compile where it can be done
without the hardware, read its output, count the loop work.

One module or small package per compiler, each importing only the shared harness and
:mod:`jaxperf.jax20909` (never a study), so that notebooks 02, 04, 05 and the GPU run use the
same code:

- :mod:`.xla`: the optimized HLO of a jitted program, read for its loops (notebook 02);
- :mod:`.cuda`: the NVIDIA targets and the export for CUDA without a GPU (Triton, Mosaic GPU);
- :mod:`.lowering`: each Pallas compiler's export and the capture of the kernel's own module
  (the lowering matrix of notebook 02);
- :mod:`.triton`: Pallas -> Triton -> SASS on a CPU (capture, compile, sass;
  notebook 04, the GPU run's host compile);
- :mod:`.mosaic_tpu`: Mosaic TPU through libtpu (topology, compile, bundles, estimate; notebook 05).
"""
