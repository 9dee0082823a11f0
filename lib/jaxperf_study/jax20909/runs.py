"""Notebook 02's measuring steps, each a module-level function of its settings that returns
tidy frames (what :meth:`jaxperf_study.study.Study.measure` records, repeats in fresh processes and,
in a redraw-only run, reads back), and the objects the report reads rebuilt from those frames.
"""

from __future__ import annotations

import dataclasses
import json
import time

import pandas as pd

from jaxperf.loops import engine

from .. import reruns
from . import analysis, harness, mechanism, roofline, sweep, vocab
from .factories import FACTORIES
from .settings import LoopSettings
from .variant import KernelVariant

#: a pooled round's repeat: process * this + its own repeat (pairs stay within a process)
PROCESS_REPEAT = 1000
#: the records :func:`quoted` returns, in order (notebook 02 writes them under these names)
QUOTED_RECORDS = ("variants", "timings", "not_measured", "harness")
#: the records :func:`rest` returns, in order
REST_RECORDS = (
    *("variants_rest", "timings_rest", "not_measured_rest", "bandwidth", "mechanism_xla"),
    *("family_checks", "family_points", "family_not_present", "family_timings"),
    *("compiles", "readers_checks", "readers_points", "readers_not_present", "readers_timings"),
)


def _split(settings: LoopSettings, backend: str, part: str) -> tuple[list[sweep.SweepConfig], pd.DataFrame]:
    """The sweep's configs of ``part``: "quoted" (the reporter's kernel in the mode the answer
    quotes, XLA:CPU or a device's compiled kernel, its ``quoted_variants``), "rest" (the others, in
    ``rest_repeats`` rounds), and the not-measured rows of the plan."""
    configs, not_measured = sweep.plan(backend, settings)
    out, mode = [], "xla" if backend == "cpu" else "pallas"
    rest_rounds = settings.rest_repeats or settings.repeats * settings.processes
    if settings.quoted_in == "harness":  # his harness is what is quoted: the whole sweep is the rest's
        return [dataclasses.replace(c, repeats=rest_rounds) for c in configs if part == "rest"], not_measured
    for c in configs:
        seed = [vocab.variant_name(*v) for v in c.variants("seed", max(c.Ts))] if "seed" in c.kernels else []
        quoted = [v for v in seed if c.mode == mode and v in (settings.quoted_variants or seed)]
        picked: list[tuple[tuple[str, ...], tuple[str, ...]]] = [(("seed",), tuple(quoted))] if quoted else []
        if part == "rest":  # the quoted variants' kernel's other variants, and every other kernel
            rest = tuple(v for v in seed if v not in quoted)
            others = tuple(k for k in c.kernels if k != "seed" or not quoted)
            picked = [(others, ())] + [(("seed",), rest)] * bool(quoted and rest)
        rounds = c.repeats if part == "quoted" else rest_rounds
        out += [
            dataclasses.replace(c, kernels=k, listed=v or c.listed, repeats=rounds) for k, v in picked if k
        ]
    return out, not_measured


def _written(frames: tuple[pd.DataFrame, ...]) -> tuple[pd.DataFrame, ...]:
    """``frames`` as records can hold them: one without columns (a part not run here) as a header."""
    return tuple(f if len(f.columns) else pd.DataFrame(columns=["kernel"]) for f in frames)


def quoted(settings: LoopSettings, backend: str) -> tuple[pd.DataFrame, ...]:
    """What the answer quotes, in each of ``processes`` fresh processes: his harness at ``harness_Ts``,
    then his kernel (on XLA:CPU, or compiled on a device) inside ``quoted_budget_s``: :data:`QUOTED_RECORDS`."""
    started, missing = time.perf_counter(), list[pd.DataFrame]()
    rows = harness.run(settings, backend, budget_s=settings.quoted_budget_s, missing=missing)
    configs, not_measured = _split(settings, backend, "quoted")
    spent = time.perf_counter() - started
    budget = max(settings.quoted_budget_s - spent, 1e-3) if settings.quoted_budget_s else 0
    variants, timings = sweep.run(configs, budget_s=budget, missing=missing)
    return _written((variants, timings, pd.concat([not_measured, *missing], ignore_index=True), rows))


def rest(settings: LoopSettings, backend: str) -> tuple[pd.DataFrame, ...]:
    """The rest, in one process inside ``rest_budget_s``: bandwidth, XLA:CPU's HLO (on a CPU), the family
    through the engine (timed on a device, but the reporter's: the sweep times it), the rest of the sweep,
    the engine's compiles at ``compile_Ts``, the readers' kernels: :data:`REST_RECORDS`."""
    started, budget = time.perf_counter(), settings.rest_budget_s

    def left(share: float = 1.0) -> float:
        return max(budget * share - (time.perf_counter() - started), 1.0) if budget else 0.0

    dtype = settings.resolved_dtype(backend)
    seed = KernelVariant("seed", "python", T=settings.mechanism_T, D=settings.D, batch=2, dtype=dtype)
    found = mechanism.evidence(seed) if backend == "cpu" else []
    out = [pd.DataFrame([roofline.measure_bandwidth(settings.bandwidth_megabytes)]), pd.DataFrame(found)]
    family = engine_frames(settings, "family", budget_s=left(0.6), backend=backend)
    configs, _ = _split(settings, backend, "rest")
    missing = [sweep.not_measured("mosaic_gpu", why, ("seed",)) for why in _no_mosaic_gpu(configs)]
    configs = [c for c in configs if c.mode != "mosaic_gpu" or not missing]
    variants, timings = sweep.run(configs, budget_s=left(), missing=missing)
    points = compiles(settings) if settings.compile_Ts else pd.DataFrame(columns=COMPILE_COLUMNS)
    readers = engine_frames(settings, "readers", budget_s=left(), backend=backend)
    missing_rows = pd.concat(missing, ignore_index=True) if missing else pd.DataFrame()
    return _written((variants, timings, missing_rows, *out, *family, points, *readers))


def pooled_records(
    quoted: tuple[pd.DataFrame, ...], rest: dict[str, pd.DataFrame]
) -> tuple[pd.DataFrame, ...]:
    """(variants, timings, not_measured, harness) of both measuring steps: the rest's rows as
    process 0 of the quoted ones', a reason given once."""
    variants, timings, not_measured, harness_rows = (f.assign(process=_process(f)) for f in quoted)
    variants = pd.concat([variants, rest["variants_rest"].assign(process=0)], ignore_index=True)
    timings = pd.concat([timings, rest["timings_rest"].assign(process=0)], ignore_index=True)
    missing = pd.concat([not_measured, rest["not_measured_rest"]], ignore_index=True).drop(columns="process")
    return variants, timings, missing.drop_duplicates(ignore_index=True), harness_rows


def _no_mosaic_gpu(configs: list[sweep.SweepConfig]) -> list[str]:
    """Why the Mosaic GPU port cannot run on this GPU, if it is planned here: Mosaic GPU runs on
    Hopper (compute capability 9.0) and newer; the reporter's A6000 (8.6) has Triton alone."""
    import jax

    device = jax.devices()[0] if any(c.mode == "mosaic_gpu" for c in configs) else None
    found = str(getattr(device, "compute_capability", None) or "0.0").split(".")
    if device is None or (int(found[0]), int(found[1])) >= (9, 0):
        return []
    return [
        f"not measured: {device.device_kind} (compute capability {'.'.join(found)}): Mosaic GPU needs 9.0 or newer"
    ]


def _process(frame: pd.DataFrame) -> pd.Series:
    return frame["process"] if "process" in frame else pd.Series(0, index=frame.index)


def pooled_sweep(variants: pd.DataFrame, timings: pd.DataFrame) -> pd.DataFrame:
    """:func:`jaxperf_study.jax20909.analysis.headline` over every process's rounds (a round pairs with
    rounds of its own process only); compile ms and lowering the median over processes."""
    times = timings.assign(repeat=_process(timings) * PROCESS_REPEAT + timings["repeat"])
    numeric = ["lower_ms", "compile_ms", "error_vs_tolerance", *(["batch"] if "batch" in variants else [])]
    metas = variants.groupby(analysis.KEYS, sort=False, as_index=False)[numeric].median()
    return analysis.headline(metas, times)


def pooled_harness(rows: pd.DataFrame) -> pd.DataFrame:
    """The harness rows with each number the median over processes."""
    keys = ["mode", "kernel", "T", "variant"]
    if not set(keys) <= set(rows.columns):  # his harness was not run here
        return pd.DataFrame(columns=[*keys, "batch", "ms_per_call", "ms_per_call_median"])
    numeric = [c for c in rows.select_dtypes("number").columns if c not in (*keys, "process")]
    return rows.groupby(keys, sort=False, as_index=False).agg(
        {c: ("median" if c in numeric else "first") for c in rows.columns if c not in (*keys, "process")}
    )


def process_ranges(variants: pd.DataFrame, timings: pd.DataFrame, harness_rows: pd.DataFrame) -> pd.DataFrame:
    """Per (mode, kernel, T, variant): ms per call over the Python loop's per process (in the harness,
    the ratio of its medians), spread over processes (:func:`jaxperf_study.reruns.spread`);
    ``resolved`` False where that range holds 1, None from one process."""
    keys, per = ["mode", "kernel", "T", "variant"], list[pd.DataFrame]()
    for p in sorted(set(_process(timings))):
        head = analysis.headline(variants[_process(variants) == p], timings[_process(timings) == p])
        per.append(head.dropna(subset=["ms_vs_python"]).assign(process=p)[[*keys, "process", "ms_vs_python"]])
    for p in sorted(set(_process(harness_rows))) if len(harness_rows) and "variant" in harness_rows else ():
        part = harness.headline(
            harness_rows[_process(harness_rows) == p].drop(columns="process", errors="ignore")
        )
        mode = "xla_harness" if (part["mode"] == "xla").all() else part["mode"]
        per.append(part.assign(mode=mode, process=p)[[*keys, "process", "ms_vs_python"]])
    if not per:
        return pd.DataFrame(columns=[*keys, "median", "lo", "hi", "n", "over", "resolved"])
    out = reruns.spread(pd.concat(per, ignore_index=True), "ms_vs_python", keys)
    holds_1 = (out["lo"] <= 1) & (out["hi"] >= 1)
    out["resolved"] = (~holds_1).astype(object).where(out["n"] >= 2, None)  # one process: no range to judge
    return out[out.variant != "python"].reset_index(drop=True)


def engine_frames(
    settings: LoopSettings, which: str, *, budget_s: float = 0.0, backend: str = "cpu"
) -> tuple[pd.DataFrame, ...]:
    """The engine on ``which`` ("family": each of ``settings.kernels`` at its ``family_Ts`` in
    ``family_forms``, the reporter's in ``fix_forms`` too; "readers": each factory of ``kernel``),
    each kernel in its share of ``budget_s`` and timed on a device (but the reporter's: the sweep
    times it). Returns (checks, points, not_present, timings), ``classes`` as JSON text."""
    if which not in ("family", "readers"):
        raise ValueError(f"which={which!r} is not allowed: expected 'family' or 'readers'.")
    s = settings
    plans = (
        [
            (FACTORIES[k], [*s.family_forms, *(s.fix_forms if k == "seed" else ())], s.family_Ts[k])
            for k in s.kernels
        ]
        if which == "family"
        else [(path, s.kernel_forms, s.kernel_Ts) for path in s.readers_kernels()]
    )
    started, runs = time.perf_counter(), []
    for i, (path, forms, Ts) in enumerate(plans):
        share = (
            (budget_s - (time.perf_counter() - started)) / (len(plans) - i) if budget_s else engine.BUDGET_S
        )
        targets, timed = (
            s.targets if which == "family" else s.kernel_targets,
            backend != "cpu" and path != FACTORIES["seed"],
        )
        runs.append(
            engine.run(path, list(dict.fromkeys(forms)), Ts, check_Ts=[min(s.check_T, *Ts)], targets=targets,
                       budget_s=max(share, 1.0), timed=timed)
        )  # fmt: skip
    frames = [
        pd.concat([getattr(r, name) for r in runs], ignore_index=True) if runs else pd.DataFrame()
        for name in ("checks", "points", "timings")
    ]
    checks, points, timings = frames
    if "classes" in points:
        points["classes"] = [json.dumps(c) if isinstance(c, dict) else None for c in points["classes"]]
    absent = [dict(kernel=r.kernel, target=t, reason=why) for r in runs for t, why in r.not_present.items()]
    return checks, points, pd.DataFrame(absent, columns=["kernel", "target", "reason"]), timings


def results(
    checks: pd.DataFrame, points: pd.DataFrame, not_present: pd.DataFrame, timings: pd.DataFrame | None = None
) -> tuple[engine.Results, ...]:
    """:func:`engine_frames`' frames as one :class:`~jaxperf.loops.engine.Results` per kernel, in order."""
    if "classes" in points:  # JSON text (engine_frames) read back
        parsed = [json.loads(c) if isinstance(c, str) and c.startswith("{") else None for c in points.classes]
        points = points.assign(classes=parsed)
    if "run" in points:  # merged device commands each compiled every point: its counts once, the first's
        points = points.drop_duplicates(subset=["kernel", "target", *engine.KEYS[1:]])
    kernels = list(dict.fromkeys([*checks.get("kernel", []), *points.get("kernel", [])]))
    empty = pd.DataFrame(columns=[*engine.KEYS, "repeat", "ms_per_call"])
    timings = timings if timings is not None and len(timings) else empty
    return tuple(
        engine.Results(
            k,
            checks[checks.kernel == k].reset_index(drop=True),
            points[points.kernel == k].reset_index(drop=True) if len(points) else points,
            timings[timings.kernel == k].reset_index(drop=True),
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
COMPILE_COLUMNS = "kernel target unit form T status error compile_ms work_per_program steps".split()


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
        timed=False,
    )
    points = run.points[run.points["T"] != WARM_UP_T].reindex(columns=COMPILE_COLUMNS)
    return points.assign(error=points["error"].fillna("").astype(str).str.slice(0, 300))
