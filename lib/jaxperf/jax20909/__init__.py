"""jax-ml/jax#20909, the study (notebook 02): the vocabulary, the loop forms, the kernels, their
inputs and float64 answers, and the study's own steps, all run through the loops tool's engine
(:mod:`jaxperf.loops.engine`) and the compilers (:mod:`jaxperf.compilers`).

- :mod:`.vocab`: kernels, loop forms, variant names and order, the reporter's table; imports no JAX.
- :mod:`.kernels`, :mod:`.inputs`, :mod:`.reference`: the kernels as ``pallas_call`` and plain
  jit (their loops from :mod:`jaxperf.loops.forms`), their inputs and float64 answers;
  :mod:`.factories`: the study's kernels as the engine's factories.
- :mod:`.settings`: notebook 02's typed settings and quick preset.
- :mod:`.sweep`, :mod:`.runs`: the measuring steps (the timed sweep on XLA:CPU and the
  interpreter; the reporter's harness; the engine on the family, the readers' kernels and the
  compile sweep at his T), each returning tidy frames for ``study.measure``.
- :mod:`.family`, :mod:`.compile_facts`, :mod:`.roofline`: which kernels pay per compiler;
  compile growth against the reporter's over the same T range; bytes over measured bandwidth.
- :mod:`.report`, :mod:`.figures`, :mod:`.unroll_heatmap`: summary.json / summary.md and the figures.
"""
