"""Notebook 02's measuring steps, each a module-level function of its settings that returns
tidy frames (what :meth:`jaxperf_study.study.Study.measure` records, repeats in fresh processes and,
in a redraw-only run, reads back), and the objects the report reads rebuilt from those frames.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pandas as pd

from jaxperf.loops import engine

from .. import reruns
from . import analysis, harness, mechanism, roofline, sweep
from .factories import FACTORIES
from .settings import LoopSettings
from .variant import KernelVariant

#: a pooled round's repeat: process * this + its own repeat (pairs stay within a process)
PROCESS_REPEAT = 1000
QUOTED = ("xla", "seed")  # the timed sweep the answer quotes: the reporter's kernel on XLA:CPU


def timed(settings: LoopSettings, backend: str, part: str) -> tuple[pd.DataFrame, ...]:
    """The timing sweep (:mod:`jaxperf_study.jax20909.sweep`), in two parts: ``"quoted"`` (the
    reporter's kernel on XLA:CPU, the ratios the answer quotes; run in several processes) returns
    (variants, timings, not_measured); ``"rest"`` (every other kernel and mode, run once with
    ``repeats x processes`` rounds) returns (variants, timings)."""
    configs, not_measured = sweep.plan(backend, settings)
    mode, kernel = QUOTED
    if part == "quoted":
        chosen = [
            dataclasses.replace(c, kernels=(kernel,))
            for c in configs
            if c.mode == mode and kernel in c.kernels
        ]
    elif part == "rest":
        rounds = settings.repeats * settings.processes
        chosen = [
            dataclasses.replace(c, kernels=rest, repeats=rounds)
            for c in configs
            if (rest := tuple(k for k in c.kernels if c.mode != mode or k != kernel))
        ]
    else:
        raise ValueError(f"part={part!r} is not allowed: expected 'quoted' or 'rest'.")
    variants, timings = sweep.run(chosen) if chosen else (pd.DataFrame(), pd.DataFrame())
    return (variants, timings, not_measured) if part == "quoted" else (variants, timings)


def reporter_harness(settings: LoopSettings, backend: str) -> pd.DataFrame:
    """The reporter's own harness at every ``harness_Ts`` (:func:`jaxperf_study.jax20909.harness.run`)."""
    return harness.run(settings, backend)


def bandwidth(megabytes: int) -> pd.DataFrame:
    """The copy bandwidth (:func:`jaxperf_study.jax20909.roofline.measure_bandwidth`) as one row."""
    return pd.DataFrame([roofline.measure_bandwidth(megabytes)])


def xla_mechanism(T: int, D: int, dtype: str) -> pd.DataFrame:
    """XLA:CPU's optimized HLO read per form (:func:`jaxperf_study.jax20909.mechanism.evidence`)."""
    return pd.DataFrame(mechanism.evidence(KernelVariant("seed", "python", T=T, D=D, batch=2, dtype=dtype)))


def _process(frame: pd.DataFrame) -> pd.Series:
    return frame["process"] if "process" in frame else pd.Series(0, index=frame.index)


def pooled_sweep(variants: pd.DataFrame, timings: pd.DataFrame) -> pd.DataFrame:
    """:func:`jaxperf_study.jax20909.analysis.headline` over every process's rounds (a round pairs with
    rounds of its own process only); compile ms and lowering the median over processes."""
    times = timings.assign(repeat=_process(timings) * PROCESS_REPEAT + timings["repeat"])
    numeric = ["lower_ms", "compile_ms", "error_vs_tolerance"]
    metas = variants.groupby(analysis.KEYS, sort=False, as_index=False)[numeric].median()
    return analysis.headline(metas, times)


def pooled_harness(rows: pd.DataFrame) -> pd.DataFrame:
    """The harness rows with each number the median over processes."""
    keys = ["mode", "kernel", "T", "variant"]
    numeric = [c for c in rows.select_dtypes("number").columns if c not in (*keys, "process")]
    return rows.groupby(keys, sort=False, as_index=False).agg(
        {c: ("median" if c in numeric else "first") for c in rows.columns if c not in (*keys, "process")}
    )


def process_ranges(variants: pd.DataFrame, timings: pd.DataFrame, harness_rows: pd.DataFrame) -> pd.DataFrame:
    """Per (mode, kernel, T, variant): ms per call over the Python loop's, per process (the
    median of its pairs; in the harness, the ratio of its medians), then the median over
    processes with ``lo``/``hi`` the smallest and largest (:func:`jaxperf_study.reruns.spread`);
    ``resolved`` is False when that range holds 1 (not resolved), None from one process."""
    per: list[pd.DataFrame] = []
    for p in sorted(set(_process(timings))):
        head = analysis.headline(variants[_process(variants) == p], timings[_process(timings) == p]).dropna(
            subset=["ms_vs_python"]
        )
        per.append(head.assign(process=p)[["mode", "kernel", "T", "variant", "process", "ms_vs_python"]])
    if len(harness_rows):
        for p in sorted(set(_process(harness_rows))):
            part = harness.headline(
                harness_rows[_process(harness_rows) == p].drop(columns="process", errors="ignore")
            )
            part = part.assign(
                mode="xla_harness" if (part["mode"] == "xla").all() else part["mode"], process=p
            )
            per.append(part[["mode", "kernel", "T", "variant", "process", "ms_vs_python"]])
    keys = ["mode", "kernel", "T", "variant"]
    if not per:
        return pd.DataFrame(columns=[*keys, "median", "lo", "hi", "n", "over", "resolved"])
    out = reruns.spread(pd.concat(per, ignore_index=True), "ms_vs_python", keys)
    holds_1 = (out["lo"] <= 1) & (out["hi"] >= 1)
    out["resolved"] = (~holds_1).astype(object).where(out["n"] >= 2, None)  # one process: no range to judge
    return out[out.variant != "python"].reset_index(drop=True)


def engine_frames(settings: LoopSettings, which: str) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The engine on ``which`` ("family": every kernel of ``settings.kernels`` at its
    ``family_Ts`` in ``family_forms``, the reporter's in ``fix_forms`` too; "readers": each
    factory of ``settings.kernel`` in ``kernel_forms`` at ``kernel_Ts``): (checks, points,
    not_present), every run's rows together (``classes`` as JSON text)."""
    runs = []
    if which == "family":
        for kernel in settings.kernels:
            Ts = settings.family_Ts[kernel]
            forms = [*settings.family_forms, *(settings.fix_forms if kernel == "seed" else ())]
            runs.append(
                engine.run(
                    FACTORIES[kernel],
                    list(dict.fromkeys(forms)),
                    Ts,
                    check_Ts=[min(settings.check_T, min(Ts))],
                    targets=settings.targets,
                )
            )
    elif which == "readers":
        for path in settings.readers_kernels():
            Ts = settings.kernel_Ts
            runs.append(
                engine.run(
                    path,
                    settings.kernel_forms,
                    Ts,
                    check_Ts=[min(settings.check_T, min(Ts))],
                    targets=settings.kernel_targets,
                )
            )
    else:
        raise ValueError(f"which={which!r} is not allowed: expected 'family' or 'readers'.")
    checks = pd.concat([r.checks for r in runs], ignore_index=True) if runs else pd.DataFrame()
    points = pd.concat([r.points for r in runs], ignore_index=True) if runs else pd.DataFrame()
    if "classes" in points:
        points["classes"] = [json.dumps(c) if isinstance(c, dict) else None for c in points["classes"]]
    absent = [dict(kernel=r.kernel, target=t, reason=why) for r in runs for t, why in r.not_present.items()]
    return checks, points, pd.DataFrame(absent, columns=["kernel", "target", "reason"])


def _classes(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) and value.startswith("{") else None


def results(
    checks: pd.DataFrame, points: pd.DataFrame, not_present: pd.DataFrame
) -> tuple[engine.Results, ...]:
    """:func:`engine_frames`' frames as one :class:`~jaxperf.loops.engine.Results` per kernel, in order."""
    if "classes" in points:
        points = points.assign(classes=[_classes(c) for c in points["classes"]])
    kernels = list(dict.fromkeys([*checks.get("kernel", []), *points.get("kernel", [])]))
    empty = pd.DataFrame(columns=[*engine.KEYS, "repeat", "ms_per_call"])
    return tuple(
        engine.Results(
            k,
            checks[checks.kernel == k].reset_index(drop=True),
            points[points.kernel == k].reset_index(drop=True) if len(points) else points,
            empty,
            {r.target: r.reason for r in not_present.itertuples() if r.kernel == k},
        )
        for k in kernels
    )


def fix(runs: tuple[engine.Results, ...]) -> engine.Results | None:
    """The reporter's kernel's run (it holds the advice's forms)."""
    return next((r for r in runs if r.kernel == "seed"), None)


def per_step(runs: tuple[engine.Results, ...]) -> pd.DataFrame:
    """Every run's work per loop step (:func:`jaxperf.loops.engine.per_step`), in one frame."""
    frames = [r.per_step() for r in runs]
    return pd.concat(frames, ignore_index=True) if frames else engine.per_step(pd.DataFrame())


WARM_UP_T = 128  # compiled first and dropped: a compiler's first compile in a process pays its start-up
COMPILE_COLUMNS = [
    "kernel",
    "target",
    "unit",
    "form",
    "T",
    "status",
    "error",
    "compile_ms",
    "work_per_program",
    "steps",
]


def compiles(settings: LoopSettings) -> pd.DataFrame:
    """The engine on the reporter's kernel at ``compile_Ts`` in ``compile_forms`` for
    ``compile_targets``: one row per (target, form, T) with its status, error, compile ms
    (export + compile) and work per program in the target's unit."""
    Ts = settings.compile_Ts
    run = engine.run(
        FACTORIES["seed"],
        settings.compile_forms,
        [WARM_UP_T, *Ts],
        check_Ts=[WARM_UP_T],
        targets=settings.compile_targets,
        budget_s=settings.compile_budget_s,
    )
    points = run.points[run.points["T"] != WARM_UP_T].reindex(columns=COMPILE_COLUMNS)
    return points.assign(error=points["error"].fillna("").astype(str).str.slice(0, 300))
