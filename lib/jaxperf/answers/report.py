"""summary.json / summary.md of the cross-study answers: the figure's numbers and the files
(with their commits) they were read from."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import pandas as pd

from .. import markdown
from .sources import KINDS, Read


def summary(frame: pd.DataFrame, read: list[Read]) -> tuple[dict[str, Any], str]:
    missing = [r.path for r in read if r.commit is None]
    data = {
        "seed_ratio": frame.to_dict(orient="records"),
        "sources": {s: KINDS[s] for s in dict.fromkeys(frame["source"])},
        "read": [asdict(r) for r in read],
    }
    wide = frame.pivot_table(index="T", columns="source", values="ratio").reset_index()
    largest = {
        src: part.sort_values("T").iloc[-1] for src, part in frame.groupby("source", sort=False) if len(part)
    }
    at_largest = "; ".join(
        f"{src} {row['ratio']:.2f}× at T={int(row['T'])} ({KINDS[src].split(' (')[0]})"
        for src, row in sorted(largest.items(), key=lambda kv: list(KINDS).index(kv[0]))
    )
    bullets = [
        f"- **fori_loop ÷ Python loop at the largest T each source reached:** {at_largest}.",
        "- **What this is:** the other notebooks' published numbers for jax#20909, set side by side (fori_loop "
        "÷ Python loop on the reporter's kernel); each source is labelled as measured, an analogue, a static "
        "estimate or a prediction, and nothing is recomputed here.",
        "- **Not found (not run, or not measured):** " + (", ".join(missing) if missing else "none") + ".",
    ]
    folded = markdown.details(
        "Every source's numbers (fori_loop ÷ Python loop, per T)", [markdown.table(wide)]
    )
    folded += markdown.details(
        "What each source is",
        [markdown.table(pd.DataFrame({"source": list(KINDS), "kind": list(KINDS.values())}))],
    )
    folded += markdown.details(
        "Files read, and the commits that made them", [markdown.table(pd.DataFrame(data["read"]))]
    )
    return data, markdown.answer_page("The jax#20909 answers, side by side", [], bullets, folded)
