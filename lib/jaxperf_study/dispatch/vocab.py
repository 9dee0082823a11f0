"""The dispatch study's names: its steps and the mapped axis.

Standard library only, so that :mod:`jaxperf_study.dispatch.settings` (and every settings object
built on it) can be checked before any environment exists; :mod:`.steps` takes its names from here.
"""

from __future__ import annotations

STEPS = ("noop", "train")
#: the axis name every mapped method uses
AXIS = "devices"
#: what Equinox advises instead of eqx.filter_pmap, timed beside it (:mod:`.sharded`), by palette id
SHARDED = ("filter_jit_sharded", "jit_sharded", "shard_map_jit")
