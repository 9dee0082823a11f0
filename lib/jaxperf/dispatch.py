"""The dispatch study (equinox issue #192): methods, steps, sweep, breakdown.

Each *method* turns a step function ``step(model, x, opt_state) -> (loss,
model, opt_state)`` into a zero-argument callable that runs one step on fixed
inputs spread over ``n`` devices, plus a ``canonical`` function that maps its
raw output to (loss, params, opt_state) on one device, so that every method
can be proved to compute the same thing before it is timed.
"""

from __future__ import annotations

import cProfile
import pstats
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from . import timing
from .cached_pmap import cached_filter_pmap
from .errors import bad_value, check_choice, check_int
from .models import ModelSpec, adam_update, count_leaves

AXIS = "devices"
BASELINE = "pmap_params"

#: method id -> label used in figures and tables
METHODS: dict[str, str] = {
    "filter_pmap": "eqx.filter_pmap (whole model)",
    "pmap_params": "jax.pmap on params (partition once)",
    "pmap_static_argnums": "jax.pmap, static_broadcasted_argnums",
    "cached_filter_pmap": "jaxperf.cached_filter_pmap (the fix)",
    "jit_named_sharding": "jax.jit + NamedSharding",
    "filter_jit_shard": "eqx.filter_jit + eqx.filter_shard",
    "jit_shard_map": "jax.jit(jax.shard_map)",
    "jit_single_device": "jax.jit on 1 device (floor)",
}
STEPS = ("noop", "train")


# ---------------------------------------------------------------- steps


def noop_step(model: Any, x: jax.Array, opt_state: Any) -> tuple[Any, Any, Any]:
    """The seed's step from equinox#192: touches nothing, returns its inputs."""
    return 0.0, model, opt_state


def make_train_step(axis_name: str | None) -> Callable:
    """Loss, grads, (pmean over ``axis_name`` if given), Adam update."""

    def train_step(model, x, opt_state):
        def loss_fn(m):
            return jnp.mean((jax.vmap(m)(x) - x) ** 2)

        loss, grads = eqx.filter_value_and_grad(loss_fn)(model)
        if axis_name is not None:
            loss, grads = jax.lax.pmean((loss, grads), axis_name)
        model, opt_state = adam_update(model, grads, opt_state)
        return loss, model, opt_state

    return train_step


def get_step(step: str, axis_name: str | None) -> Callable:
    check_choice("step", step, STEPS)
    return noop_step if step == "noop" else make_train_step(axis_name)


# ---------------------------------------------------------------- placement


def _stack(tree: Any, n: int) -> Any:
    return jax.tree.map(lambda a: jnp.broadcast_to(a, (n, *a.shape)) if eqx.is_array(a) else a, tree)


def _pmap_place(tree: Any, n: int) -> Any:
    """Put a leading-axis-``n`` pytree where jax.pmap wants it, so no call reshards."""
    dynamic, static = eqx.partition(tree, eqx.is_array)
    return eqx.combine(jax.pmap(lambda t: t, devices=jax.devices()[:n])(dynamic), static)


def _shard_batch(x: jax.Array, n: int) -> jax.Array:
    return x.reshape(n, x.shape[0] // n, *x.shape[1:])


@dataclass
class Runner:
    """A method ready to time: ``call()`` runs ``fn(*args)``, one step;
    ``canonical`` maps its output to (loss, params, opt_state) on one device."""

    method: str
    fn: Callable[..., Any]
    args: tuple
    canonical: Callable[[Any], tuple[Any, Any, Any]]

    def call(self) -> Any:
        return self.fn(*self.args)


def _first(tree: Any) -> Any:
    return jax.tree.map(lambda a: np.asarray(a)[0], tree)


def _canonical_mapped(out: Any) -> tuple[Any, Any, Any]:
    loss, model, opt = out
    return np.asarray(loss).reshape(-1)[0], _first(eqx.filter(model, eqx.is_array)), _first(opt)


def _canonical_global(out: Any) -> tuple[Any, Any, Any]:
    loss, model, opt = out
    host = lambda t: jax.tree.map(np.asarray, t)  # noqa: E731
    return np.asarray(loss).reshape(-1)[0], host(eqx.filter(model, eqx.is_array)), host(opt)


def build_runner(method: str, step: str, model: Any, opt_state: Any, x: jax.Array, n_devices: int) -> Runner:
    """Build ``method`` for ``step`` on (model, opt_state, global batch x) over ``n_devices``."""
    check_choice("method", method, METHODS)
    check_int("n_devices", n_devices, minimum=1)
    if n_devices > jax.device_count():
        raise bad_value("n_devices", n_devices, f"at most {jax.device_count()} (devices present)")
    if x.shape[0] % n_devices:
        raise bad_value("x.shape[0]", x.shape[0], f"a multiple of n_devices={n_devices}")
    devices = jax.devices()[:n_devices]
    mapped_step = get_step(step, AXIS)
    global_step = get_step(step, None)

    if method in ("filter_pmap", "cached_filter_pmap", "pmap_params", "pmap_static_argnums"):
        model_r = _pmap_place(_stack(model, n_devices), n_devices)
        opt_r = _pmap_place(_stack(opt_state, n_devices), n_devices)
        x_r = _pmap_place(_shard_batch(x, n_devices), n_devices)
        if method == "filter_pmap":
            fn = eqx.filter_pmap(mapped_step, axis_name=AXIS)
            return Runner(method, fn, (model_r, x_r, opt_r), _canonical_mapped)
        if method == "cached_filter_pmap":
            fn = cached_filter_pmap(mapped_step, axis_name=AXIS)
            return Runner(method, fn, (model_r, x_r, opt_r), _canonical_mapped)
        params, static = eqx.partition(model_r, eqx.is_array)
        if method == "pmap_params":

            def on_params(p, xb, o):
                loss, m, o = mapped_step(eqx.combine(p, static), xb, o)
                return loss, eqx.filter(m, eqx.is_array), o

            fn = jax.pmap(on_params, axis_name=AXIS, devices=devices)
            return Runner(
                method,
                fn,
                (params, x_r, opt_r),
                lambda out: _canonical_mapped((out[0], eqx.combine(out[1], static), out[2])),
            )

        def with_static(p, s, xb, o):
            loss, m, o = mapped_step(eqx.combine(p, s), xb, o)
            return loss, eqx.filter(m, eqx.is_array), o

        fn = jax.pmap(with_static, axis_name=AXIS, static_broadcasted_argnums=(1,), devices=devices)
        return Runner(
            method,
            fn,
            (params, static, x_r, opt_r),
            lambda out: _canonical_mapped((out[0], eqx.combine(out[1], static), out[2])),
        )

    if method == "jit_single_device":
        dev = devices[0]
        params, static = eqx.partition(model, eqx.is_array)
        params, opt1, x1 = jax.device_put((params, opt_state, x), dev)

        @jax.jit
        def single(p, xb, o):
            loss, m, o = global_step(eqx.combine(p, static), xb, o)
            return loss, eqx.filter(m, eqx.is_array), o

        return Runner(
            method,
            single,
            (params, x1, opt1),
            lambda out: _canonical_global((out[0], eqx.combine(out[1], static), out[2])),
        )

    mesh = Mesh(np.array(devices), (AXIS,))
    replicated, batch_sharded = NamedSharding(mesh, P()), NamedSharding(mesh, P(AXIS))
    x_s = jax.device_put(x, batch_sharded)
    opt_s = jax.device_put(opt_state, replicated)
    if method == "filter_jit_shard":
        model_s = eqx.filter_shard(model, replicated)

        @eqx.filter_jit
        def sharded(m, xb, o):
            m, o = eqx.filter_shard((m, o), replicated)
            xb = eqx.filter_shard(xb, batch_sharded)
            loss, m, o = global_step(m, xb, o)
            return loss, *eqx.filter_shard((m, o), replicated)

        return Runner(method, sharded, (model_s, x_s, opt_s), _canonical_global)

    params, static = eqx.partition(model, eqx.is_array)
    params = jax.device_put(params, replicated)
    if method == "jit_named_sharding":

        def global_on_params(p, xb, o):
            loss, m, o = global_step(eqx.combine(p, static), xb, o)
            return loss, eqx.filter(m, eqx.is_array), o

        fn = jax.jit(
            global_on_params,
            in_shardings=(replicated, batch_sharded, replicated),
            out_shardings=(replicated, replicated, replicated),
        )
    else:  # jit_shard_map

        def local_on_params(p, xb, o):
            loss, m, o = mapped_step(eqx.combine(p, static), xb, o)
            return loss, eqx.filter(m, eqx.is_array), o

        # check_vma=False keeps pmap's semantics: with it on, the gradient of a
        # replicated (P()) parameter is already psum-ed over devices, and the
        # step's pmean would leave an 8x larger gradient than pmap's.
        fn = jax.jit(
            jax.shard_map(
                local_on_params,
                mesh=mesh,
                in_specs=(P(), P(AXIS), P()),
                out_specs=(P(), P(), P()),
                check_vma=False,
            )
        )
    return Runner(
        method,
        fn,
        (params, x_s, opt_s),
        lambda out: _canonical_global((out[0], eqx.combine(out[1], static), out[2])),
    )


# ---------------------------------------------------------------- correctness


def same_result(a: Any, b: Any, rtol: float = 1e-5, atol: float = 1e-6) -> bool:
    """Pytree equality: same structure, allclose leaves."""
    la, ta = jax.tree.flatten(a)
    lb, tb = jax.tree.flatten(b)
    return ta == tb and all(
        np.shape(x) == np.shape(y) and np.allclose(x, y, rtol=rtol, atol=atol) for x, y in zip(la, lb)
    )


def check_runners(runners: dict[str, Runner], reference: str = "filter_pmap") -> None:
    """Raise AssertionError naming the first method whose result differs from ``reference``."""
    ref = runners[reference].canonical(runners[reference].call())
    for name, runner in runners.items():
        got = runner.canonical(runner.call())
        if not same_result(ref, got):
            raise AssertionError(f"method {name!r} does not compute the same pytree as {reference!r}")


# ---------------------------------------------------------------- sweep


def _check_methods_and_steps(methods: list[str], steps: list[str]) -> None:
    """Known methods including the baseline, and a non-empty list of known steps."""
    if not steps:
        raise bad_value("steps", steps, f"a non-empty list drawn from {list(STEPS)}")
    for s in steps:
        check_choice("steps[...]", s, STEPS)
    for m in methods:
        check_choice("methods[...]", m, METHODS)
    if BASELINE not in methods:
        raise bad_value("methods", methods, f"a list that includes the baseline {BASELINE!r}")


@dataclass
class SweepResult:
    timings: pd.DataFrame  # one row per (step, model, method, repeat)
    failures: pd.DataFrame  # methods that could not run a model, with the error


def sweep(
    specs: list[ModelSpec],
    methods: list[str],
    steps: list[str],
    n_devices: int,
    config: timing.TimingConfig,
    progress: Any = None,
) -> SweepResult:
    """For each step and model: build every method, prove equal outputs, then time them interleaved."""
    _check_methods_and_steps(methods, steps)
    frames, failures = [], []
    for step in steps:
        for spec in specs:
            model, opt_state = spec.build()
            x = spec.batch(n_devices)
            leaves = count_leaves(model, x, opt_state)
            runners = {}
            for method in methods:
                try:
                    runners[method] = build_runner(method, step, model, opt_state, x, n_devices)
                    timing.block(runners[method].call())  # compile now, and surface errors here
                except Exception as err:  # noqa: BLE001 -- recorded, shown in the notebook
                    runners.pop(method, None)
                    failures.append(
                        {
                            "step": step,
                            "model": spec.name,
                            "method": method,
                            "error": f"{type(err).__name__}: {str(err).splitlines()[0][:300]}",
                        }
                    )
            check_runners(runners, reference=BASELINE)
            df = timing.compare(
                {m: r.call for m, r in runners.items()},
                config,
                progress=progress,
                step=step,
                model=spec.name,
                kind=spec.kind,
                size=spec.size,
                leaves=leaves,
            )
            frames.append(df)
    timings = pd.concat(frames, ignore_index=True).rename(columns={"variant": "method"})
    return SweepResult(timings, pd.DataFrame(failures, columns=["step", "model", "method", "error"]))


def add_derived(df: pd.DataFrame) -> pd.DataFrame:
    """Microsecond columns and the per-pair it/s ratio to jax.pmap on params."""
    out = df.copy()
    out["wall_us_per_call"] = out["wall_s_per_call"] * 1e6
    out["cpu_us_per_call"] = out["cpu_s_per_call"] * 1e6
    if "dispatch_s_per_call" in out:
        out["dispatch_us_per_call"] = out["dispatch_s_per_call"] * 1e6
    ratios = timing.pair_ratios(
        out.rename(columns={"method": "variant"}), BASELINE, "it_per_s", by=["step", "model"]
    )
    out["ratio_to_pmap_params"] = ratios["ratio"].to_numpy()
    return out


# ---------------------------------------------------------------- where the time goes

BREAKDOWN_STAGES = (
    "axis resolution",
    "partition",
    "ShapeDtypeStruct",
    "cache lookup",
    "inner pmap call (+execution)",
    "combine",
)


def filter_pmap_stages(fn: Any, args: tuple, calls: int = 30) -> pd.DataFrame:
    """Time each stage of ``eqx.filter_pmap``'s call path, mirroring equinox 0.13's
    ``_PmapWrapper._call`` with stage timers. One row per (stage, call), seconds."""
    from equinox._vmap_pmap import (
        _common_preprocess,
        _filter_pmap_cache,
        _named_in_axes,
        _postprocess,
        _resolve_axes,
    )

    check_int("calls", calls, minimum=1)
    rows = []
    for call in range(calls + 3):
        t0 = time.perf_counter()
        dummy = _common_preprocess(fn._axis_size, {})
        in_axes = _named_in_axes(fn._fun, fn._in_axes, args)
        in_axes = (None, _resolve_axes(args, in_axes), 0, None)
        t1 = time.perf_counter()
        dynamic, static = eqx.partition((fn._fun, args, dummy, fn._out_axes), eqx.is_array)
        t2 = time.perf_counter()
        struct = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), dynamic)
        t3 = time.perf_counter()
        cached = _filter_pmap_cache(
            fn._fun, static, struct, in_axes, fn._axis_name, fn._axis_size, fn._pmapkwargs
        )
        t4 = time.perf_counter()
        out = timing.block(cached(dynamic))
        t5 = time.perf_counter()
        _postprocess(out)
        t6 = time.perf_counter()
        if call >= 3:  # warm-up excluded
            for stage, seconds in zip(
                BREAKDOWN_STAGES, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5)
            ):
                rows.append({"stage": stage, "call": call - 3, "seconds": seconds})
    return pd.DataFrame(rows)


def breakdown(
    spec: ModelSpec, step: str, n_devices: int, calls: int = 30, profile_top: int = 15
) -> tuple[pd.DataFrame, pd.DataFrame, float]:
    """Stage times of one filter_pmap call, cProfile's top functions by self time,
    and the median wall time of an ordinary (untimed-stage) call for comparison."""
    model, opt_state = spec.build()
    runner = build_runner("filter_pmap", step, model, opt_state, spec.batch(n_devices), n_devices)
    fn, args = runner.fn, runner.args
    stages = filter_pmap_stages(fn, args, calls)
    plain = timing.compare(
        {"filter_pmap": lambda: fn(*args)},
        timing.TimingConfig(warmup=2, repeats=5, number=max(calls // 5, 1), dispatch_only=False),
    )
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        timing.block(fn(*args))
    profiler.disable()
    stats = pstats.Stats(profiler)
    rows = []
    for (filename, line, func), (_cc, ncalls, tottime, cumtime, _callers) in stats.stats.items():
        rows.append(
            {
                "function": f"{func} ({filename.split('site-packages/')[-1]}:{line})",
                "calls_per_step": ncalls / calls,
                "self_ms_per_step": 1e3 * tottime / calls,
                "cumulative_ms_per_step": 1e3 * cumtime / calls,
            }
        )
    profile = pd.DataFrame(rows).sort_values("self_ms_per_step", ascending=False).head(profile_top)
    return stages, profile.reset_index(drop=True), float(plain["wall_s_per_call"].median())


# ---------------------------------------------------------------- the notebook's plan

# One MLP past 100 leaves and the smallest transformer: every method and both
# steps still run, in about a minute.
QUICK = {
    "mlp_depths": [16],
    "transformer_layers": [1],
    "repeats": 3,
    "calls_per_repeat": 4,
    "warmup": 1,
    "breakdown_calls": 5,
}


@dataclass
class Plan:
    specs: list[ModelSpec]
    steps: list[str]
    methods: list[str]
    timing: timing.TimingConfig
    breakdown_specs: list[ModelSpec]
    breakdown_calls: int


def plan(
    *,
    quick: bool,
    mlp_depths: list[int],
    transformer_layers: list[int],
    steps: list[str],
    methods: list[str],
    warmup: int,
    repeats: int,
    calls_per_repeat: int,
    breakdown_calls: int,
) -> Plan:
    """Validate the notebook's parameters (errors name the parameter) and apply quick mode."""
    from .errors import check_ints

    if not isinstance(quick, bool):
        raise bad_value("quick", quick, "True or False")
    if quick:
        mlp_depths, transformer_layers = QUICK["mlp_depths"], QUICK["transformer_layers"]
        warmup, repeats = QUICK["warmup"], QUICK["repeats"]
        calls_per_repeat, breakdown_calls = QUICK["calls_per_repeat"], QUICK["breakdown_calls"]
    mlp_depths = check_ints("mlp_depths", mlp_depths)
    transformer_layers = check_ints("transformer_layers", transformer_layers) if transformer_layers else []
    _check_methods_and_steps(methods, steps)
    check_int("breakdown_calls", breakdown_calls, minimum=1)
    specs = [ModelSpec("mlp", d) for d in mlp_depths] + [
        ModelSpec("transformer", n) for n in transformer_layers
    ]
    breakdown_specs = [ModelSpec("mlp", d) for d in sorted({min(mlp_depths), max(mlp_depths)})]
    breakdown_specs += [ModelSpec("transformer", n) for n in transformer_layers[:1]]
    return Plan(
        specs=specs,
        steps=list(steps),
        methods=list(methods),
        timing=timing.TimingConfig(warmup=warmup, repeats=repeats, number=calls_per_repeat),
        breakdown_specs=breakdown_specs,
        breakdown_calls=breakdown_calls,
    )


def run_breakdowns(
    specs: list[ModelSpec], step: str, n_devices: int, calls: int
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Stage timers and cProfile for each spec: (stages, profile, whole-call medians)."""
    stages, profiles, totals = [], [], []
    for spec in specs:
        model, opt_state = spec.build()
        leaves = count_leaves(model, spec.batch(n_devices), opt_state)
        s, prof, total = breakdown(spec, step, n_devices, calls)
        stages.append(s.assign(model=spec.name, leaves=leaves))
        profiles.append(prof.assign(model=spec.name, leaves=leaves))
        totals.append(
            {
                "model": spec.name,
                "leaves": leaves,
                "whole_call_ms": 1e3 * total,
                "sum_of_stages_ms": 1e3 * s.groupby("stage")["seconds"].median().sum(),
            }
        )
    return pd.concat(stages, ignore_index=True), pd.concat(profiles, ignore_index=True), pd.DataFrame(totals)
