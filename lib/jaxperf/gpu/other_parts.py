"""Parts c and d of the device run.

Part c (:func:`compile_on_host`): notebook 04's compile on the device
machine's own CPU and Triton (:mod:`jaxperf.triton`: capture, ttir -> cubin,
SASS, the static estimate for ``compile_target``), for the forms the estimate
compares, on the same program part a times (the reporter's kernel, float32
carry). :mod:`jaxperf.gpu.report` puts it beside the real GPU compile and the
measured ms per call. Part d (:func:`dispatch`): first the seed's whole loop
(:mod:`jaxperf.dispatch.runahead`: does ``eqx.filter_jit``'s wait for each call cost it/s where host
and device really overlap), then the dispatch study's methods on the one GPU
(:mod:`jaxperf.dispatch`), one model at a time inside what is left of the budget.
"""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pandas as pd

from .env import Budget, failure, not_measured_rows, predict, save_figure
from .settings import GpuSettings


def estimate_forms(s: GpuSettings) -> list[tuple[str, int]]:
    """(loop form, unroll) the static estimate compares (as notebook 04's estimate_plan): the
    reporter's two loops first, so that they lead every T's compiles."""
    forms = [
        ("python", 1),
        ("fori", 1),
        ("hand_unrolled", s.estimate_unroll),
        ("hoisted", 1),
        ("scalar_carry", 1),
    ]
    return [(f, u) for f, u in forms if f in s.loop_forms]


def compile_on_host(study: Any, s: GpuSettings, budget: Budget) -> dict[str, Any]:
    """Part c: writes ``toolchain``, ``compile_records`` (one row per compile, with the static
    counts) and ``estimate`` records; "not measured" with the reason when Triton is not usable."""
    from ..compilers.triton import estimate, toolchain
    from ..triton import sweep as tsweep

    status = toolchain.status()
    study.records(
        pd.DataFrame([dict(available=status.available, version=status.version, reason=status.reason)]),
        "toolchain",
    )
    if not status.available:
        return {"available": False, "reason": status.reason}
    variants = [tsweep.Variant("seed", f, u) for f, u in estimate_forms(s)]
    shape = tsweep.Shape(D=s.D, batch=s.batch, dtype=s.dtype, seed_carry_dtype="float32")
    frames: list[pd.DataFrame] = []
    last = None
    for T in s.compile_Ts:
        predicted = predict(last, T)
        if not budget.fits(predicted):
            keys = [dict(kernel="seed", variant=v.name, T=T, target=s.compile_target) for v in variants]
            frames.append(not_measured_rows(keys, budget.reason(predicted)))
            continue
        start = time.perf_counter()
        try:
            rows = tsweep.sweep(variants, {"seed": [T]}, target=s.compile_target, shape=shape)
        except Exception as err:  # noqa: BLE001 -- recorded, the part goes on
            keys = [dict(kernel="seed", variant=v.name, T=T, target=s.compile_target) for v in variants]
            rows = not_measured_rows(keys, failure(err))
        last = (T, time.perf_counter() - start)
        frames.append(rows)
        study.records(pd.concat(frames, ignore_index=True), "compile_records")
        print(f"[{study.name}] compile T={T}: {last[1]:.1f} s ({budget.elapsed():.0f} s spent)", flush=True)
    records = pd.concat(frames, ignore_index=True)
    if "sass_dynamic_per_call" not in records:
        return {"available": True, "version": status.version, "compiled": 0}
    study.records(estimate.table(records), "estimate")
    return {
        "available": True,
        "version": status.version,
        "target": s.compile_target,
        "compiled": int((records["status"] == "ok").sum()),
        "label": f"compiled for {s.compile_target} on the device machine's CPU with triton {status.version}",
    }


def seed_loop(study: Any, s: GpuSettings, budget: Budget) -> dict[str, Any]:
    """The seed's loop (``seed_loop_*``): ``seed_loop_timings``, ``seed_loop_checks`` and
    ``seed_loop_summary`` records and the ``seed_loop`` figure; at most ``seed_loop_max_s``
    seconds (whole repeats), and nothing when that would not fit the part's budget."""
    from ..dispatch.runahead import figures as rfigures
    from ..dispatch.runahead import loop_analysis, report
    from ..dispatch.runahead import seed_loop as loop

    if not budget.fits(s.seed_loop_max_s):
        study.records(
            not_measured_rows([dict(part="seed_loop")], budget.reason(s.seed_loop_max_s)),
            "seed_loop_not_measured",
        )
        return {"measured": False, "reason": budget.reason(s.seed_loop_max_s)}
    started = time.perf_counter()
    try:
        result = loop.run(
            s.seed_loop,
            deadline_s=s.seed_loop_max_s,
            log=lambda msg: print(f"[{study.name}] {msg}", flush=True),
        )
    except Exception as err:  # noqa: BLE001 -- recorded, the sweep still runs
        study.records(not_measured_rows([dict(part="seed_loop")], failure(err)), "seed_loop_not_measured")
        return {"measured": False, "reason": failure(err)}
    study.records(result.timings, "seed_loop_timings")
    study.records(result.checks, "seed_loop_checks")
    table = loop_analysis.table(loop_analysis.cells(result.timings))
    study.records(table, "seed_loop_summary")
    fig, data = rfigures.plot_seed_loop(table, study.info.device_kind)
    save_figure(study, fig, "seed_loop", data)
    print(
        f"[{study.name}] seed loop: {time.perf_counter() - started:.1f} s ({budget.elapsed():.0f} s spent)",
        flush=True,
    )
    return {
        "measured": True,
        "train_step_ms": result.base_step_ms,
        "repeats": int(result.timings["repeat"].nunique()),
        "methods": sorted(set(result.checks[result.checks["same_result"] == True]["method"])),  # noqa: E712
        "left_out": result.checks[result.checks["same_result"] != True].to_dict(orient="records"),  # noqa: E712
        "filter_jit_vs_jit": report.waiting_cost(table),
        "patched_vs_jit": report.waiting_cost(table, "filter_jit_fixed"),
        "cached_filter_jit_goals": loop_analysis.goals(table),
        "jit_overlap": loop_analysis.jit_overlap(table),
    }


def dispatch(study: Any, s: GpuSettings, budget: Budget) -> dict[str, Any]:
    """Part d: the seed's loop first (:func:`seed_loop`), then every method of
    ``dispatch_methods``, with and without donation, one model at a time (smallest first),
    for each step of ``dispatch_steps``; writes ``timings``, ``unsupported``, ``fix_ratios``
    and ``not_measured`` records and the it/s figure."""
    from ..dispatch import DispatchSettings, ModelSpec, figures, report
    from ..dispatch import sweep as dsweep

    loop_summary = seed_loop(study, s, budget)

    base = DispatchSettings(
        backend=s.backend,
        host_devices=s.host_devices,
        mlp_depths=s.mlp_depths,
        transformer_layers=s.transformer_layers,
        methods=s.dispatch_methods,
        steps=s.dispatch_steps,
        warmup=2,
        repeats=s.dispatch_repeats,
        calls_per_repeat=s.calls_per_repeat,
    )
    specs = [ModelSpec("mlp", d) for d in s.mlp_depths] + [
        ModelSpec("transformer", n) for n in s.transformer_layers
    ]
    frames, failures, missing = [], [], []
    last = None
    for spec in specs:
        # dispatch.sweep.run reads steps, specs, methods, donate and timing: one model at a time
        one = SimpleNamespace(
            steps=base.steps, specs=[spec], methods=base.methods, donate=base.donate, timing=base.timing
        )
        predicted = predict(last, 2) if last else 0.0
        if not budget.fits(predicted):
            missing.append(not_measured_rows([dict(model=spec.name)], budget.reason(predicted)))
            continue
        start = time.perf_counter()
        try:
            result = dsweep.run(one, study.info.device_count)  # type: ignore[arg-type]
        except Exception as err:  # noqa: BLE001 -- recorded, the part goes on
            missing.append(not_measured_rows([dict(model=spec.name)], failure(err)))
            continue
        finally:
            last = (1, time.perf_counter() - start)
        frames.append(result.timings)
        failures.append(result.failures)
        study.records(dsweep.add_derived(pd.concat(frames, ignore_index=True)), "timings")
        print(f"[{study.name}] {spec.name}: {last[1]:.1f} s ({budget.elapsed():.0f} s spent)", flush=True)
    study.records(
        pd.concat(missing, ignore_index=True) if missing else pd.DataFrame(columns=["model", "status"]),
        "not_measured",
    )
    if not frames:
        return {"seed_loop": loop_summary, "models": [], "not_measured": len(missing)}
    timings = dsweep.add_derived(pd.concat(frames, ignore_index=True))
    study.records(pd.concat(failures, ignore_index=True), "unsupported")
    ratios = report.speedups(timings)
    study.records(ratios, "fix_ratios")
    fig, data = figures.plot_it_per_s(timings)
    save_figure(study, fig, "it_per_s_vs_leaves", data)
    medians = (
        timings.groupby(["step", "model", "leaves", "variant"], sort=False)["it_per_s"].median().reset_index()
    )
    return {
        "seed_loop": loop_summary,
        "models": [spec.name for spec in specs if spec.name in set(timings["model"])],
        "not_measured": len(missing),
        "it_per_s_medians": medians.to_dict(orient="records"),
    }
