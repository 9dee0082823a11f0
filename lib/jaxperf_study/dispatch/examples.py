"""Steps written the way their libraries' docs write them, as factories for ``diagnose`` (each
returns ``{"step": ..., "args": (...), "loader": ...}`` as a reader's does): equinox#192's no-op
``eqx.filter_pmap`` step, Equinox, ``eqx.filter_pmap``, Flax NNX and plain ``jax.jit`` training steps."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxperf.errors import check_int


def seed_noop(depth: int = 64, width: int = 32) -> dict[str, Any]:
    """The seed's no-op step under ``eqx.filter_pmap``: 392 array leaves per call at depth 64."""
    import equinox as eqx

    from .models import ModelSpec
    from .runners import mapped
    from .steps import AXIS, noop_step

    check_int("depth", depth)
    spec = ModelSpec("mlp", depth, width=width)
    model, opt_state = spec.build()
    devices = jax.devices()
    model, x, opt_state = mapped(model, opt_state, spec.batch(len(devices)), devices)
    return {"step": eqx.filter_pmap(noop_step, axis_name=AXIS), "args": (model, x, opt_state)}


def cell(
    step: str = "noop",
    kind: str = "mlp",
    size: int = 64,
    microbatches: int = 1,
    family: str = "pmap",
    donated: bool = False,
) -> dict[str, Any]:
    """One case of notebook 01 as a reader's factory: the seed's ``step`` ("noop" or "train", optax
    Adam) on a ``kind`` model of ``size`` (MLP depth, transformer or CNN layers), its batch
    accumulated over ``microbatches``, under ``eqx.filter_pmap`` (``family`` "pmap") or
    ``eqx.filter_jit`` ("jit"), model and optimiser state ``donated`` or not; with the study's own
    paths (the patched Equinox; on "pmap", the sharded paths Equinox and JAX advise instead), so
    that ``python -m jaxperf diagnose`` times exactly what the notebook times."""
    from jaxperf.errors import bad_value, check_choice

    from .cost import FAMILIES, Cell
    from .eqx_patch.path import PATHS as PATCHED
    from .models import ModelSpec
    from .sharded import PATHS as SHARDED
    from .vocab import STEPS

    check_choice("step", step, STEPS)
    check_choice("family", family, FAMILIES)
    if not isinstance(donated, bool):
        raise bad_value("donated", donated, "True or False")
    spec = ModelSpec(kind, size, microbatches=microbatches)
    case = Cell(step, spec, donated, family)
    wrapped, args = case.make()
    paths = {**PATCHED, **(SHARDED if family == "pmap" else {})}
    return {"step": wrapped, "args": args, "loader": case.loader(args), "paths": paths}


def _batches(width: int, size: int, seed: int = 1) -> Any:
    """An endless numpy loader of (x, y) regression batches, as a data pipeline hands them."""
    rng = np.random.default_rng(seed)
    while True:
        x = rng.standard_normal((size, width), dtype=np.float32)
        yield jnp.asarray(x), jnp.asarray(np.tanh(x))


def equinox_train(depth: int = 8, width: int = 64, batch: int = 64) -> dict[str, Any]:
    """An Equinox MLP, optax Adam, ``eqx.filter_value_and_grad``, ``eqx.filter_jit``."""
    import equinox as eqx
    import optax

    model = eqx.nn.MLP(width, width, width, depth=depth, key=jax.random.PRNGKey(0))
    optim = optax.adam(1e-3)
    opt_state = optim.init(eqx.filter(model, eqx.is_array))

    @eqx.filter_jit
    def make_step(model: Any, opt_state: Any, batch: Any) -> tuple[Any, Any, Any]:
        x, y = batch

        def loss(model: Any) -> jax.Array:
            return jnp.mean((jax.vmap(model)(x) - y) ** 2)

        value, grads = eqx.filter_value_and_grad(loss)(model)
        updates, opt_state = optim.update(grads, opt_state, eqx.filter(model, eqx.is_array))
        return value, eqx.apply_updates(model, updates), opt_state

    loader = _batches(width, batch)
    return {"step": make_step, "args": (model, opt_state, next(loader)), "loader": loader}


def equinox_wide(depth: int = 8, width: int = 2048, batch: int = 2048) -> dict[str, Any]:
    """:func:`equinox_train` device-bound on a TPU v5e (0.46 TFLOP and Adam on 38M parameters per
    call), on one batch: a loader's numpy work of this size would be host time."""
    return {k: v for k, v in equinox_train(depth, width, batch).items() if k != "loader"}


def filter_pmap_train(depth: int = 8, width: int = 32, batch_per_device: int = 4) -> dict[str, Any]:
    """An Equinox MLP trained under ``eqx.filter_pmap``: gradients averaged with ``pmean``."""
    import equinox as eqx

    from .models import ModelSpec
    from .runners import mapped
    from .steps import AXIS, make_train_step

    spec = ModelSpec("mlp", depth, width=width, batch_per_device=batch_per_device)
    model, opt_state = spec.build()
    devices = jax.devices()
    model, x, opt_state = mapped(model, opt_state, spec.batch(len(devices)), devices)
    step = eqx.filter_pmap(make_train_step(AXIS), axis_name=AXIS)
    return {"step": step, "args": (model, x, opt_state)}


def nnx_train(depth: int = 4, width: int = 64, batch: int = 64) -> dict[str, Any]:
    """A Flax NNX MLP with ``nnx.Optimizer`` under ``nnx.jit``, updated in place."""
    import optax
    from flax import nnx

    class MLP(nnx.Module):
        def __init__(self, depth: int, width: int, rngs: nnx.Rngs) -> None:
            self.layers = nnx.List([nnx.Linear(width, width, rngs=rngs) for _ in range(depth)])

        def __call__(self, x: jax.Array) -> jax.Array:
            for layer in self.layers[:-1]:
                x = jax.nn.relu(layer(x))
            return self.layers[-1](x)

    model = MLP(depth, width, nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)

    @nnx.jit
    def train_step(model: Any, optimizer: Any, batch: Any) -> jax.Array:
        x, y = batch

        def loss_fn(model: Any) -> jax.Array:
            return jnp.mean((model(x) - y) ** 2)

        loss, grads = nnx.value_and_grad(loss_fn)(model)
        optimizer.update(model, grads)
        return loss

    loader = _batches(width, batch)
    return {"step": train_step, "args": (model, optimizer, next(loader)), "loader": loader, "carry": None}


def jax_train(depth: int = 4, width: int = 64, batch: int = 64) -> dict[str, Any]:
    """Plain JAX: a dict of parameters, optax Adam, ``jax.jit``."""
    import optax

    keys = jax.random.split(jax.random.PRNGKey(0), depth)
    params = {
        f"layer{i}": {"w": jax.random.normal(k, (width, width)) / np.sqrt(width), "b": jnp.zeros(width)}
        for i, k in enumerate(keys)
    }
    optim = optax.adam(1e-3)

    def forward(params: Any, x: jax.Array) -> jax.Array:
        for i in range(depth):
            x = x @ params[f"layer{i}"]["w"] + params[f"layer{i}"]["b"]
            x = jax.nn.relu(x) if i < depth - 1 else x
        return x

    @jax.jit
    def step(params: Any, opt_state: Any, batch: Any) -> tuple[Any, Any, Any]:
        x, y = batch
        loss, grads = jax.value_and_grad(lambda p: jnp.mean((forward(p, x) - y) ** 2))(params)
        updates, opt_state = optim.update(grads, opt_state, params)
        return loss, optax.apply_updates(params, updates), opt_state

    loader = _batches(width, batch)
    return {"step": step, "args": (params, optim.init(params), next(loader)), "loader": loader}
