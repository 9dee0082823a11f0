"""What to write instead of ``fori_loop`` in the reporter's kernel, per backend, and only where
the study's own data shows it helps (jax#20909, issue 33 item 2).

Each candidate form is judged against the Python loop in each backend's own measure: measured ms
per call, per pair (:func:`measured`), or the static work per program the engine compiled
(:func:`static`: a count, not a time). A form *closes* the gap within :data:`CLOSES` of the Python
loop (measured: its whole interquartile range; one that holds the bound is not resolved),
*narrows* it at most ``1 / NARROWS`` of ``fori_loop``'s ratio, else *does not help*.
:data:`SETTLE` says what would decide the static verdicts on a GPU.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import pandas as pd

from .. import goals

CLOSES = 1.05
NARROWS = 1.5
CANDIDATES = ("scalar_carry u=1", "hand_unrolled u=4", "hoisted u=1")
SETTLE = (
    "time the Python loop, `fori_loop` and `scalar_carry u=1` in the reporter's harness on an "
    "Ampere GPU (his A6000's sm_86) and on an H200 (`tools/device`, notebook 02 with backend='gpu'): "
    "a static count says how much work is issued, not how long it takes"
)


def _judge(ratio: float, fori_ratio: float | None, q25: float | None = None, q75: float | None = None) -> str:
    if q25 is not None and q75 is not None:
        said = goals.judge({"median": ratio, "q25": q25, "q75": q75}, CLOSES, at_least=False)
        if said == goals.MET:
            return "closes it"
        if said == goals.TIE:
            return f"not resolved against closing it (its spread holds {CLOSES:g}×)"
    elif ratio <= CLOSES:
        return "matches the Python loop's count"
    if fori_ratio is not None and ratio * NARROWS <= fori_ratio:
        return "narrows it"
    return "does not help"


#: a timed mode's backend, as the advice names it (a device's: its compiler, measured)
MEASURED = {"xla": "XLA:CPU", "pallas tpu": "Mosaic TPU v5e, measured", "pallas gpu": "Triton, measured"}


def measured(
    head: pd.DataFrame, mode: str = "xla", kernel: str = "seed", backend: str = "cpu"
) -> list[dict[str, Any]]:
    """The candidates on a timed mode, at its largest T with a Python loop: per-pair ratios."""
    part = head[(head["mode"] == mode) & (head.kernel == kernel)]
    part = part[part["ms_vs_python"].notna()] if "ms_vs_python" in part else part.iloc[0:0]
    if part.empty:
        return []
    at = part[part["T"] == part["T"].max()].set_index("variant")
    fori = float(at.loc["fori u=1", "ms_vs_python"]) if "fori u=1" in at.index else None
    name = MEASURED.get(mode if mode == "xla" else f"{mode} {backend}", mode)
    rows = []
    for variant in [v for v in at.index if v.startswith(tuple(c.split(" u=")[0] for c in CANDIDATES))]:
        r = at.loc[variant]
        quartiles = float(r.ms_vs_python_q25), float(r.ms_vs_python_q75)
        measure = "ms per call, measured (per pair, median [IQR])"
        rows.append(_row(name, measure, int(r["T"]), variant, float(r.ms_vs_python), fori, *quartiles))
    return sorted(rows, key=lambda r: r["ratio"])


def _row(
    backend: str, measure: str, T: int, form: str, ratio: float, fori: float | None, q25=None, q75=None
) -> dict[str, Any]:
    """A candidate's row: its ratio (measured: its quartiles too) beside fori_loop's, judged."""
    judged = _judge(ratio, fori, q25, q75)
    return dict(backend=backend, measure=measure, T=T, form=form, ratio=ratio, q25=q25, q75=q75) | dict(
        fori_ratio=fori, judged=judged
    )


def static(per_step: pd.DataFrame, kernel: str = "seed") -> list[dict[str, Any]]:
    """The candidates per compiler: work per program over the Python loop's at the larger T."""
    rows = []
    for target, part in per_step[per_step.kernel == kernel].groupby("target", sort=False):
        by = part.set_index("form")
        fori = by.loc["fori", "vs_python_at_T2"] if "fori" in by.index else None
        for form in [f for f in CANDIDATES if f in by.index]:
            r = by.loc[form]
            if r.vs_python_at_T2 is None or pd.isna(r.vs_python_at_T2):
                continue
            measure = f"{r.unit} per program, static (compiled on a CPU)"
            fori_ratio = None if fori is None else float(fori)
            rows.append(_row(target, measure, int(r.T2), form, float(r.vs_python_at_T2), fori_ratio))
    return rows


def lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    """One line per backend: each candidate's ratio and verdict beside fori_loop's ratio."""
    out = []
    for backend in dict.fromkeys(r["backend"] for r in rows):
        mine = [r for r in rows if r["backend"] == backend]
        fori = mine[0]["fori_ratio"]
        cells = [
            f"`{r['form']}` {r['ratio']:.2f}×"
            + (f" [{r['q25']:.2f}, {r['q75']:.2f}]" if r["q25"] is not None else "")
            + f" ({r['judged']})"
            for r in mine
        ]
        ratio = "n/a" if fori is None else f"{fori:.2f}×"
        head = f"- **{backend}** ({mine[0]['measure']}, T={mine[0]['T']}; `fori_loop` {ratio}): "
        out.append(head + ", ".join(cells) + ".")
    return out


def best(rows: Sequence[dict[str, Any]]) -> dict[str, str]:
    """Per backend: the advice in a few words (the closing form, else the narrowing one, else none)."""
    out = {}
    for backend in dict.fromkeys(r["backend"] for r in rows):
        mine = sorted((r for r in rows if r["backend"] == backend), key=lambda r: r["ratio"])
        closing = [r for r in mine if r["judged"] in ("closes it", "matches the Python loop's count")]
        narrowing = [r for r in mine if r["judged"] == "narrows it"]
        if closing:
            out[backend] = f"`{closing[0]['form']}` ({closing[0]['judged']}, {closing[0]['ratio']:.2f}×)"
        elif narrowing:
            out[backend] = (
                f"`{narrowing[0]['form']}` narrows it ({narrowing[0]['ratio']:.2f}× against fori's {narrowing[0]['fori_ratio']:.2f}×); nothing tried closes it"
            )
        else:
            out[backend] = "nothing the study tried helps"
    return out


def by_key(rows: Sequence[dict[str, Any]]) -> dict[str, str]:
    """:func:`best` keyed by plain names (``xla_cpu``, ``triton_sm_86``, ...), for templates
    whose placeholders cannot hold a colon or a space."""
    return {
        re.sub(r"[^a-z0-9]+", "_", backend.lower()).strip("_"): text for backend, text in best(rows).items()
    }
