"""jax-ml/jax#20909, the study (notebook 02): the vocabulary, the loop forms, the kernels, their
inputs and float64 answers, and the study's own steps, all run through the loops tool's engine
(:mod:`jaxperf.loops.engine`) and the compilers (:mod:`jaxperf.compilers`); :mod:`.vocab`
imports no JAX."""
