"""The NNX study (notebook 11): Flax NNX's ``nnx.jit`` pays equinox#192's per-call graph walk;
Flax's own benchmark and tests run beside it, with the drop-in."""
