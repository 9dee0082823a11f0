"""The Flax NNX study's building blocks: models and steps (:mod:`.models`), the ways to call a
step (:mod:`.variants`), where one ``nnx.jit`` call spends its time (:mod:`.stages`), Flax's own
``nnx.jit`` tests and ``benchmarks/nnx_graph_overhead.py`` from its sdist (:mod:`.flax_sdist`),
the interleaved probe (:mod:`.probe`) and the issue text for Flax (:mod:`.issue`).

The drop-in itself is the core's :func:`jaxperf.cached_nnx_jit` (``jaxperf.fixes.nnx``).
"""
