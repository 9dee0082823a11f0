"""The multi-process study's names: its methods (with their labels) and steps.

Standard library only, so that :mod:`jaxperf.multiprocess.settings` can be checked before any
environment exists; :mod:`.methods` builds each method and takes its names from here.
"""

from __future__ import annotations

METHODS: dict[str, str] = {
    "pmap_params": "jax.pmap on params",
    "filter_pmap": "eqx.filter_pmap (0.13.8 as shipped)",
    "filter_pmap_fixed": "eqx.filter_pmap, proposed fix patched in",
    "cached_filter_pmap": "jaxperf.cached_filter_pmap",
    "packed_pmap": "packed fast path, jax.pmap form",
    "jit_named_sharding": "jax.jit + NamedSharding (global Mesh)",
    "packed_jit": "packed fast path, jax.jit + NamedSharding form",
    "jit_shard_map": "jax.jit(jax.shard_map) (global Mesh)",
}
MAPPED = ("pmap_params", "filter_pmap", "filter_pmap_fixed", "cached_filter_pmap", "packed_pmap")
STEPS = ("noop", "train", "train_local", "allreduce")
#: the methods that time the collective split (steps train_local and allreduce)
SPLIT_METHODS = ("pmap_params", "jit_shard_map")
#: steps whose result is checked against the one-device reference
CHECKED_STEPS = ("noop", "train", "allreduce")
