"""The sweep: for each step and model, build every (method, donated) runner, prove
they compute the same pytree, then time them interleaved."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
import pandas as pd

from .. import timing
from ..fixes.cached_pmap import fallback_counts
from .methods import BASELINE, Runner, build_runner, variant_name
from .models import count_leaves
from .settings import DispatchSettings

FAILURE_COLUMNS = ["step", "model", "method", "donated", "error"]


def same_result(a: Any, b: Any, rtol: float = 1e-5, atol: float = 1e-6) -> bool:
    """Pytree equality: same structure, allclose leaves."""
    la, ta = jax.tree.flatten(a)
    lb, tb = jax.tree.flatten(b)
    ta, tb = str(ta), str(tb)  # treedefs of Equinox modules compare by their text
    return ta == tb and all(
        np.shape(x) == np.shape(y) and np.allclose(x, y, rtol=rtol, atol=atol) for x, y in zip(la, lb)
    )


def check_runners(runners: dict[str, Runner], reference: str = BASELINE) -> None:
    """Call each runner once (from its initial state) and raise AssertionError naming the
    first whose (loss, params, opt_state) differs from ``reference``'s."""
    ref = runners[reference].canonical(runners[reference].call())
    for name, runner in runners.items():
        got = runner.canonical(runner.call())
        if not same_result(ref, got):
            raise AssertionError(f"method {name!r} does not compute the same pytree as {reference!r}")


@dataclass
class SweepResult:
    timings: pd.DataFrame  # one row per (step, model, variant, repeat); variant = method [+donate]
    failures: pd.DataFrame  # (method, donated) pairs that could not run a model, with the error
    fallbacks: dict[str, int]  # calls cached_filter_pmap handed to eqx.filter_pmap, by reason


def sync(tree: Any) -> Any:
    """``timing.block``, for donated runners too: a pipelined loop's list of outputs holds
    a donated runner's earlier states, which the next call consumed (deleted); its last
    output is alive and was computed from all of them, so waiting for it is waiting for all."""
    try:
        return timing.block(tree)
    except jax.errors.JaxRuntimeError:
        if isinstance(tree, list) and tree:
            return timing.block(tree[-1])
        raise


def _error(err: Exception) -> str:
    return f"{type(err).__name__}: {str(err).splitlines()[0][:300] if str(err) else ''}"


def run(settings: DispatchSettings, n_devices: int, progress: Any = None) -> SweepResult:
    """Every step x model x method x donation of ``settings``: built, checked against
    undonated ``jax.pmap`` on params, then timed interleaved (``timing.compare``)."""
    frames, failures = [], []
    fallbacks_before = fallback_counts()
    # The baseline first: every other (method, donation) is checked against its first step.
    pairs = [(BASELINE, False)] + [
        (m, d) for d in settings.donate for m in settings.methods if (m, d) != (BASELINE, False)
    ]
    for step in settings.steps:
        for spec in settings.specs:
            model, opt_state = spec.build()
            x = spec.batch(n_devices)
            leaves = count_leaves(model, x, opt_state)
            runners: dict[str, Runner] = {}
            reference = None
            for method, donated in pairs:
                name = variant_name(method, donated)
                try:  # the first call compiles, surfaces errors, and gives the result to check
                    runner = build_runner(method, step, model, opt_state, x, n_devices, donate=donated)
                    got = runner.canonical(runner.call())
                except Exception as err:  # noqa: BLE001 -- recorded, shown in the notebook
                    row = {"step": step, "model": spec.name, "method": method, "donated": donated}
                    failures.append({**row, "error": _error(err)})
                    if name == BASELINE:
                        break
                    continue
                reference = got if reference is None else reference
                if not same_result(reference, got):
                    raise AssertionError(f"method {name!r} does not compute the same pytree as {BASELINE!r}")
                runners[name] = runner
            if BASELINE not in runners:
                raise RuntimeError(
                    f"the baseline {BASELINE!r} could not run {spec.name}: {failures[-1]['error']}"
                )
            if False not in settings.donate:  # built as the reference only
                runners.pop(BASELINE)
            df = timing.compare(
                {name: r.call for name, r in runners.items()},
                settings.timing,
                sync=sync,
                progress=progress,
                step=step,
                model=spec.name,
                kind=spec.kind,
                size=spec.size,
                leaves=leaves,
            )
            df.insert(
                df.columns.get_loc("variant") + 1,
                "method",
                df["variant"].map({n: r.method for n, r in runners.items()}),
            )
            df.insert(
                df.columns.get_loc("method") + 1,
                "donated",
                df["variant"].map({n: r.donated for n, r in runners.items()}),
            )
            frames.append(df)
    after = fallback_counts()
    fallbacks = {
        k: n - fallbacks_before.get(k, 0) for k, n in after.items() if n > fallbacks_before.get(k, 0)
    }
    return SweepResult(
        pd.concat(frames, ignore_index=True), pd.DataFrame(failures, columns=FAILURE_COLUMNS), fallbacks
    )


def paired_ratios(df: pd.DataFrame, over: str, value: str) -> pd.DataFrame:
    """Per-pair ``value`` ratios of every variant over method ``over`` with the same
    donation, in the same (step, model, repeat): ``timing.pair_ratios`` per donation."""
    parts = [
        timing.pair_ratios(part, variant_name(over, bool(donated)), value, by=["step", "model"])
        for donated, part in df.groupby("donated", sort=False)
        if variant_name(over, bool(donated)) in set(part["variant"])
    ]
    return pd.concat(parts, ignore_index=True)


def add_derived(df: pd.DataFrame) -> pd.DataFrame:
    """Microsecond columns and the per-pair it/s ratio to jax.pmap on params (same donation)."""
    out = df.copy()
    for col in ("wall", "cpu", "dispatch"):
        if f"{col}_s_per_call" in out:
            out[f"{col}_us_per_call"] = out[f"{col}_s_per_call"] * 1e6
    keys = ["step", "model", "variant", "repeat"]
    ratios = paired_ratios(df, BASELINE, "it_per_s")[keys + ["ratio"]]
    out = out.merge(ratios.rename(columns={"ratio": "ratio_to_pmap_params"}), on=keys, how="left")
    return out
