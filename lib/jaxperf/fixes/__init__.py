"""The public fixes, the core a training project installs: drop-ins for ``eqx.filter_pmap``,
``eqx.filter_jit`` and ``nnx.jit``, the packed state, ``hand_unrolled_fori`` and ``kernel_loop``;
no dependency beyond jax, equinox and numpy (Flax for ``cached_nnx_jit``, on first use), tested
alone by tests/core.

One concept per private module: :mod:`._jit`, :mod:`._pmap` (sharing :mod:`._cached`),
:mod:`._packed`, :mod:`._unroll`, :mod:`._kernel_loop`, :mod:`._nnx`; each public name is
re-exported here (and from the package root) and loaded on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import exports

if TYPE_CHECKING:
    from ._jit import CachedFilterJit, cached_filter_jit, jit_fallback_counts
    from ._kernel_loop import kernel_loop
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
    "kernel_loop": "_kernel_loop",
    "cached_nnx_jit": "_nnx",
    "CachedNnxJit": "_nnx",
    "nnx_fallback_counts": "_nnx",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = exports(__name__, {name: (f".{module}", name) for name, module in _EXPORTS.items()})
