"""The jax#20909 loop study: fori_loop vs a Python loop inside (and outside) Pallas kernels.

The kernels, loop forms, vocabulary and float64 answers every loop study shares are
:mod:`jaxperf.jax20909`; what each compiler does is :mod:`jaxperf.compilers`. One module
per concern, imported by name (``from jaxperf.loops import sweep``):

- :mod:`.settings`: notebook 02's typed settings and quick preset.
- :mod:`.sweep`, :mod:`.harness`: the interleaved timing sweep (XLA:CPU, the interpreter, a
  compiled kernel on a GPU/TPU); the reporter's own harness.
- :mod:`.targets`, :mod:`.engine`: the engine that asks whether a Pallas kernel
  pays for ``fori_loop`` (a factory loaded and checked by :mod:`jaxperf.loops.factory`; the compilers read without their
  hardware; every form checked against fori, lowered, compiled, its work per loop step read,
  timed where a device is); :mod:`.runs` runs it on the study's and the readers' kernels,
  :mod:`.report_kernel` tells one kernel's result, :mod:`.cli` is ``python -m jaxperf loops``;
  :mod:`.examples` holds two kernels written the way Pallas' docs write them (eleven more,
  with their plain-JAX references, are the tests' corpus: ``tests/corpus/kernels``).
- :mod:`.family`, :mod:`.advice`: which kernels pay, per compiler; what to write instead, only
  where the data shows it helps.
- :mod:`.analysis`, :mod:`.roofline`, :mod:`.mechanism`: medians, ratios and goals; bytes
  over measured bandwidth; XLA:CPU's optimized HLO read for the cause.
- :mod:`.answer`, :mod:`.report`, :mod:`.figures`: the five bullets and the issue text,
  summary.json / summary.md, and the figures; :mod:`.lowering`: the lowering matrix (not run
  by the notebook: the engine lowers each form).
"""
