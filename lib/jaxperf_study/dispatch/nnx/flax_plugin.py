"""A pytest plugin (``-p jaxperf_study.dispatch.nnx.flax_plugin``) that runs Flax's own tests with
``flax.nnx.jit`` replaced by :func:`jaxperf.cached_nnx_jit`, under the same name, before any
test runs (the tests call ``nnx.jit`` through the module). The drop-in keeps Flax's original
``jit`` as its fallback (:func:`jaxperf.fixes._nnx.flax` loads it first).

With ``JAXPERF_NNX_STATS`` set to a path, it writes there, as JSON, how the drop-in served the
run: wrappers made, calls it handled itself (hits and misses), calls handed to ``nnx.jit`` by
reason, and wrappers it refused (tree mode, shardings: a ValueError, so such a test fails)."""

from __future__ import annotations

import json
import os
from typing import Any

_MADE: list[Any] = []


def _counting(fun: Any = None, **options: Any) -> Any:
    from jaxperf import cached_nnx_jit

    if fun is None:
        return lambda f: _counting(f, **options)
    wrapper = cached_nnx_jit(fun, **options)
    _MADE.append(wrapper)
    return wrapper


def pytest_configure(config: Any) -> None:
    from jaxperf.fixes import _nnx

    flax_modules = _nnx.flax()  # the original nnx.jit, kept before it is replaced
    nnx: Any = flax_modules.nnx
    nnx.jit = _counting


def pytest_unconfigure(config: Any) -> None:
    path = os.environ.get("JAXPERF_NNX_STATS")
    if not path:
        return
    from jaxperf.fixes import nnx_fallback_counts as fallback_counts
    from jaxperf.fixes._nnx import nnx_refusal_counts

    totals = {key: sum(w.stats[key] for w in _MADE) for key in ("hits", "misses", "fallbacks")}
    with open(path, "w") as out:
        handled = totals["hits"] + totals["misses"]  # calls the drop-in's own jax.jit made
        report = {"wrappers": len(_MADE), "handled": handled, **totals, "fallback_reasons": fallback_counts()}
        refused = nnx_refusal_counts()
        report["refused"] = {"total": sum(refused.values()), "by_reason": refused}
        json.dump(report, out)
