"""The jax#20909 loop study: fori_loop vs a Python loop inside (and outside) Pallas kernels.

One module per concern, imported by name (``from jaxperf.loops import sweep``):

- :mod:`.vocab`: the one vocabulary every loop study uses (kernels, loop forms, variant
  names and order, the reporter's table, facets); imports no JAX.
- :mod:`.forms`: the loop forms (the hand-unrolled one is the public fix
  :func:`jaxperf.fixes.unroll.hand_unrolled_fori`, ``jaxperf.hand_unrolled_fori``).
- :mod:`.kernels`, :mod:`.inputs`, :mod:`.reference`: the kernels as ``pallas_call`` and
  plain jit, their inputs, and their float64 answers.
- :mod:`.settings`: notebook 02's typed settings and quick preset.
- :mod:`.lowering`: which forms lower on Triton / Mosaic GPU / Mosaic TPU, without hardware.
- :mod:`.sweep`, :mod:`.harness`: the interleaved timing sweep; the reporter's own harness.
- :mod:`.analysis`, :mod:`.roofline`, :mod:`.mechanism`: medians, ratios and goals; bytes
  over measured bandwidth; XLA:CPU's optimized HLO read for the cause.
- :mod:`.report`, :mod:`.figures`: summary.json / summary.md, and the figures.
"""
