"""The dispatch part of the device run (:func:`dispatch`)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from .env import Budget, failure, points
from .settings import GpuSettings


def dispatch(study: Any, s: GpuSettings, budget: Budget) -> dict[str, Any]:
    """One diagnosis of the seed's no-op
    step at 392 leaves (``jaxperf.diagnosis.diagnose``, as notebook 10 runs it: ``diagnosis`` records and
    its Markdown), then notebook 01's cells (:mod:`jaxperf_study.dispatch.cost`) on the MLPs of
    ``mlp_depths`` and the transformers for each step of ``dispatch_steps``, undonated, one at
    a time while the budget lasts; writes ``timings``, ``not_timed`` and ``not_measured``."""
    from jaxperf.diagnosis import diagnose

    from ..dispatch import ModelSpec, examples
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
    frames, notes = [], []
    missing: list[pd.DataFrame] = []
    for cell, (timings, why) in points(
        study,
        cells,
        lambda cell: [cell.labels],
        lambda cell: dcost.run_cell(cell, precision=0.05, max_seconds=seconds, min_rounds=3),
        budget,
        missing,
        lambda cell: f"{cell.step} {cell.spec.name} {cell.family}",
        size=lambda _: 1,
        first_s=2 * seconds,
    ):
        frames.append(timings)
        notes += [{**cell.labels, "path": path, "why": text} for path, text in why.items()]
        study.records(pd.concat(frames, ignore_index=True), "timings")
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
