"""Parts c and d of the device run.

Part c (:func:`compile_on_host`): notebook 04's compile on the device
machine's own CPU and Triton (:mod:`jaxperf.triton`: capture, ttir -> cubin,
SASS, the static estimate for ``compile_target``), for the forms the estimate
compares, on the same program part a times (the reporter's kernel, float32
carry). :mod:`jaxperf.gpu.report` puts it beside the real GPU compile and the
measured ms per call. Part d (:func:`dispatch`): ``jaxperf.diagnose`` on the seed's step, then notebook 01's
cells on the one GPU (:mod:`jaxperf.dispatch.cost`), one at a time inside what is left of the budget.
"""

from __future__ import annotations

import time
from typing import Any

import pandas as pd

from .env import Budget, failure, not_measured_rows, predict
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


def dispatch(study: Any, s: GpuSettings, budget: Budget) -> dict[str, Any]:
    """Part d: one diagnosis of the seed's no-op
    step at 392 leaves (``jaxperf.diagnose``, as notebook 10 runs it: ``diagnosis`` records and
    its Markdown), then notebook 01's cells (:mod:`jaxperf.dispatch.cost`) on the MLPs of
    ``mlp_depths`` and the transformers for each step of ``dispatch_steps``, undonated, one at
    a time while the budget lasts; writes ``timings``, ``not_timed`` and ``not_measured``."""
    from ..diagnosis import diagnose, examples
    from ..dispatch import ModelSpec
    from ..dispatch import cost as dcost
    from ..dispatch import report as dreport

    seconds = s.dispatch_seconds_per_cell
    diagnosis: dict[str, Any] = {"measured": False}
    if budget.fits(4 * seconds):
        try:
            made = examples.seed_noop(depth=s.mlp_depths[0] if s.quick else 64)
            found = diagnose(made["step"], *made["args"], max_seconds=3 * seconds)
            study.records(found.timings, "diagnosis")
            diagnosis = {"measured": True, **found.summary(), "markdown": found.markdown()}
        except Exception as err:  # noqa: BLE001 -- recorded, the part goes on
            diagnosis = {"measured": False, "reason": failure(err)}
    specs = [ModelSpec("mlp", d) for d in s.mlp_depths] + [
        ModelSpec("transformer", n) for n in s.transformer_layers
    ]
    cells = [
        dcost.Cell(step, spec, False, family)
        for step in s.dispatch_steps
        for spec in specs
        for family in dcost.FAMILIES
    ]
    frames, notes, missing = [], [], []
    last = None
    for cell in cells:
        predicted = predict(last, 1) if last else 2 * seconds
        if not budget.fits(predicted):
            missing.append(not_measured_rows([cell.labels], budget.reason(predicted)))
            continue
        start = time.perf_counter()
        try:
            timings, why = dcost.run_cell(cell, precision=0.05, max_seconds=seconds, min_rounds=3)
        except Exception as err:  # noqa: BLE001 -- recorded, the part goes on
            missing.append(not_measured_rows([cell.labels], failure(err)))
            continue
        finally:
            last = (1, time.perf_counter() - start)
        frames.append(timings)
        notes += [{**cell.labels, "path": path, "why": text} for path, text in why.items()]
        study.records(pd.concat(frames, ignore_index=True), "timings")
        print(
            f"[{study.name}] {cell.step} {cell.spec.name} {cell.family}: {last[1]:.1f} s ({budget.elapsed():.0f} s spent)",
            flush=True,
        )
    study.records(
        pd.concat(missing, ignore_index=True) if missing else pd.DataFrame(columns=["model", "status"]),
        "not_measured",
    )
    columns = ["step", "model", "kind", "leaves", "donated", "family", "path", "why"]
    study.records(pd.DataFrame(notes, columns=columns), "not_timed")
    out: dict[str, Any] = {"diagnosis": diagnosis, "not_measured": len(missing)}
    if frames:
        timings = pd.concat(frames, ignore_index=True)
        lines = dreport.cost_lines(
            timings, ("filter_pmap", "filter_jit", "cached_filter_pmap", "cached_filter_jit")
        )
        out["per_leaf"] = {m: {k: v for k, v in line.items() if k != "by_cell"} for m, line in lines.items()}
        out["models"] = sorted(set(timings["model"]))
    return out
