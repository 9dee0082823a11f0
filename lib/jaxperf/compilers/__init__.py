"""What each Pallas compiler does, read without its hardware: lower, compile, count the work of
a loop step, for ``python -m jaxperf loops`` (the jax#20909 study and the GPU run go through it).

- :mod:`.cuda`: the NVIDIA targets and the export for CUDA without a GPU;
- :mod:`.lowering`: each Pallas compiler's export, and a lowering error as one line;
- :mod:`.triton`, :mod:`.mosaic_gpu`, :mod:`.mosaic_tpu`: compile and read each one's output.
"""
