"""The folded sections of notebook 04's summary.md that read the summary dict only: the
mechanism and the static estimate (the answer and the compile tables are in :mod:`.report`)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from .. import markdown
from ..compilers.triton.toolchain import label


def _md(df: pd.DataFrame, floatfmt: str = "{:.0f}") -> str:
    return markdown.table(df, floatfmt=floatfmt) if not df.empty else "(none)"


def mechanism_section(mechanism: dict[str, Any]) -> list[str]:
    return [
        "",
        f"## Mechanism: where the work sits ({label(mechanism['target'])}, T={mechanism['sizes']})",
        "",
        mechanism["line"],
        "",
        "Reduction ops inside and outside loops, per level of the Triton pipeline (at the smaller T):",
        "",
        _md(pd.DataFrame(mechanism["reduction_table"])),
        "",
        "SASS instructions each extra loop step adds, by kind (static count from two T; per program):",
        "",
        _md(pd.DataFrame(mechanism["per_step"]), floatfmt="{:.2f}"),
    ]


def estimate_section(est: dict[str, Any]) -> list[str]:
    ratios = pd.DataFrame(est["ratios"])
    lines = [
        "",
        f"## Static GPU estimate: {est['label']}",
        "",
        "Per kernel call: SASS instructions outside loops + loop-body instructions x trip count (read from the "
        "loop counter in the machine code), x warps per program x programs (B=512, T/128 row blocks). It ignores "
        "memory traffic and latency, and the reporter's time also holds his harness (random inputs, the mean), so "
        "the two ratios answer different questions: how much more work a form issues in the kernel, and how much "
        "longer the reporter's whole step ran.",
        "",
        _md(ratios, floatfmt="{:.3g}"),
        "",
        *closest_lines(est.get("closest_to_python", [])),
        "SASS instructions each extra loop step adds, per program (slope between the two largest T):",
        "",
        _md(pd.DataFrame(est["per_step"]), floatfmt="{:.2f}"),
    ]
    if est["not_estimated"]:
        lines += [
            "",
            "Not estimated: "
            + "; ".join(
                f"{r['target']} {r['variant']} T={r['T']} ({r['status']}: {r.get('reason') or 'no reason recorded'})"
                for r in est["not_estimated"]
            ),
        ]
    return lines


def closest_lines(closest: list[dict[str, Any]]) -> list[str]:
    """Which form's instructions per call come closest to the Python loop's, per target (largest T)."""
    if not closest:
        return []
    by_target: dict[tuple[str, int], list[str]] = {}
    for r in closest:
        ratio = "not estimated" if r["ratio"] is None else f"{r['ratio']:.2f}x"
        by_target.setdefault((r["target"], r["T"]), []).append(f"{r['variant']} {ratio}")
    return [
        "Closest to the Python loop's instructions per call, at the largest T estimated (each form / the "
        "Python loop, closest first): "
        + "; ".join(f"{target} T={T}: {', '.join(forms)}" for (target, T), forms in by_target.items())
        + ".",
        "",
    ]
