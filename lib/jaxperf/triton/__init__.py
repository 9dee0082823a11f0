"""The Triton compile study (notebook 04): jax#20909's kernels compiled to SASS on a CPU.

Nothing here runs a kernel. What the compiler does (capture, ttir -> cubin,
SASS, the static estimate) is :mod:`jaxperf.compilers.triton`; this package is
the study on top of it, one module per concern:

- :mod:`.sweep`: every (kernel, loop form, unroll, T), one tidy row per compile;
- :mod:`.analysis`: medians, growth with T, the compile-time verdict, stage and code tables;
- :mod:`.mechanism`: where the reduction and the carry's work sit, per IR level and form;
- :mod:`.report`, :mod:`.figures`, :mod:`.settings`: the notebook's summary, figures and parameters.

Import them as submodules (``from jaxperf.triton import sweep``).
"""
