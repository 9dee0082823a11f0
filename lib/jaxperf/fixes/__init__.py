"""The study's public fixes: small, with no dependency beyond jax, equinox and numpy.

A training project can depend on these alone (``pip install jaxperf``); the study around
them (notebooks, sweeps, figures) needs the ``study`` extra. One concept per private module,
its public names re-exported here (and from the package root), each loaded on first use:

- :mod:`._jit`: ``cached_filter_jit``, a drop-in for ``eqx.filter_jit`` that partitions once
  per input structure (equinox#192) and never blocks a call;
- :mod:`._pmap`: ``cached_filter_pmap``, the same for ``eqx.filter_pmap``; both key, record
  and share their compiled paths as :mod:`._cached` does;
- :mod:`._packed`: ``PackedState``, ``packed_pmap``, ``packed_jit``, a training state carried
  as one buffer per dtype through a compiled step;
- :mod:`._unroll`: ``hand_unrolled_fori``, ``lax.fori_loop`` unrolled by hand so that it
  lowers on every Pallas backend (jax-ml/jax#20909);
- :mod:`._nnx`: ``cached_nnx_jit``, a drop-in for ``flax.nnx.jit`` that walks the object
  graph once per structure; it imports Flax when first used, so the core needs none.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._jit import CachedFilterJit, cached_filter_jit, jit_fallback_counts
    from ._nnx import CachedNnxJit, cached_nnx_jit, nnx_fallback_counts
    from ._packed import Layout, PackedState, packed_jit, packed_pmap, state_step
    from ._pmap import CachedFilterPmap, cached_filter_pmap, pmap_fallback_counts
    from ._unroll import hand_unrolled_fori

# public name -> the private module that defines it
_EXPORTS = {
    "cached_filter_jit": "_jit",
    "cached_filter_pmap": "_pmap",
    "CachedFilterJit": "_jit",
    "CachedFilterPmap": "_pmap",
    "jit_fallback_counts": "_jit",
    "pmap_fallback_counts": "_pmap",
    "PackedState": "_packed",
    "packed_pmap": "_packed",
    "packed_jit": "_packed",
    "state_step": "_packed",
    "Layout": "_packed",
    "hand_unrolled_fori": "_unroll",
    "cached_nnx_jit": "_nnx",
    "CachedNnxJit": "_nnx",
    "nnx_fallback_counts": "_nnx",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
