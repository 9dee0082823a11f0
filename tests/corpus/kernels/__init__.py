"""Pallas kernels written like the Pallas docs write them, each with a factory
``make(form, T, *, interpret=False) -> (fn, args)`` for ``python -m jaxperf loops
tests.corpus.kernels.<module>:make`` (run from the repository root), and most with a
``make.reference`` in plain JAX that every form is checked against.

Row-wise kernels: a grid over row blocks of an ``[M, T]`` input, each program walking its rows
in ``LANES``-wide column blocks (``T / LANES`` loop steps). Verdicts known by construction are
in ``tests/test_loops_corpus.py``.
"""
