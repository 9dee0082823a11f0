"""The drop-ins against their hand-written references, on models as a user writes them, interleaved
in one process: ``cached_filter_jit`` against ``jax.jit`` on params, ``cached_filter_pmap`` and
``packed_pmap`` against ``jax.pmap`` on params.

    python tools/bench_dropins.py [--cases transformer:12:noop,...] [--family jit,pmap]
        [--rounds 20] [--round-ms 40 | --calls 3,30,100] [--donated] [--json PATH]

Self-contained (jax, equinox, optax and jaxperf; no study code), for any JAX the fixes accept (the
TPU's 0.10.2 on Python 3.11 too); on a machine without an accelerator it runs on the CPU. The models
are what a user writes from equinox#192: a transformer of ``eqx.nn`` blocks (LayerNorm,
MultiheadAttention, MLP) in a list, a CNN of ``eqx.nn.Conv2d``, an ``eqx.nn.MLP``; the optimiser is
``optax.adam``. "on params" is the reference: ``params, static = eqx.partition((model, opt_state),
eqx.is_array)`` once, then ``jax.jit`` (or ``jax.pmap``) of a step over ``params``.

Each path first shows it computes the reference's result (one step from the same state). Then
rounds in Williams order (:func:`jaxperf.timing.compare`), each path per round: ``number`` calls
blocked one by one, then ``number`` calls pipelined (each call's new state passed to the next, one
block at the end). Printed and written (``--json``) per path: the reference's time per call over
the path's, per round (above 1: the path is faster; it/s ratio), median and quartiles, pipelined
and blocked; and the host's time per call (``jaxperf.timing.host_column``: the thread's CPU while
enqueuing, or on a coarse CPU clock the wall time while enqueuing). A pipelined time per call is
the enqueue plus about one call's latency over the calls of a round: ``--calls`` sets how many
(several values: each is timed), so that a fast path is read at few calls a round and at many.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

# model:layers:step; sizes as in issue 54 (433 and 145 array leaves with Adam's state; 391 for the MLP)
CASES = "transformer:12:noop,transformer:4:train,cnn:16:noop,cnn:16:train,mlp:64:noop,mlp:64:train"


def build(kind: str, size: int) -> tuple[Any, Any]:
    """(model, an example input) of ``kind`` ('transformer', 'cnn', 'mlp') with ``size`` layers."""
    import equinox as eqx
    import jax
    import jax.numpy as jnp

    class Block(eqx.Module):
        norm1: eqx.nn.LayerNorm
        attention: eqx.nn.MultiheadAttention
        norm2: eqx.nn.LayerNorm
        mlp: eqx.nn.MLP

        def __init__(self, dim: int, key: Any) -> None:
            k1, k2 = jax.random.split(key)
            self.norm1, self.norm2 = eqx.nn.LayerNorm(dim), eqx.nn.LayerNorm(dim)
            self.attention = eqx.nn.MultiheadAttention(4, dim, key=k1)
            self.mlp = eqx.nn.MLP(dim, dim, 4 * dim, depth=1, activation=jax.nn.gelu, key=k2)

        def __call__(self, x: Any) -> Any:
            h = jax.vmap(self.norm1)(x)
            x = x + self.attention(h, h, h)
            return x + jax.vmap(self.mlp)(jax.vmap(self.norm2)(x))

    class Transformer(eqx.Module):
        blocks: list

        def __init__(self, layers: int, dim: int, key: Any) -> None:
            self.blocks = [Block(dim, k) for k in jax.random.split(key, layers)]

        def __call__(self, x: Any) -> Any:
            for block in self.blocks:
                x = block(x)
            return x

    class CNN(eqx.Module):
        convs: list
        head: eqx.nn.Linear

        def __init__(self, layers: int, channels: int, key: Any) -> None:
            keys = jax.random.split(key, layers + 1)
            self.convs = [eqx.nn.Conv2d(channels, channels, 3, padding=1, key=k) for k in keys[:-1]]
            self.head = eqx.nn.Linear(channels, channels, key=keys[-1])

        def __call__(self, x: Any) -> Any:
            for conv in self.convs:
                x = jax.nn.relu(conv(x))
            return self.head(x.mean(axis=(1, 2)))

    key = jax.random.PRNGKey(0)
    if kind == "transformer":
        return Transformer(size, 32, key), jnp.ones((8, 8, 32))
    if kind == "cnn":
        return CNN(size, 16, key), jnp.ones((8, 16, 8, 8))
    return eqx.nn.MLP(32, 32, 32, depth=size, key=key), jnp.ones((8, 32))


def make_step(name: str, optimiser: Any, axis_name: str | None) -> Callable:
    """``step(model, opt_state, x) -> (loss, model, opt_state)``: 'noop' (equinox#192's seed step)
    or 'train' (a squared-output loss, its gradient, a pmean over ``axis_name``, then Adam)."""
    import equinox as eqx
    import jax
    import jax.numpy as jnp

    def noop(model: Any, opt_state: Any, x: Any) -> tuple:
        return jnp.zeros(()), model, opt_state

    def train(model: Any, opt_state: Any, x: Any) -> tuple:
        loss, grads = eqx.filter_value_and_grad(lambda m: jnp.mean(jax.vmap(m)(x) ** 2))(model)
        if axis_name is not None:
            loss, grads = jax.lax.pmean((loss, grads), axis_name)
        updates, opt_state = optimiser.update(grads, opt_state, eqx.filter(model, eqx.is_array))
        return loss, eqx.apply_updates(model, updates), opt_state

    return noop if name == "noop" else train


class Path:
    """One path's state and its call: ``call()`` runs one step, keeps the new state, returns the loss."""

    def __init__(
        self, state: Any, fn: Callable[[Any], tuple[Any, Any]], unpack: Callable[[Any], Any]
    ) -> None:
        self.state, self.fn, self.unpack = state, fn, unpack

    def call(self) -> Any:
        loss, self.state = self.fn(self.state)
        return loss


def paths(family: str, step: str, kind: str, size: int, donated: bool) -> tuple[dict[str, Path], int]:
    """The paths of ``family`` ('jit' or 'pmap'), the reference first, and the array leaves of
    (model, opt_state). Donated: the state, never the batch (``cached_filter_pmap`` is left out
    then: Equinox's ``donate='all'`` donates the batch too)."""
    import equinox as eqx
    import jax
    import jax.numpy as jnp
    import optax

    import jaxperf

    model, x = build(kind, size)
    optimiser = optax.adam(1e-3)
    opt_state = optimiser.init(eqx.filter(model, eqx.is_array))
    params, static = eqx.partition((model, opt_state), eqx.is_array)
    leaves = len(jax.tree_util.tree_leaves(params))
    fun = make_step(step, optimiser, None if family == "jit" else "i")

    def on_params(p: Any, xb: Any) -> tuple:
        loss, m, o = fun(*eqx.combine(p, static), xb)
        return loss, eqx.filter((m, o), eqx.is_array)

    def batch_first(xb: Any, m: Any, o: Any) -> tuple:  # "all-except-first" keeps the batch
        return fun(m, o, xb)

    unpack = lambda p: eqx.combine(p, static)  # noqa: E731
    rest = lambda out: (out[0], out[1:])  # noqa: E731
    donate = (0,) if donated else ()
    if family == "jit":
        ref = jax.jit(on_params, donate_argnums=donate)
        mine = jaxperf.cached_filter_jit(batch_first, donate="all-except-first" if donated else "none")
        return {
            "jax.jit on params": Path(params, lambda p: ref(p, x), unpack),
            "cached_filter_jit": Path((model, opt_state), lambda s: rest(mine(x, *s)), lambda s: s),
        }, leaves
    devices = jax.local_devices()
    # replicated as jax.pmap places its outputs, so that no call reshards
    stack = lambda t: jax.pmap(lambda t: t, devices=devices)(  # noqa: E731
        jax.tree_util.tree_map(lambda a: jnp.broadcast_to(a, (len(devices), *a.shape)), t)
    )
    xs = stack(x)
    ref = jax.pmap(on_params, axis_name="i", donate_argnums=donate)
    mine = jaxperf.cached_filter_pmap(fun, axis_name="i")
    packed = jaxperf.packed_pmap(lambda t, xb: rest(fun(*t, xb)), axis_name="i", donate=donated)
    state = jaxperf.PackedState.pack((model, opt_state)).replicate(devices)
    named = {
        "jax.pmap on params": Path(stack(params), lambda p: ref(p, xs), unpack),
        "cached_filter_pmap": Path(
            eqx.combine(stack(params), static), lambda s: rest(mine(*s, xs)), lambda s: s
        ),
        "packed_pmap": Path(state, lambda s: packed(s, xs), lambda s: s.unpack()),
    }
    if donated:
        del named["cached_filter_pmap"]
    return named, leaves


def check_same(named: dict[str, Path]) -> None:
    """Every path's first step gives the reference's loss and state; then each path holds a copy of
    its state of its own (the paths' states share arrays as built: one path's donation deletes them)."""
    import equinox as eqx
    import jax

    results = {}
    for name, path in named.items():
        before = path.state
        for _ in range(2):
            path.state = jax.tree_util.tree_map(lambda a: a.copy() if eqx.is_array(a) else a, before)
            if name not in results:
                loss = path.call()
                params = eqx.filter(path.unpack(path.state), eqx.is_array)
                results[name] = (np.asarray(loss), [np.asarray(a) for a in jax.tree_util.tree_leaves(params)])
    ref_loss, ref_leaves = next(iter(results.values()))
    for name, (loss, got) in results.items():
        if len(got) != len(ref_leaves) or not np.allclose(loss, ref_loss, rtol=1e-5, atol=1e-6):
            raise SystemExit(f"{name} does not compute the reference's result (loss {loss} vs {ref_loss})")
        for a, b in zip(got, ref_leaves):
            if a.shape != b.shape or not np.allclose(a, b, rtol=1e-5, atol=1e-6):
                raise SystemExit(f"{name}'s new state differs from the reference's")


def summary(values: Any) -> dict[str, float]:
    q25, med, q75 = np.percentile(np.asarray(values, dtype=float), [25, 50, 75])
    return {"median": float(med), "q25": float(q25), "q75": float(q75)}


def run_case(family: str, case: str, a: argparse.Namespace) -> list[dict[str, Any]]:
    import jax

    from jaxperf import timing
    from jaxperf.timing_config import TimingConfig

    kind, size, step = case.split(":")
    named, leaves = paths(family, step, kind, int(size), a.donated)
    check_same(named)
    ref = next(iter(named))
    for path in named.values():  # compile and warm, then size a round to --round-ms of the reference
        for _ in range(3):
            jax.block_until_ready(path.call())
    start = time.perf_counter()
    for _ in range(5):
        jax.block_until_ready(named[ref].call())
    per_call = (time.perf_counter() - start) / 5
    variants = {name: path.call for name, path in named.items()}
    states = lambda outs: jax.block_until_ready((outs, [p.state for p in named.values()]))  # noqa: E731
    out = []
    for number in a.calls or [int(max(3, min(500, round(a.round_ms / 1e3 / per_call))))]:
        config = TimingConfig(warmup=1, repeats=a.rounds, number=number)
        rows = timing.compare(variants, config, sync=states)
        host = timing.host_column(rows)
        table = {name: rows[rows["variant"] == name].sort_values("repeat") for name in named}
        for name, mine in table.items():
            base = table[ref]
            row = {
                "family": family,
                "case": case,
                "leaves": leaves,
                "path": name,
                "reference": ref,
                "donated": a.donated,
                "rounds": int(len(mine)),
                "calls_per_round": number,
                # it/s ratio per round: the reference's time per call over the path's
                "pipelined_ratio": summary(mine["loop_it_per_s"].values / base["loop_it_per_s"].values),
                "blocked_ratio": summary(mine["it_per_s"].values / base["it_per_s"].values),
                "host_ratio": summary(base[host].values / mine[host].values),
                "host_us": summary(1e6 * mine[host].values),
                "host_measure": timing.host_measure(rows),
                "pipelined_us": summary(1e6 / mine["loop_it_per_s"].values),
                "enqueue_us": summary(1e6 * mine["dispatch_s_per_call"].values),
                "blocked_us": summary(1e6 * mine["wall_s_per_call"].values),
                # per round, in round order: what the summaries above are made of
                "per_round_us": {
                    "pipelined": (1e6 / mine["loop_it_per_s"].values).round(2).tolist(),
                    "enqueue": (1e6 * mine["dispatch_s_per_call"].values).round(2).tolist(),
                    "host": (1e6 * mine[host].values).round(2).tolist(),
                    "blocked": (1e6 * mine["wall_s_per_call"].values).round(2).tolist(),
                },
            }
            out.append(row)
            p, b, h = row["pipelined_ratio"], row["blocked_ratio"], row["host_us"]
            print(
                f"  {name:20s} pipelined {p['median']:6.3f}x [{p['q25']:.3f}, {p['q75']:.3f}]  blocked "
                f"{b['median']:6.3f}x [{b['q25']:.3f}, {b['q75']:.3f}]  host {h['median']:8.1f} us "
                f"[{h['q25']:.1f}, {h['q75']:.1f}]  pipelined {row['pipelined_us']['median']:8.1f} us/call "
                f"({number} calls a round)",
                flush=True,
            )
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--cases", default=CASES, help=f"model:layers:step, comma-separated (default {CASES})")
    p.add_argument("--family", default="jit,pmap", help="jit, pmap or both (default)")
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--round-ms", type=float, default=40.0, help="a round's length per path, about")
    p.add_argument(
        "--calls",
        type=lambda v: [int(n) for n in v.split(",")],
        help="calls per round, one or several (3,30,100): each is timed (default: sized by --round-ms)",
    )
    p.add_argument("--donated", action="store_true", help="donate the state (undonated by default)")
    p.add_argument("--json", help="write the numbers here")
    a = p.parse_args()
    import jax

    families = a.family.split(",")
    if not set(families) <= {"jit", "pmap"}:
        p.error(f"--family={a.family!r}: expected jit, pmap or jit,pmap")
    for case in a.cases.split(","):
        parts = case.split(":")
        if (
            len(parts) != 3
            or parts[0] not in ("transformer", "cnn", "mlp")
            or parts[2] not in ("noop", "train")
        ):
            p.error(f"--cases: {case!r} is not model:layers:step (transformer|cnn|mlp, noop|train)")
    print(
        f"jax {jax.__version__}, python {sys.version.split()[0]}, {jax.local_device_count()} "
        f"{jax.devices()[0].platform} device(s); {a.rounds} rounds",
        flush=True,
    )
    results = []
    for family in families:
        for case in a.cases.split(","):
            print(f"{family} {case}{' donated' if a.donated else ''}:", flush=True)
            results += run_case(family, case, a)
    if a.json:
        os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
        with open(a.json, "w") as f:
            json.dump(
                {
                    "jax": jax.__version__,
                    "python": sys.version.split()[0],
                    "platform": jax.devices()[0].platform,
                    "devices": jax.local_device_count(),
                    "results": results,
                },
                f,
                indent=1,
            )


if __name__ == "__main__":
    main()
