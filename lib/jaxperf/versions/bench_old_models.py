"""The transformer of ``bench_old.py``, written with APIs that exist from Equinox 0.7.1 on.

A sibling of ``bench_old.py`` (imported from the script's own folder, which Python
puts first on ``sys.path``), so the script stays self-contained in old environments
(Python 3.10, jax 0.4.13) while each file stays small.
"""


def define_models(eqx, jax):
    """Return the ``Transformer`` class, built on the given ``equinox`` and ``jax`` modules."""

    class Block(eqx.Module):
        norm1: eqx.nn.LayerNorm
        attention: eqx.nn.MultiheadAttention
        norm2: eqx.nn.LayerNorm
        feedforward: eqx.nn.MLP

        def __init__(self, d_model, heads, key):
            k1, k2 = jax.random.split(key)
            self.norm1 = eqx.nn.LayerNorm(d_model)
            self.attention = eqx.nn.MultiheadAttention(heads, d_model, key=k1)
            self.norm2 = eqx.nn.LayerNorm(d_model)
            self.feedforward = eqx.nn.MLP(d_model, d_model, 4 * d_model, 1, key=k2)

        def __call__(self, h):
            n = jax.vmap(self.norm1)(h)
            h = h + self.attention(n, n, n)
            return h + jax.vmap(self.feedforward)(jax.vmap(self.norm2)(h))

    class Transformer(eqx.Module):
        embedding: eqx.nn.Embedding
        blocks: tuple
        norm: eqx.nn.LayerNorm
        head: eqx.nn.Linear

        def __init__(self, vocab, d_model, blocks, heads, key):
            keys = jax.random.split(key, blocks + 2)
            self.embedding = eqx.nn.Embedding(vocab, d_model, key=keys[0])
            self.blocks = tuple(Block(d_model, heads, k) for k in keys[1:-1])
            self.norm = eqx.nn.LayerNorm(d_model)
            self.head = eqx.nn.Linear(d_model, vocab, key=keys[-1])

        def __call__(self, tokens):
            h = jax.vmap(self.embedding)(tokens)
            for block in self.blocks:
                h = block(h)
            return jax.vmap(self.head)(jax.vmap(self.norm)(h))

    return Transformer
