"""Notebook 10's measurement: one :func:`jaxperf.diagnosis.diagnose` of a reader's step, as records.

:func:`measure` returns the diagnosis's timings and its other fields (one row each, as JSON), so
that ``study.measure`` can record them and a redraw-only run rebuilds the same
:class:`~jaxperf.diagnosis.result.Diagnosis` from the committed records (:func:`rebuild`).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pandas as pd


def measure(
    step_factory: str,
    step_kwargs: dict[str, Any] | None,
    precision: float,
    max_seconds: float,
    loop_seconds: float = 1.0,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(timings, fields) of the diagnosis of the step ``step_factory`` returns."""
    from jaxperf.diagnosis import diagnose, factory

    made = factory.build(step_factory, dict(step_kwargs or {}))
    found = diagnose(
        made["step"],
        *made["args"],
        loader=made.get("loader"),
        carry=made.get("carry", "auto"),
        batch_at=made.get("batch_at"),
        precision=precision,
        max_seconds=max_seconds,
        loop_seconds=loop_seconds,
        extra_paths=made.get("paths"),
    )
    fields = [
        {"field": f.name, "json": json.dumps(getattr(found, f.name), default=str)}
        for f in dataclasses.fields(found)
        if f.name != "timings"
    ]
    return found.timings, pd.DataFrame(fields, columns=["field", "json"])


def rebuild(timings: pd.DataFrame, fields: pd.DataFrame) -> Any:
    """The :class:`~jaxperf.diagnosis.result.Diagnosis` that :func:`measure` recorded."""
    from jaxperf.diagnosis.result import Diagnosis

    # a CSV reader turns the JSON "null" into NaN
    values: dict[str, Any] = {
        str(row.field): json.loads(row.json) if isinstance(row.json, str) else None
        for row in fields.itertuples()
    }
    values["carry"] = {int(k): v for k, v in values["carry"].items()}  # JSON keys are strings
    return Diagnosis(**values, timings=timings)
