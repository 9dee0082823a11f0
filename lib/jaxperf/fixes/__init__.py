"""The study's public fixes: small, with no dependency beyond jax, equinox and numpy.

A training project can depend on these alone (``pip install jaxperf``); the study around
them (notebooks, sweeps, figures) needs the ``study`` extra. Each is re-exported from the
package root, lazily, so ``import jaxperf`` imports no JAX:

- :mod:`.cached_pmap`: ``cached_filter_pmap``, a drop-in for ``eqx.filter_pmap`` that
  partitions once per input structure (equinox#192);
- :mod:`.cached_jit`: ``cached_filter_jit``, a drop-in for ``eqx.filter_jit`` that
  partitions once per input structure and never blocks a call (both are Modules like
  Equinox's wrappers; their compiled paths, :mod:`._jit_paths` and :mod:`._pmap_paths`,
  share the cache key, output record and locking of :mod:`._partition`);
- :mod:`.packed`: ``PackedState``, ``packed_pmap``, ``packed_jit``, a training state carried
  as one buffer per dtype through a compiled step;
- :mod:`.unroll`: ``hand_unrolled_fori``, ``lax.fori_loop`` unrolled by hand so that it
  lowers on every Pallas backend (jax-ml/jax#20909);
- :mod:`.nnx`: ``cached_nnx_jit``, a drop-in for ``flax.nnx.jit`` (graph mode) that walks the
  object graph once per structure; it imports Flax when first used, so the core needs none.
"""
