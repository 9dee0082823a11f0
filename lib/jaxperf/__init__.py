"""jaxperf: drop-in fixes for JAX dispatch overhead and Pallas kernel loops, and the two tools
that tell whether your code needs them (``python -m jaxperf diagnose``, ``python -m jaxperf loops``).

The public API, importable from the package root:

- :func:`cached_filter_pmap`: a drop-in for ``eqx.filter_pmap`` that partitions
  the inputs once per input structure instead of on every call (equinox#192);
- :func:`cached_filter_jit`: a drop-in for ``eqx.filter_jit`` that partitions once
  per input structure and never waits for its call (``eqx.filter_jit`` blocks on every
  call since Equinox 0.11.8);
- :class:`PackedState`, :func:`packed_pmap`, :func:`packed_jit`: the packed fast
  path, a training state carried as one buffer per dtype through a compiled step;
- :func:`cached_nnx_jit`: a drop-in for ``flax.nnx.jit`` (graph mode) that walks the
  object graph once per structure (needs Flax);
- :func:`hand_unrolled_fori`: a ``lax.fori_loop`` stand-in unrolled by hand, which
  lowers wherever ``fori_loop`` does, Pallas' Triton backend included (jax#20909);
- :func:`kernel_loop`: a kernel's loop written once, built in any loop form (Python loop,
  ``fori_loop(unroll=k)``, ``pl.loop``, hand-unrolled), so ``python -m jaxperf loops`` can
  tell whether that kernel pays for ``fori_loop`` (jax#20909).

They come from :mod:`jaxperf.fixes` alone and load on first use (PEP 562), so ``import
jaxperf`` (and ``jaxperf.backend``, which must run before JAX starts) does not import JAX.
The tools are packages of their own: :func:`jaxperf.diagnosis.diagnose` (is *your* training
loop paying dispatch overhead, and which of these paths would be faster for it; needs pandas)
and :mod:`jaxperf.loops`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import exports

if TYPE_CHECKING:  # the public names, explicitly (loaded on first use below)
    from .fixes import PackedState as PackedState
    from .fixes import cached_filter_jit as cached_filter_jit
    from .fixes import cached_filter_pmap as cached_filter_pmap
    from .fixes import cached_nnx_jit as cached_nnx_jit
    from .fixes import hand_unrolled_fori as hand_unrolled_fori
    from .fixes import kernel_loop as kernel_loop
    from .fixes import packed_jit as packed_jit
    from .fixes import packed_pmap as packed_pmap

__version__ = "0.1.0"

# public name -> (module, name) that defines it
_PUBLIC = {
    name: ("jaxperf.fixes", name)
    for name in (
        "cached_filter_pmap",
        "cached_filter_jit",
        "PackedState",
        "packed_pmap",
        "packed_jit",
        "hand_unrolled_fori",
        "cached_nnx_jit",
        "kernel_loop",
    )
}
__all__ = ["__version__", *_PUBLIC]
__getattr__, __dir__ = exports(__name__, _PUBLIC)
