"""Nothing kept alive that Equinox frees (issue 28): a call's outputs, the wrapped function, a
wrapped Module and its weights. Was: ``cached_filter_jit`` kept each wrapper's last output
until its next call (its pending-results deque), and ``cached_filter_pmap`` kept a wrapped
Module's weights in a module-level cache, one copy per input structure, for ever. Each case
deletes, collects and checks with ``weakref``, side by side with Equinox. A core test:
jaxperf's public API, jax, equinox, numpy, pytest."""

from __future__ import annotations

import gc
import weakref

import equinox as eqx
import jax
import jax.numpy as jnp
import pytest
from dropin_checks import N

from jaxperf import cached_filter_jit, cached_filter_pmap

PAIRS = {"jit": (eqx.filter_jit, cached_filter_jit), "pmap": (eqx.filter_pmap, cached_filter_pmap)}
WRAPPERS = {
    f"{kind}:{side}": (kind, wrap)
    for kind, pair in PAIRS.items()
    for side, wrap in zip(("equinox", "ours"), pair)
}


def x_for(kind):
    return jnp.ones(3) if kind == "jit" else jnp.ones((N, 3))


def freed(ref):
    gc.collect()
    return ref() is None


@pytest.mark.parametrize("name", list(WRAPPERS))
def test_an_output_dropped_by_the_caller_is_freed(name):
    kind, wrap = WRAPPERS[name]
    wrapped = wrap(lambda x: x * 2)
    out = wrapped(x_for(kind))
    out.block_until_ready()
    ref = weakref.ref(out)
    del out
    assert freed(ref)
    assert wrapped(x_for(kind)).shape == x_for(kind).shape  # and the wrapper still works


class Big(eqx.Module):
    weight: jax.Array

    def __call__(self, x):
        return x * self.weight.sum()


@pytest.mark.parametrize("name", list(WRAPPERS))
def test_a_wrapped_module_and_its_weights_are_freed_with_the_wrapper(name):
    kind, wrap = WRAPPERS[name]
    model = Big(jnp.ones(1000))
    weight, module = weakref.ref(model.weight), weakref.ref(model)
    wrapped = wrap(model)
    out = wrapped(x_for(kind))
    del model, wrapped, out
    assert freed(weight) and freed(module)


@pytest.mark.parametrize("kind", list(PAIRS))
def test_a_wrapped_function_and_what_it_closes_over_are_freed(kind):
    """Better than Equinox 0.13.8 here, which keeps the function: its compile cache's entry for
    a function (a weak key) holds a compiled function whose cache holds the function. What the
    function closes over is then freed where JAX frees it (jax.pmap keeps a closed-over array
    in its own caches)."""

    def closure():
        captured = jnp.ones(1000)

        def f(x):
            return x * captured.sum()

        return f, weakref.ref(captured)

    f, held = closure()
    fun = weakref.ref(f)
    PAIRS[kind][1](f)(x_for(kind))
    del f
    assert freed(fun), "the function"
    if kind == "jit":
        assert freed(held), "what it closes over"
