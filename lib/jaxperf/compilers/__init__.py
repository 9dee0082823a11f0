"""What each Pallas compiler does, read without its hardware: lower, compile, count the work of a
loop step, for ``python -m jaxperf loops``. Exporting is :mod:`.lowering`'s; :mod:`.cuda` names the
NVIDIA targets; :mod:`.triton`, :mod:`.mosaic_gpu` and :mod:`.mosaic_tpu` compile and read each one's output."""
