"""The jax#20909 loop study: fori_loop vs a Python loop inside (and outside) Pallas kernels.

One module per concern: :mod:`.vocab` (names shared by every loop study),
:mod:`.forms` (the loop forms, incl. ``hand_unrolled_fori``), :mod:`.kernels`
and :mod:`.reference` (the kernels and their float64 answers).
"""
