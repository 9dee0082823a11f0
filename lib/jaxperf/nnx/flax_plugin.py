"""A pytest plugin (``-p jaxperf.nnx.flax_plugin``) that runs Flax's own tests with
``flax.nnx.jit`` replaced by :func:`jaxperf.cached_nnx_jit`, under the same name, before any
test runs (the tests call ``nnx.jit`` through the module). The drop-in keeps Flax's original
``jit`` as its fallback (:func:`jaxperf.fixes._nnx_graph.flax` loads it first)."""

from __future__ import annotations

from typing import Any


def pytest_configure(config: Any) -> None:
    from jaxperf import cached_nnx_jit
    from jaxperf.fixes import _nnx_graph

    flax_modules = _nnx_graph.flax()  # the original nnx.jit, kept before it is replaced
    nnx: Any = flax_modules.nnx
    nnx.jit = cached_nnx_jit
