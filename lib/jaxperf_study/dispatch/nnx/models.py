"""The NNX study's models and steps: an MLP of ``nnx.Linear`` layers at a given depth, its
``nnx.Optimizer`` (optax), and two steps written as a Flax user writes them (modules in,
updates applied in place): a no-op step and a training step."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jaxperf.errors import check_choice, check_int

STEPS = ("noop", "train")


def _nnx() -> Any:
    from flax import nnx

    return nnx


def mlp_class() -> type:
    nnx = _nnx()

    class MLP(nnx.Module):  # type: ignore[name-defined]
        """``depth`` ``nnx.Linear`` layers of ``width`` in and out, ReLU between them."""

        def __init__(self, depth: int, width: int, *, rngs: Any) -> None:
            self.layers = nnx.List([nnx.Linear(width, width, rngs=rngs) for _ in range(depth)])

        def __call__(self, x: Any) -> Any:
            for i, layer in enumerate(self.layers):
                x = layer(x) if i == 0 else layer(nnx.relu(x))
            return x

    return MLP


def noop_step(model: Any, optimizer: Any, x: Any, y: Any) -> None:
    """Does nothing: what remains is the cost of calling through the transform."""


def train_step(model: Any, optimizer: Any, x: Any, y: Any) -> Any:
    """Mean squared error, its gradient with respect to the model's Params, one optimizer update."""
    nnx = _nnx()

    def loss_fn(model: Any) -> Any:
        return ((model(x) - y) ** 2).mean()

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss


def step_function(step: str) -> Any:
    check_choice("step", step, STEPS)
    return {"noop": noop_step, "train": train_step}[step]


@dataclass(frozen=True)
class Problem:
    """One model, its optimizer and a batch; :meth:`build` makes fresh ones (same seed, same values)."""

    depth: int
    width: int = 4
    batch: int = 8
    seed: int = 0
    learning_rate: float = 1e-3

    def __post_init__(self) -> None:
        check_int("depth", self.depth)
        check_int("width", self.width)
        check_int("batch", self.batch)

    def build(self) -> tuple[Any, Any, Any, Any]:
        """``(model, optimizer, x, y)``."""
        import jax
        import optax

        nnx = _nnx()
        model = mlp_class()(self.depth, self.width, rngs=nnx.Rngs(self.seed))
        optimizer = nnx.Optimizer(model, optax.adam(self.learning_rate), wrt=nnx.Param)
        kx, ky = jax.random.split(jax.random.key(self.seed + 1))
        x = jax.random.normal(kx, (self.batch, self.width))
        y = jax.random.normal(ky, (self.batch, self.width))
        return model, optimizer, x, y


def count_variables(*nodes: Any) -> int:
    """The Variables (array leaves) of ``nodes`` as ``nnx.split`` counts them, shared ones once."""
    import jax

    nnx = _nnx()
    _, state = nnx.split(nodes)
    return len(jax.tree.leaves(state))
