"""Each drop-in against the hand-written reference, per-pair, interleaved in one process.

    PYTHONPATH=lib python tools/bench_dropins.py [--rounds 15] [--calls 20] [--only jit,pmap,packed,nnx]

Pairs (8 forced CPU devices for the pmap ones; MLP depth d has 6(d+1)+2 leaves with its Adam
state and the batch: 14 at depth 1, 392 at depth 64):

- ``jit``: ``cached_filter_jit`` vs ``jax.jit`` on ``eqx.partition(model, eqx.is_array)``;
- ``pmap``: ``cached_filter_pmap`` vs ``jax.pmap`` on the partitioned state;
- ``packed``: ``packed_pmap`` vs ``jax.pmap`` on the partitioned state (no-op step);
- ``nnx``: ``cached_nnx_jit`` vs ``jax.jit`` on ``nnx.split`` state (loss-only step of an MLP
  of 4-wide ``nnx.Linear``, depth 1, 10, 100).

A round times ``--calls`` calls of one, then of the other (the order alternates by round),
each batch pipelined (one block after the last call); the ratio of a round is the
reference's time per call over the drop-in's (above 1: the drop-in is faster). Printed: the
median ratio with its interquartile range, and each side's median microseconds per call.
"""

from __future__ import annotations

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"

import argparse  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

import jax  # noqa: E402
import numpy as np  # noqa: E402


def _timed(call: Callable[[], Any], n: int) -> float:
    out = None
    start = time.perf_counter()
    for _ in range(n):
        out = call()
    jax.block_until_ready(out)
    return (time.perf_counter() - start) / n


def pair(name: str, ref: Callable[[], Any], drop: Callable[[], Any], rounds: int, calls: int) -> dict:
    for f in (ref, drop):  # compile, warm
        _timed(f, 3)
    t_ref, t_drop = [], []
    for r in range(rounds):
        order = [(ref, t_ref), (drop, t_drop)] if r % 2 == 0 else [(drop, t_drop), (ref, t_ref)]
        for f, into in order:
            into.append(_timed(f, calls))
    ratio = np.array(t_ref) / np.array(t_drop)
    q1, med, q3 = np.percentile(ratio, [25, 50, 75])
    row = {"case": name, "ratio": med, "q1": q1, "q3": q3}
    row |= {"ref_us": 1e6 * np.median(t_ref), "drop_us": 1e6 * np.median(t_drop)}
    print(
        f"{name:40s} ratio {med:6.2f} [{q1:5.2f}, {q3:5.2f}]  "
        f"ref {row['ref_us']:9.1f} us  drop-in {row['drop_us']:9.1f} us",
        flush=True,
    )
    return row


def _runner_call(runner: Any) -> Callable[[], Any]:
    return runner.call


def equinox_pairs(kind: str, depths: list[int], rounds: int, calls: int) -> list[dict]:
    from jaxperf_study.dispatch import build_runner
    from jaxperf_study.dispatch.models import ModelSpec

    reference = {"jit": "jit_single_device", "pmap": "pmap_params", "packed": "pmap_params"}[kind]
    method = {"jit": "cached_filter_jit", "pmap": "cached_filter_pmap", "packed": "packed_pmap"}[kind]
    n_dev = 1 if kind == "jit" else 8
    steps = ("noop",) if kind == "packed" else ("noop", "train")
    rows = []
    for depth in depths:
        spec = ModelSpec("mlp", depth)
        model, opt = spec.build()
        x = spec.batch(n_dev)
        leaves = len(jax.tree.leaves((model, opt))) + 1
        for step in steps:
            for donate in (False, True):
                ref = build_runner(reference, step, model, opt, x, n_dev, donate=donate)
                drop = build_runner(method, step, model, opt, x, n_dev, donate=donate)
                name = f"{method} {step} {leaves} leaves{' donated' if donate else ''}"
                rows.append(pair(name, ref.call, drop.call, rounds, calls))
    return rows


def nnx_pairs(depths: list[int], rounds: int, calls: int) -> list[dict]:
    import jax.numpy as jnp
    from flax import nnx

    from jaxperf import cached_nnx_jit

    class MLP(nnx.Module):
        def __init__(self, depth: int, rngs: nnx.Rngs) -> None:
            self.layers = nnx.List([nnx.Linear(4, 4, rngs=rngs) for _ in range(depth)])

        def __call__(self, x: jax.Array) -> jax.Array:
            for layer in self.layers:
                x = layer(x)
            return x

    def loss(model: MLP, x: jax.Array) -> jax.Array:
        return (model(x) ** 2).mean()

    rows = []
    for depth in depths:
        model = MLP(depth, nnx.Rngs(0))
        x = jnp.ones((8, 4))
        graphdef, state = nnx.split(model)
        ref_fn = jax.jit(lambda s, xb, g=graphdef: loss(nnx.merge(g, s), xb))
        drop_fn = cached_nnx_jit(loss)
        row = pair(
            f"cached_nnx_jit loss depth {depth}",
            lambda f=ref_fn, s=state, xb=x: f(s, xb),
            lambda f=drop_fn, m=model, xb=x: f(m, xb),
            rounds,
            calls,
        )
        row["misses_hits"] = (drop_fn.stats["misses"], drop_fn.stats["hits"], drop_fn.stats["fallbacks"])
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--only", default="jit,pmap,packed,nnx")
    parser.add_argument("--depths", default="1,4,16,64", help="MLP depths of the Equinox pairs")
    args = parser.parse_args()
    depths = [int(d) for d in args.depths.split(",")]
    print(f"jax {jax.__version__}, {jax.device_count()} devices, rounds {args.rounds}, calls {args.calls}")
    for kind in args.only.split(","):
        if kind == "nnx":
            nnx_pairs([1, 10, 100], args.rounds, args.calls)
        else:
            equinox_pairs(kind, [64] if kind == "packed" else depths, args.rounds, args.calls)


if __name__ == "__main__":
    main()
