"""What each compiler does, read without its hardware: lower, compile, count the loop work
(``python -m jaxperf loops``, notebook 02 and the GPU run use the same code).

- :mod:`.xla`: the optimized HLO of a jitted program, read for its loops (the study's);
- :mod:`.cuda`: the NVIDIA targets and the export for CUDA without a GPU;
- :mod:`.lowering`: each Pallas compiler's export, and a lowering error as one line;
- :mod:`.triton`, :mod:`.mosaic_gpu`, :mod:`.mosaic_tpu`: compile and read each one's output.
"""
