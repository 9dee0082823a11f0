"""The jax#20909 loop study: fori_loop vs a Python loop inside (and outside) Pallas kernels.

The kernels, loop forms, vocabulary and float64 answers every loop study shares are
:mod:`jaxperf.jax20909`; what each compiler does is :mod:`jaxperf.compilers`. One module
per concern, imported by name (``from jaxperf.loops import sweep``):

- :mod:`.settings`: notebook 02's typed settings and quick preset.
- :mod:`.lowering`: which forms lower on Triton / Mosaic GPU / Mosaic TPU, without hardware
  (each compiler's export: :mod:`jaxperf.compilers.lowering`).
- :mod:`.sweep`, :mod:`.harness`: the interleaved timing sweep; the reporter's own harness.
- :mod:`.analysis`, :mod:`.roofline`, :mod:`.mechanism`: medians, ratios and goals; bytes
  over measured bandwidth; XLA:CPU's optimized HLO read for the cause
  (the reader: :mod:`jaxperf.compilers.xla`).
- :mod:`.report`, :mod:`.figures`: summary.json / summary.md, and the figures.
"""
