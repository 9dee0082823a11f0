"""The seed's whole loop, timed per method at a swept loader cost.

equinox#192's loop is ``for x in tqdm(loader): x = shard_over_devices(x); loss, model,
opt_state = step(model, x, opt_state)``. Its rate depends on whether the step's call
returns before the step has run: if it does, the loader's host work for the next batch
overlaps the device running this one (it/s about ``1 / max(H, D)``, H the loader's and
the transfer's host time per batch, D the step's device time); if the call waits, they
add up (``1 / (H + D)``).

:func:`run` builds each method of :class:`LoopConfig` on one device
(:func:`jaxperf.dispatch.runahead.methods.build`), proves that each computes the same (loss,
params, opt_state) as ``jax.jit`` on params on a first batch through the same
``place_batch``/``step_on`` path the loop uses, then times, interleaved per repeat: the
step alone (``jax.jit``'s pipelined calls on a placed batch: D), for each loader cost the
loader and transfer alone (H), and the loop of every method, in an order rotated from
repeat to repeat. Loader costs are fractions of the train step's D, measured first.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
import pandas as pd

from ... import timing
from ..methods import Runner
from ..sweep import same_result
from . import loader as loaders
from . import methods as study_methods
from .config import LOADER_ALONE, REFERENCE, STEP_ALONE, LoopConfig
from .config import SLOW as SLOW


@dataclass
class LoopResult:
    timings: pd.DataFrame  # one row per (step, cost, variant, repeat); variant = method or an "alone" part
    checks: pd.DataFrame  # one row per (step, method): proved equal to jax.jit on params
    base_step_ms: float  # the device time the loader costs are fractions of
    pass_ms: float  # one pass of the loader's work, alone


def _time_loop(runner: Runner, batches: loaders.Loader) -> float:
    """Seconds per iteration of ``for x in loader: x = place(x); out = step(x)``, ending
    when the last step has finished."""
    out = None
    start = time.perf_counter()
    for x_host in batches:
        out = runner.step_on(runner.place_batch(x_host))
    timing.block(out)
    return (time.perf_counter() - start) / len(batches)


def _time_loader(runner: Runner, batches: loaders.Loader) -> float:
    """Seconds per batch of the loader and the transfer alone (no step)."""
    placed = None
    start = time.perf_counter()
    for x_host in batches:
        placed = runner.place_batch(x_host)
    timing.block(placed)
    return (time.perf_counter() - start) / len(batches)


def _time_step(runner: Runner, x: Any, calls: int) -> float:
    """Seconds per call of back-to-back steps on one placed batch, blocked once at the end:
    the step's device time when it is well above the host time of a call."""
    out = None
    start = time.perf_counter()
    for _ in range(calls):
        out = runner.step_on(x)
    timing.block(out)
    return (time.perf_counter() - start) / calls


def build_step(config: LoopConfig, step: str) -> tuple[dict[str, Runner], list[dict[str, Any]]]:
    """Every method of ``config`` for ``step`` on one device, each proved to compute the same
    (loss, params, opt_state) as jax.jit on params on a first batch; the check rows. A method
    other than the reference that cannot be built or run here (say, a patch that does not apply
    to this Equinox) is left out with its error in its row; a wrong result raises."""
    spec = config.spec
    model, opt_state = spec.build()
    first = loaders.make_pool((config.batch, config.width), size=1, seed=7)[0]
    x = jax.numpy.asarray(first)
    runners, checks, reference = {}, [], None
    for method in (REFERENCE, *[m for m in config.methods if m != REFERENCE]):
        row: dict[str, Any] = {"step": step, "method": method, "same_as": REFERENCE}
        try:
            runner = study_methods.build(method, step, model, opt_state, x, 1, donate=config.donate)
            got = runner.canonical(runner.step_on(runner.place_batch(first)))
        except Exception as err:  # noqa: BLE001 -- recorded; the reference's failure is not
            if method == REFERENCE:
                raise
            checks.append({**row, "same_result": None, "error": f"{type(err).__name__}: {err}"[:300]})
            continue
        reference = got if reference is None else reference
        if not same_result(reference, got):
            raise AssertionError(
                f"method {method!r} does not compute the same pytree as {REFERENCE!r} ({step})"
            )
        runners[method] = runner
        checks.append({**row, "same_result": True, "error": ""})
    return runners, checks


def run(
    config: LoopConfig,
    *,
    progress: Any = None,
    log: Callable[[str], None] | None = None,
    deadline_s: float | None = None,
) -> LoopResult:
    """Build and check every method for every step, measure the train step's device time,
    then time the loops (module docstring). ``progress`` is advanced once per timed loop;
    with ``deadline_s``, no repeat starts later than that many seconds after the call (at
    least one runs), so a time-boxed run keeps whole, interleaved repeats."""
    started = time.perf_counter()
    built = {step: build_step(config, step) for step in config.steps}
    checks = pd.DataFrame([row for _, rows in built.values() for row in rows])
    pass_s = loaders.calibrate()
    pool = loaders.make_pool((config.batch, config.width))
    placed = {step: runners[REFERENCE].place_batch(pool[0]) for step, (runners, _) in built.items()}
    base_step = "train" if "train" in config.steps else config.steps[0]
    base_runner = built[base_step][0][REFERENCE]
    _time_step(base_runner, placed[base_step], max(config.batches, 4))  # warm
    base_s = float(np.median([_time_step(base_runner, placed[base_step], config.batches) for _ in range(3)]))
    if log:
        log(f"seed loop: {base_step} step alone {1e3 * base_s:.2f} ms, one loader pass {1e6 * pass_s:.1f} us")
    costs = [(f, loaders.passes_for(f * base_s, pass_s)) for f in config.cost_fractions]
    for runners, _ in built.values():
        for runner in runners.values():
            for _ in range(config.warmup):
                _time_loop(runner, loaders.Loader(pool, costs[-1][1], 2))
    rows = []
    for repeat in range(config.repeats):
        if repeat and deadline_s is not None and time.perf_counter() - started > deadline_s:
            if log:
                log(
                    f"seed loop: stopped after {repeat} of {config.repeats} repeats (deadline {deadline_s:.0f} s)"
                )
            break
        for step, (runners, _) in built.items():
            ref = runners[REFERENCE]
            row = {"step": step, "repeat": repeat, "batches": config.batches}
            rows.append(
                {
                    **row,
                    "cost_fraction": np.nan,
                    "passes": 0,
                    "variant": STEP_ALONE,
                    "position": -1,
                    "s_per_batch": _time_step(ref, placed[step], config.batches),
                }
            )
            names = list(runners)
            shift = repeat % len(names)
            order = names[shift:] + names[:shift]
            for fraction, passes in costs:
                cell = {**row, "cost_fraction": fraction, "passes": passes}
                batches = loaders.Loader(pool, passes, config.batches)
                rows.append(
                    {
                        **cell,
                        "variant": LOADER_ALONE,
                        "position": -1,
                        "s_per_batch": _time_loader(ref, batches),
                    }
                )
                for position, name in enumerate(order):
                    seconds = _time_loop(runners[name], loaders.Loader(pool, passes, config.batches))
                    rows.append({**cell, "variant": name, "position": position, "s_per_batch": seconds})
                    if progress is not None:
                        progress.update(1)
    timings = pd.DataFrame(rows)
    timings["it_per_s"] = 1.0 / timings["s_per_batch"]
    timings["loader_ms_target"] = timings["cost_fraction"] * base_s * 1e3
    return LoopResult(timings, checks, 1e3 * base_s, 1e3 * pass_s)


def timed_loops(config: LoopConfig) -> int:
    """How many method loops :func:`run` times (for a progress bar)."""
    return config.repeats * len(config.steps) * len(config.cost_fractions) * len(config.methods)
