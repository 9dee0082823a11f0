"""``jaxperf.cached_nnx_jit`` against ``jax.jit`` on ``nnx.split`` state, in the seed's loop, on steps
written as Flax's docs write them; interleaved in one process, in several fresh processes.

    python tools/bench_nnx.py [--depths 1,10,100] [--steps loss,train,train_donated]
        [--processes 3] [--rounds 7] [--seconds 1.0] [--min-calls 50] [--json PATH]

The model: an MLP of ``depth`` ``nnx.Linear(4, 4)`` layers with ReLU between them (the depths of
Flax's ``benchmarks/nnx_graph_overhead.py``), an ``nnx.Optimizer`` over ``optax.adam`` and an
``nnx.MultiMetric``, a batch of 8. The steps:

- ``loss``: a held-out loss, no update (``loss_step(model, x, y)``);
- ``train``: Flax's performance guide (``docs_nnx/guides/performance.md``) as written:
  ``nnx.value_and_grad``, ``optimizer.update(model, grads)``, ``metrics.update(loss=loss)``;
- ``train_donated``: the same, the state donated (``donate_argnums``).

The reference is the guide's functional loop: ``graphdef, state = nnx.split(...)`` once, then a
``jax.jit`` step ``(graphdef, state, x, y)`` that merges, steps and returns ``nnx.state(...)``.
Each path first shows it computes the other's loss and next state from the same state. Then
rounds, the two paths in alternating order: a loop of at least ``--min-calls`` calls and
``--seconds`` seconds, each call fed the previous one's state (``cached_nnx_jit`` updates the
objects in place; the reference's returned state is passed on), blocked once at its end. Per
call: ``host_us``, the dispatching thread's CPU time (``time.thread_time``) over the loop, and
``loop_us``, the wall time, the final wait included. A process's ratio is the median over rounds
of ``cached_nnx_jit`` / ``jax.jit`` within a round; printed and written (``--json``): its median
and range over processes, with every round, the versions, the commit and the fix's git blob.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import subprocess
import sys
import time
from typing import Any

import numpy as np

PATHS = ("jax.jit on split state", "cached_nnx_jit")
STEPS = ("loss", "train", "train_donated")


def build(depth: int) -> tuple[Any, ...]:
    """``(model, optimizer, metrics, x, y)``, the same values on every call."""
    import jax
    import optax
    from flax import nnx

    class MLP(nnx.Module):
        def __init__(self, depth: int, width: int, *, rngs: nnx.Rngs) -> None:
            self.layers = nnx.List([nnx.Linear(width, width, rngs=rngs) for _ in range(depth)])

        def __call__(self, x: Any) -> Any:
            for i, layer in enumerate(self.layers):
                x = layer(x if i == 0 else nnx.relu(x))
            return x

    model = MLP(depth, 4, rngs=nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    metrics = nnx.MultiMetric(loss=nnx.metrics.Average("loss"))
    kx, ky = jax.random.split(jax.random.key(1))
    return model, optimizer, metrics, jax.random.normal(kx, (8, 4)), jax.random.normal(ky, (8, 4))


def loss_step(model: Any, x: Any, y: Any) -> Any:
    return ((model(x) - y) ** 2).mean()


def train_step(model: Any, optimizer: Any, metrics: Any, x: Any, y: Any) -> Any:
    from flax import nnx

    def loss_fn(model: Any) -> Any:
        y_pred = model(x)  # call methods directly
        return ((y_pred - y) ** 2).mean()

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)  # in-place updates
    metrics.update(loss=loss)
    return loss


def paths(step: str, depth: int) -> dict[str, tuple[Any, Any]]:
    """Per path, ``(call, state)``: ``call(state) -> (loss, next state)``; built apart (nothing shared)."""
    import jax
    from flax import nnx

    import jaxperf

    model, optimizer, metrics, x, y = build(depth)
    objects = build(depth)[:3]
    if step == "loss":
        graphdef, state = nnx.split(model)

        @jax.jit
        def jax_loss_step(graphdef: Any, state: Any, x: Any, y: Any) -> Any:
            return loss_step(nnx.merge(graphdef, state), x, y)

        mine = jaxperf.cached_nnx_jit(loss_step)
        return {
            PATHS[0]: (lambda s: (jax_loss_step(graphdef, s, x, y), s), state),
            PATHS[1]: (lambda m: (mine(m, x, y), m), objects[0]),
        }
    graphdef, state = nnx.split((model, optimizer, metrics))

    def jax_train_step(graphdef: Any, state: Any, x: Any, y: Any) -> Any:
        model, optimizer, metrics = nnx.merge(graphdef, state)
        loss = train_step(model, optimizer, metrics, x, y)
        return loss, nnx.state((model, optimizer, metrics))

    donated = step == "train_donated"
    ref = jax.jit(jax_train_step, donate_argnums=1 if donated else ())
    mine = jaxperf.cached_nnx_jit(train_step, **({"donate_argnums": (0, 1, 2)} if donated else {}))
    return {
        PATHS[0]: (lambda s: ref(graphdef, s, x, y), state),
        PATHS[1]: (lambda objs: (mine(*objs, x, y), objs), objects),
    }


def _leaves(state: Any) -> list:
    import jax
    from flax import nnx

    if not isinstance(state, nnx.State):
        state = nnx.state(state)
    keys = jax.dtypes.prng_key
    return [
        np.asarray(jax.random.key_data(a) if jax.dtypes.issubdtype(a.dtype, keys) else a)
        for a in jax.tree.leaves(state)
    ]


def check_same(named: dict[str, tuple[Any, Any]]) -> dict[str, Any]:
    """One step of each path from the same state: the same loss and next state (or SystemExit);
    each path's state after that step."""
    got, states = {}, {}
    for name, (call, state) in named.items():
        loss, states[name] = call(state)
        got[name] = (np.asarray(loss), _leaves(states[name]))
    (ref_loss, ref_state), (loss, state) = got.values()
    if not np.allclose(loss, ref_loss, rtol=1e-6) or len(state) != len(ref_state):
        raise SystemExit(
            f"cached_nnx_jit's loss {loss} or its state's size differs from jax.jit's ({ref_loss})"
        )
    for a, b in zip(state, ref_state):
        if a.shape != b.shape or not np.allclose(a, b, rtol=1e-6, atol=1e-7):
            raise SystemExit("cached_nnx_jit's next state differs from jax.jit's")
    return states


def loop(call: Any, state: Any, seconds: float, min_calls: int) -> tuple[Any, float, float, int]:
    """The seed's loop: calls fed the previous state, blocked once at the end. The new state, host
    CPU and wall time per call (s), and the number of calls."""
    import jax

    calls, wall0, cpu0 = 0, time.perf_counter(), time.thread_time()
    deadline = wall0 + seconds
    while calls < min_calls or time.perf_counter() < deadline:
        for _ in range(10):
            loss, state = call(state)
        calls += 10
    cpu = time.thread_time() - cpu0
    jax.block_until_ready((loss, state))
    wall = time.perf_counter() - wall0
    return state, cpu / calls, wall / calls, calls


def one_process(a: argparse.Namespace) -> list[dict[str, Any]]:
    import jax

    rows = []
    for depth in a.depths:
        for step in a.steps:
            named = paths(step, depth)
            states = check_same(named)
            for name, (call, _) in named.items():  # compile done; warm
                states[name] = loop(call, states[name], 0.1, 20)[0]
            for r in range(a.rounds):
                for name in PATHS if r % 2 == 0 else PATHS[::-1]:
                    states[name], cpu, wall, calls = loop(
                        named[name][0], states[name], a.seconds, a.min_calls
                    )
                    row = {"depth": depth, "step": step, "path": name, "round": r, "calls": calls}
                    rows.append({**row, "host_us": 1e6 * cpu, "loop_us": 1e6 * wall})
            del named, states
            jax.clear_caches()
    return rows


def provenance() -> dict[str, Any]:
    import jax

    def git(*args: str) -> str:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the checkout, not tools/
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True).stdout.strip()

    import jaxperf.fixes._nnx as fix

    packages = ("jax", "jaxlib", "flax", "optax", "numpy")
    return {
        "versions": {p: importlib.metadata.version(p) for p in packages},
        "python": sys.version.split()[0],
        "backend": jax.devices()[0].platform,
        "devices": jax.local_device_count(),
        "cpus": os.cpu_count(),
        # the code that ran: the commit, whether tracked code outside results/ differed from it,
        # and the fix's file as a git blob (git log --find-object=<blob> names its commits)
        "git": {
            "commit": git("rev-parse", "HEAD"),
            "dirty": bool(git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!results")),
            "fix_blob": git("hash-object", fix.__file__),
        },
        "ran_utc": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }


def summarise(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per depth and step: per process, the median over rounds of each path's time per call and
    of the ratio within a round; then that ratio's median and range over processes."""
    out = []
    for depth, step in sorted(
        {(r["depth"], r["step"]) for r in rows}, key=lambda k: (k[0], STEPS.index(k[1]))
    ):
        case = [r for r in rows if (r["depth"], r["step"]) == (depth, step)]
        entry: dict[str, Any] = {"depth": depth, "step": step}
        for col in ("host_us", "loop_us"):
            ratios, medians = [], {p: [] for p in PATHS}
            for proc in sorted({r["process"] for r in case}):
                mine = {
                    p: [
                        r[col]
                        for r in sorted(case, key=lambda r: r["round"])
                        if r["process"] == proc and r["path"] == p
                    ]
                    for p in PATHS
                }
                for p in PATHS:
                    medians[p].append(round(float(np.median(mine[p])), 2))
                ratios.append(float(np.median(np.divide(mine[PATHS[1]], mine[PATHS[0]]))))
            entry[col] = medians  # per path, per process
            entry[col.replace("_us", "_ratio")] = {
                "median": round(float(np.median(ratios)), 3),
                "min": round(min(ratios), 3),
                "max": round(max(ratios), 3),
                "per_process": [round(v, 3) for v in ratios],
            }
        out.append(entry)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ints = lambda v: [int(n) for n in v.split(",")]  # noqa: E731
    p.add_argument("--depths", type=ints, default=[1, 10, 100])
    p.add_argument("--steps", type=lambda v: v.split(","), default=list(STEPS))
    p.add_argument(
        "--processes", type=int, default=3, help="fresh processes (0: this one, once; JSON rows out)"
    )
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--seconds", type=float, default=1.0, help="a loop's least length")
    p.add_argument("--min-calls", type=int, default=50, help="a loop's least number of calls")
    p.add_argument("--json", help="write the numbers here (only once every process has run)")
    a = p.parse_args()
    if not set(a.steps) <= set(STEPS):
        p.error(f"--steps={','.join(a.steps)!r}: expected some of {', '.join(STEPS)}")
    if min(a.depths) < 1 or a.rounds < 1 or a.processes < 0:
        p.error("--depths, --rounds: at least 1; --processes: at least 0")
    if a.processes == 0:
        print(json.dumps(one_process(a)))
        return
    rows = []
    for proc in range(a.processes):
        child = [sys.executable, os.path.abspath(__file__), *sys.argv[1:], "--processes", "0"]
        done = subprocess.run(child, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"process {proc} failed:\n{done.stderr[-3000:]}")
        rows += [{**r, "process": proc} for r in json.loads(done.stdout.strip().splitlines()[-1])]
        print(f"process {proc + 1} of {a.processes} done", file=sys.stderr, flush=True)
    result = {**provenance(), "arguments": vars(a), "summary": summarise(rows), "rounds": rows}
    print(f"{result['backend']}, {result['versions']}, {a.processes} processes, {a.rounds} rounds each")
    for s in result["summary"]:
        h, w = s["host_ratio"], s["loop_ratio"]
        print(
            f"depth {s['depth']:3d} {s['step']:13s} cached_nnx_jit / jax.jit: host {h['median']:.3f}x "
            f"[{h['min']:.3f}, {h['max']:.3f}], loop {w['median']:.3f}x [{w['min']:.3f}, {w['max']:.3f}]"
        )
    if a.json:
        os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
