"""The study's public fixes: small, with no dependency beyond jax, equinox and numpy.

A training project can depend on these alone (``pip install jaxperf``); the study around
them (notebooks, sweeps, figures) needs the ``study`` extra. One concept per private module,
its public names re-exported here (and from the package root), each loaded on first use:

- :mod:`._cached`: ``cached_filter_jit`` and ``cached_filter_pmap``, drop-ins for
  ``eqx.filter_jit`` and ``eqx.filter_pmap`` that partition once per input structure
  (equinox#192); ``cached_filter_jit`` never blocks a call;
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
    from ._cached import (
        CachedFilterJit,
        CachedFilterPmap,
        cached_filter_jit,
        cached_filter_pmap,
        jit_fallback_counts,
        pmap_fallback_counts,
    )
    from ._nnx import CachedNnxJit, cached_nnx_jit, nnx_fallback_counts
    from ._packed import Layout, PackedState, packed_jit, packed_pmap, state_step
    from ._unroll import hand_unrolled_fori

# public name -> the private module that defines it
_EXPORTS = {
    "cached_filter_jit": "_cached",
    "cached_filter_pmap": "_cached",
    "CachedFilterJit": "_cached",
    "CachedFilterPmap": "_cached",
    "jit_fallback_counts": "_cached",
    "pmap_fallback_counts": "_cached",
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
