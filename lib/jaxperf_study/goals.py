"""A goal's verdict from a measured spread: met, not met, or not resolved (key ``"tie"``).

A median that clears a goal while its interquartile range holds it is not resolved: a rerun
of the same study could land on either side, so it is never stated as met, nor as a tie. Every study's
goal is judged here, and ``tools/readme.py`` states the README's with the same rule.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from jaxperf.markdown import NOT_JUDGED, number

MET, TIE, MISSED = "met", "tie", "not met"
Verdict = str  # one of VERDICTS
VERDICTS = (MET, TIE, MISSED)


def judge(stats: Mapping[str, Any] | None, goal: float, *, at_least: bool = True) -> Verdict | None:
    """``stats`` ({median, q25, q75}) against ``goal``: met when the whole interquartile range
    is on the goal's side (``>= goal`` when ``at_least``, else ``<= goal``), not met when the
    whole range is on the other side, a tie when the range holds the goal. A missing
    quartile counts as the median. None when nothing was measured."""
    if stats is None:
        return None
    median = number(stats.get("median"))
    if median is None:
        return None
    q25, q75 = number(stats.get("q25")), number(stats.get("q75"))
    lo = median if q25 is None else min(q25, median)
    hi = median if q75 is None else max(q75, median)
    if at_least:
        return MET if lo >= goal else MISSED if hi < goal else TIE
    return MET if hi <= goal else MISSED if lo > goal else TIE


def every(verdicts: Iterable[Verdict | None]) -> Verdict | None:
    """A goal that must hold in every cell: not met when any cell misses it, met when every
    cell meets it, else a tie. Cells that were not judged (None) are left out; None when no
    cell was judged."""
    found = [v for v in verdicts if v is not None]
    if not found:
        return None
    if MISSED in found:
        return MISSED
    return MET if all(v == MET for v in found) else TIE


def count(verdicts: Iterable[Verdict | None]) -> dict[str, int]:
    """How many judged cells met the goal, tied with it and missed it."""
    found = [v for v in verdicts if v is not None]
    return {v: sum(1 for f in found if f == v) for v in VERDICTS}


def text(
    verdict: Verdict | None,
    quick: bool,
    *,
    met_text: str = "met",
    missed_text: str = "not met",
    tie_text: str = "not resolved (its spread holds the goal)",
) -> str:
    """A verdict as a summary states it: never judged in a smoke run, ``n/a`` when nothing
    was measured."""
    if quick:
        return NOT_JUDGED
    if verdict is None:
        return "n/a (not measured)"
    if verdict not in VERDICTS:
        raise ValueError(f"verdict={verdict!r}: expected one of {VERDICTS} or None")
    return {MET: met_text, TIE: tie_text, MISSED: missed_text}[verdict]
