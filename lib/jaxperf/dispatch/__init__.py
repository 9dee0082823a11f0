"""The dispatch study (equinox#192): why ``eqx.filter_pmap`` dispatches slower than
``jax.pmap`` on params, a drop-in fix, and a packed fast path.

One module per concern:

- :mod:`~jaxperf.dispatch.models`: the MLPs and the transformer, with Adam state;
- :mod:`~jaxperf.dispatch.steps`: the seed's no-op step and a real train step;
- :mod:`~jaxperf.dispatch.methods`: each way to run a step over the devices
  (:func:`build_runner`), with and without donation;
- :mod:`jaxperf.fixes.cached_pmap`: :func:`cached_filter_pmap`, the drop-in (re-exported);
- :mod:`jaxperf.fixes.packed`: :class:`PackedState`, :func:`packed_pmap`,
  :func:`packed_jit`, the fast path;
- :mod:`~jaxperf.dispatch.sweep`: build, check, time;
- :mod:`~jaxperf.dispatch.stages`: stage timers and cProfile of one filter_pmap call;
- :mod:`~jaxperf.dispatch.report`: speedups, goals and summary.json's numbers;
- :mod:`~jaxperf.dispatch.summary_md`: summary.md, ready to paste into equinox#192;
- :mod:`~jaxperf.dispatch.figures`: the figures;
- :mod:`~jaxperf.dispatch.settings`: :class:`DispatchSettings`, notebook 01's parameters.
"""

from ..fixes.cached_pmap import CachedFilterPmap, cached_filter_pmap, fallback_counts
from ..fixes.packed import Layout, PackedState, packed_jit, packed_pmap, state_step
from .methods import BASELINE, FAST_PATHS, FIX, METHODS, SLOW, Runner, build_runner, on_params, variant_name
from .models import ModelSpec, count_leaves
from .settings import DispatchSettings
from .steps import AXIS, STEPS, get_step, make_train_step, noop_step
from .sweep import SweepResult, add_derived, check_runners, same_result

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
    "SweepResult",
    "add_derived",
    "build_runner",
    "cached_filter_pmap",
    "fallback_counts",
    "check_runners",
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
