"""The dispatch study's names: its methods (with their labels), steps and the mapped axis.

Standard library only, so that :mod:`jaxperf_study.dispatch.settings` (and every settings object
built on it) can be checked before any environment exists; :mod:`.methods` and
:mod:`.steps` take their names from here.
"""

from __future__ import annotations

BASELINE = "pmap_params"
SLOW = "filter_pmap"
FIX = "cached_filter_pmap"

#: method id -> label used in figures and tables (each has its builder in :mod:`.methods`)
METHODS: dict[str, str] = {
    "filter_pmap": "eqx.filter_pmap (whole model)",
    "pmap_params": "jax.pmap on params (partition once)",
    "cached_filter_pmap": "jaxperf.cached_filter_pmap (the drop-in fix)",
    "packed_pmap": "jaxperf.packed_pmap (packed fast path)",
    "packed_jit": "jaxperf.packed_jit + NamedSharding (packed fast path)",
    "jit_single_device": "jax.jit on 1 device (floor)",
    "filter_jit": "eqx.filter_jit on 1 device (whole model)",
    "cached_filter_jit": "jaxperf.cached_filter_jit on 1 device (the drop-in that never blocks)",
}

STEPS = ("noop", "train")
#: the axis name every mapped method uses
AXIS = "devices"
