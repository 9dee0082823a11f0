"""jax-ml/jax#20909 as every study of it spells it: the vocabulary, the loop forms, the kernels,
their inputs and their float64 answers. Below the studies (loops, triton, tpu, gpu) and the
compilers, which all import it; it imports only the shared harness and :mod:`jaxperf.fixes`.

- :mod:`.vocab`: kernels, loop forms, variant names and order, the reporter's table, facets;
  imports no JAX.
- :mod:`.forms`: the loop forms (the hand-unrolled one is the public fix
  :func:`jaxperf.fixes.hand_unrolled_fori`, ``jaxperf.hand_unrolled_fori``).
- :mod:`.kernels`, :mod:`.inputs`, :mod:`.reference`: the kernels as ``pallas_call`` and
  plain jit, their inputs, and their float64 answers.
- :mod:`.forms` also holds ``jaxperf.kernel_loop``, a kernel's loop written once in any form;
  :mod:`.factory` loads and checks a reader's kernel factory, :mod:`.factories` are the
  study's kernels as such factories (the loop study's engine runs both the same way).
- :mod:`.compile_facts`: compile growth against the reporter's, over the same T range only.
"""
