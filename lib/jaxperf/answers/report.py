"""summary.json / summary.md of the cross-study answers: the figure's numbers and the files
(with their commits) they were read from."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import pandas as pd

from .. import markdown
from .sources import KINDS, MEASURED, UNITS, Read


def columns() -> dict[str, str]:
    """Each source's column name in the tables: the source, its unit and its kind."""
    return {
        source: f"{source}: ratio of {UNITS[source]} ({kind[: kind.rindex(' (')]})"
        for source, kind in KINDS.items()
    }


def summary(frame: pd.DataFrame, read: list[Read]) -> tuple[dict[str, Any], str]:
    missing = [r.path for r in read if r.commit is None]
    names = columns()
    data = {
        "seed_ratio": frame.to_dict(orient="records"),
        "sources": {s: KINDS[s] for s in dict.fromkeys(frame["source"])},
        "columns": {s: names[s] for s in dict.fromkeys(frame["source"])},
        "read": [asdict(r) for r in read],
    }
    wide = frame.pivot_table(index="T", columns="source", values="ratio")
    wide = wide[[s for s in KINDS if s in wide.columns]].rename(columns=names)
    wide = wide.map(lambda v: "—" if v != v else f"{v:.3g}").reset_index()  # — : no such T in that source
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
    static = [s for s in KINDS if s not in MEASURED]
    bullets = [
        "- **Measured, fori_loop ÷ Python loop of ms per call** (per pair where this study measured it, "
        f"at the largest T each reached): {at(measured)}.",
        "- **Static estimates, fori_loop ÷ Python loop of the work per call** (each compiler's instructions "
        f"or bundles, compiled on a CPU, not times): {at(static)}.",
        "- **What this is:** the other notebooks' published numbers for jax#20909, set side by side; a column "
        "holds one source in one unit, labelled as measured, an analogue or a static estimate, and nothing "
        "is recomputed here.",
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
        "Files read, and the commits that made them",
        [markdown.table(pd.DataFrame([r for r in data["read"] if r["commit"]]))],
    )
    return data, markdown.answer_page("The jax#20909 answers, side by side", [], bullets, folded)
