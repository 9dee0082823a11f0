"""summary.json / summary.md of the cross-study answers: the figure's numbers and the files
(with their commits) they were read from."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import pandas as pd

from .. import markdown
from .sources import KINDS, MEASURED, UNITS, Read


def columns(model_error: tuple[float, float] | None = None) -> dict[str, str]:
    """Each source's column name in the tables: the source, its unit and its kind; the time
    model's carries its known error against the reporter's own Python-loop ms."""
    out = {}
    for source, kind in KINDS.items():
        what = kind[: kind.rindex(" (")]
        out[source] = f"{source}: ratio of {UNITS[source]} ({what})"
    if model_error is not None:
        lo, hi = model_error
        out["model A6000"] = out["model A6000"][:-1] + f"; it predicts {lo:.2f}-{hi:.2f}x his Python-loop ms)"
    return out


def summary(
    frame: pd.DataFrame, read: list[Read], model_error: tuple[float, float] | None = None
) -> tuple[dict[str, Any], str]:
    missing = [r.path for r in read if r.commit is None]
    names = columns(model_error)
    data = {
        "seed_ratio": frame.to_dict(orient="records"),
        "sources": {s: KINDS[s] for s in dict.fromkeys(frame["source"])},
        "columns": {s: names[s] for s in dict.fromkeys(frame["source"])},
        "model_error_python_ms": None if model_error is None else list(model_error),
        "read": [asdict(r) for r in read],
    }
    wide = frame.pivot_table(index="T", columns="source", values="ratio")
    wide = wide[[s for s in KINDS if s in wide.columns]].rename(columns=names).reset_index()
    largest = {
        src: part.sort_values("T").iloc[-1] for src, part in frame.groupby("source", sort=False) if len(part)
    }

    def at(sources: list[str]) -> str:
        return "; ".join(
            f"{src} {largest[src]['ratio']:.2f}× at T={int(largest[src]['T'])}"
            for src in sources
            if src in largest
        )

    measured = [s for s in KINDS if s in MEASURED]
    static = [s for s in KINDS if s not in MEASURED and not s.endswith(("A6000", "H200"))]
    predicted = [s for s in ("model A6000", "predicted H200") if s in largest]
    error = (
        ""
        if model_error is None
        else f" (the model predicts {model_error[0]:.2f}-{model_error[1]:.2f}× his Python-loop ms)"
    )
    bullets = [
        f"- **Measured, ms per call** (fori_loop ÷ Python loop at the largest T each reached): {at(measured)}.",
        f"- **Static estimates, work per call in each compiler's unit** (instructions or bundles, compiled on a CPU, not times): {at(static)}.",
        f"- **Predicted by the time model** (ms per call): {at(predicted) or 'none'}{error}.",
        "- **What this is:** the other notebooks' published numbers for jax#20909, set side by side; a column "
        "holds one source in one unit, labelled as measured, an analogue, a static estimate or a prediction, and "
        "nothing is recomputed here.",
        "- **Not found (not run, or not measured):** " + (", ".join(missing) if missing else "none") + ".",
    ]
    folded = markdown.details(
        "Every source's numbers (fori_loop ÷ Python loop, per T)", [markdown.table(wide)]
    )
    folded += markdown.details(
        "What each source is",
        [
            markdown.table(
                pd.DataFrame(
                    {"source": list(KINDS), "kind": list(KINDS.values()), "unit": [UNITS[s] for s in KINDS]}
                )
            )
        ],
    )
    folded += markdown.details(
        "Files read, and the commits that made them", [markdown.table(pd.DataFrame(data["read"]))]
    )
    return data, markdown.answer_page("The jax#20909 answers, side by side", [], bullets, folded)
