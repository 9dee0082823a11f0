"""The jax#20909 study (notebook 02): the reporter's kernel and three more, each variant one
:class:`~.variant.KernelVariant`, their inputs and float64 answers, his harness, the sweeps and
the readings of XLA's and every Pallas compiler's output, run through the loops tool's engine
(:mod:`jaxperf.loops`) and the compilers (:mod:`jaxperf.compilers`).

:mod:`.vocab` and :mod:`.variant` import no JAX."""
