"""The dispatch study (equinox#192, notebooks 01 and 10): what ``eqx.filter_pmap`` and
``eqx.filter_jit`` cost per call, per leaf, against ``jax.pmap`` / ``jax.jit`` on the state
partitioned once, and what the drop-in fixes (:mod:`jaxperf.fixes`) and a patched Equinox
(:mod:`jaxperf.dispatch.eqx_patch`) give back.

- :mod:`~jaxperf.dispatch.models`, :mod:`~jaxperf.dispatch.steps`: the models with Adam state,
  the seed's no-op step and a train step;
- :mod:`~jaxperf.dispatch.cost`: notebook 01's cases, each a :func:`jaxperf.diagnose` of the
  seed's step wrapped as a reader wraps it; :mod:`~jaxperf.dispatch.your_step`: notebook 10's;
- :mod:`~jaxperf.dispatch.per_leaf`: host CPU per call per leaf, lines, ranges, spreads over
  processes; :mod:`~jaxperf.dispatch.stages`, :mod:`~jaxperf.dispatch.accounting`: one call
  split stage by stage, and the accounting that adds up to the gap;
- :mod:`~jaxperf.dispatch.report`: summary.json and summary.md (prose in ``templates/``);
  :mod:`~jaxperf.dispatch.figures`: the figures; :mod:`~jaxperf.dispatch.settings`: the parameters;
- :mod:`~jaxperf.dispatch.methods`, :mod:`~jaxperf.dispatch.runners`: each path built by hand
  as a runner (``tools/bench_dropins.py``).
"""

from typing import TYPE_CHECKING

from .._lazy import exports

if TYPE_CHECKING:
    from ..fixes import state_step
    from .methods import build_runner
    from .models import ModelSpec, count_leaves
    from .settings import DispatchSettings
    from .steps import AXIS, make_train_step

# Loaded on first use: importing this package (or its settings) imports no JAX.
__getattr__, __dir__ = exports(
    __name__,
    {
        "state_step": ("..fixes", "state_step"),
        "build_runner": (".methods", "build_runner"),
        "ModelSpec": (".models", "ModelSpec"),
        "count_leaves": (".models", "count_leaves"),
        "DispatchSettings": (".settings", "DispatchSettings"),
        "AXIS": (".steps", "AXIS"),
        "make_train_step": (".steps", "make_train_step"),
    },
)

__all__ = [
    "AXIS",
    "DispatchSettings",
    "ModelSpec",
    "build_runner",
    "count_leaves",
    "make_train_step",
    "state_step",
]
