"""The NNX study (notebook 11): Flax NNX's ``nnx.jit`` pays equinox#192's per-call graph walk.

- :mod:`.models`: an MLP of ``nnx.Linear`` layers, its ``nnx.Optimizer``, a no-op and a train step;
- :mod:`.cost`: the study's cells, each a :func:`jaxperf.diagnose` of an ``nnx.jit`` step;
- :mod:`.stages`: where one ``nnx.jit`` call spends its time, and the accounting of the gap;
- :mod:`.graph_overhead`: Flax's own ``benchmarks/nnx_graph_overhead.py`` here, beside its
  published numbers; :mod:`.flax_sdist`, :mod:`.flax_plugin`: Flax's tests with the drop-in;
- :mod:`.report`: summary.json and summary.md (its prose in ``templates/summary.md``);
- :mod:`.settings`: notebook 11's parameters.
"""
