"""The dispatch study (equinox#192): why ``eqx.filter_pmap`` dispatches slower than
``jax.pmap`` on params, a drop-in fix, and a packed fast path.

One module per concern:

- :mod:`~jaxperf.dispatch.models`: the MLPs and the transformer, with Adam state;
- :mod:`~jaxperf.dispatch.steps`: the seed's no-op step and a real train step;
- :mod:`~jaxperf.dispatch.methods`: each way to run a step over the devices
  (:func:`build_runner`), with and without donation;
- :mod:`jaxperf.fixes`: :func:`cached_filter_pmap`, the drop-in, and :class:`PackedState`, :func:`packed_pmap`,
  :func:`packed_jit`, the fast path;
- :mod:`~jaxperf.dispatch.cost`: notebook 01's cells, each a :func:`jaxperf.diagnose` of the
  seed's step wrapped as a reader wraps it;
- :mod:`~jaxperf.dispatch.per_leaf`: host CPU per call per leaf, fits, ranges over cells;
- :mod:`~jaxperf.dispatch.stages`, :mod:`~jaxperf.dispatch.accounting`: one filter_pmap call
  split stage by stage, and the accounting that adds up to the gap;
- :mod:`~jaxperf.dispatch.report`: summary.json's numbers (and the project's goals);
- :mod:`~jaxperf.dispatch.summary_md`: summary.md, ready to paste into equinox#192;
- :mod:`~jaxperf.dispatch.figures`: the figures;
- :mod:`~jaxperf.dispatch.sweep`: pytree equality and the wait of a donated loop (notebook 07);
- :mod:`~jaxperf.dispatch.settings`: :class:`DispatchSettings`, notebook 01's parameters.
"""

from typing import TYPE_CHECKING

from .._lazy import exports

if TYPE_CHECKING:
    from ..fixes import (
        CachedFilterPmap,
        Layout,
        PackedState,
        cached_filter_pmap,
        packed_jit,
        packed_pmap,
        state_step,
    )
    from ..fixes import pmap_fallback_counts as fallback_counts
    from .methods import (
        BASELINE,
        FAST_PATHS,
        FIX,
        METHODS,
        SLOW,
        Runner,
        build_runner,
        on_params,
        variant_name,
    )
    from .models import ModelSpec, count_leaves
    from .settings import DispatchSettings
    from .steps import AXIS, STEPS, get_step, make_train_step, noop_step
    from .sweep import same_result

# Loaded on first use: importing this package (or its settings) imports no JAX.
__getattr__, __dir__ = exports(
    __name__,
    {
        "CachedFilterPmap": ("..fixes", "CachedFilterPmap"),
        "cached_filter_pmap": ("..fixes", "cached_filter_pmap"),
        "fallback_counts": ("..fixes", "pmap_fallback_counts"),
        "Layout": ("..fixes", "Layout"),
        "PackedState": ("..fixes", "PackedState"),
        "packed_jit": ("..fixes", "packed_jit"),
        "packed_pmap": ("..fixes", "packed_pmap"),
        "state_step": ("..fixes", "state_step"),
        "BASELINE": (".methods", "BASELINE"),
        "FAST_PATHS": (".methods", "FAST_PATHS"),
        "FIX": (".methods", "FIX"),
        "METHODS": (".methods", "METHODS"),
        "SLOW": (".methods", "SLOW"),
        "Runner": (".methods", "Runner"),
        "build_runner": (".methods", "build_runner"),
        "on_params": (".methods", "on_params"),
        "variant_name": (".methods", "variant_name"),
        "ModelSpec": (".models", "ModelSpec"),
        "count_leaves": (".models", "count_leaves"),
        "DispatchSettings": (".settings", "DispatchSettings"),
        "AXIS": (".steps", "AXIS"),
        "STEPS": (".steps", "STEPS"),
        "get_step": (".steps", "get_step"),
        "make_train_step": (".steps", "make_train_step"),
        "noop_step": (".steps", "noop_step"),
        "same_result": (".sweep", "same_result"),
    },
)

__all__ = [
    "AXIS",
    "BASELINE",
    "FAST_PATHS",
    "FIX",
    "METHODS",
    "SLOW",
    "STEPS",
    "CachedFilterPmap",
    "DispatchSettings",
    "Layout",
    "ModelSpec",
    "PackedState",
    "Runner",
    "build_runner",
    "cached_filter_pmap",
    "fallback_counts",
    "count_leaves",
    "get_step",
    "make_train_step",
    "noop_step",
    "on_params",
    "packed_jit",
    "packed_pmap",
    "same_result",
    "state_step",
    "variant_name",
]
