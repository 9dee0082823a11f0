"""One accounting of an ``eqx.filter_pmap`` call that adds up, in one clock.

Each round makes three blocked calls, interleaved (:func:`jaxperf_study.dispatch.stages.call_breakdown`):
the call made stage by stage as Equinox makes it, the ordinary call, and the seed's
``jax.pmap`` on the partitioned state. Every quantity is the dispatching thread's CPU time (the
wall time where that clock is too coarse for a stage: :func:`clock`), per round, so the parts and
the gap they explain are in one unit from one set of rounds:

- Equinox's own stages, each mapped to the maintainer's suspects in equinox#192;
- the inner ``jax.pmap`` call's excess: the staged call's dispatch, wait and freeing of the
  outputs, minus the whole ``jax.pmap``-on-params call of the same round;
- the gap: the ordinary ``filter_pmap`` call minus the ``jax.pmap``-on-params call;
- unexplained: the gap minus the parts (the staged call's own clock reads, and noise).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import pandas as pd

from jaxperf import timing, timing_config
from jaxperf.diagnosis import carry as carry_mod
from jaxperf.diagnosis.kinds import identify
from jaxperf.diagnosis.paths import partitioned

from .. import reruns
from . import stages
from .cost import Cell
from .models import ModelSpec, count_leaves

#: part -> (stages of the staged call it sums, the maintainer's suspect it answers)
PARTS: dict[str, tuple[tuple[str, ...], str]] = {
    "axis resolution": (("axis resolution",), "signature binding and in_axes resolution"),
    "partition": (("partition", "ShapeDtypeStruct", "cache lookup"), "partition (and hashing it)"),
    "combine": (("combine",), "combine"),
    "inner jax.pmap call's excess": (
        ("inner pmap call (dispatch)", "wait for execution", "free the outputs"),
        "out-axis handling: jax.pmap rebuilds Equinox's per-leaf in_axes and output trees",
    ),
}
INNER = "inner jax.pmap call's excess"


def measure(spec: ModelSpec, rounds: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(stage rows of :func:`~jaxperf_study.dispatch.stages.call_breakdown`, cProfile's top functions)
    for the no-op step on ``spec``'s model under ``eqx.filter_pmap``, against the seed's
    ``jax.pmap`` on the partitioned state (the same path a diagnosis builds)."""
    wrapped, args = Cell("noop", spec, False, "pmap").make()
    step = identify(wrapped)
    out = wrapped(*args)
    reference = partitioned(step, args, carry_mod.infer(args, out), None)
    rows = stages.call_breakdown(wrapped, args, lambda: reference.fn(*reference.args), rounds)
    profile = stages.profile_calls(lambda: wrapped(*args), rounds)
    model, opt_state = spec.build()
    leaves = count_leaves(model, spec.batch(1), opt_state)
    labels = {"model": spec.name, "leaves": leaves}
    return rows.assign(**labels, cpu_tick_s=timing_config.cpu_tick()), profile.assign(**labels)


def clock(rows: pd.DataFrame) -> str:
    """The stage rows' column every quantity is read in: the thread's CPU (``cpu_ms``), or the wall
    time (``wall_ms``) where the CPU clock moves in steps too coarse for a stage (a TPU host's 10 ms)."""
    return "wall_ms" if timing.coarse_clock(rows) else "cpu_ms"


def per_round(
    rows: pd.DataFrame,
    parts: dict[str, tuple[str, ...]] | None = None,
    calls: tuple[str, ...] = stages.CALLS,
    inner: str = INNER,
) -> pd.DataFrame:
    """One row per round: each part (``parts``: part -> the stages of the staged call
    ``calls[0]`` it sums; default :data:`PARTS`), the sum of parts, the gap (the ordinary call
    ``calls[1]`` less ``calls[2]``, which the ``inner`` part is also set against), the
    unexplained rest and both calls (ms, in :func:`clock`'s column)."""
    parts = parts or {part: names for part, (names, _) in PARTS.items()}
    value = clock(rows)
    staged = rows[rows["call"] == calls[0]].pivot_table(index="round", columns="stage", values=value)
    whole = rows[rows["stage"] == "whole call"].pivot_table(index="round", columns="call", values=value)
    base = whole[calls[2]]
    out = pd.DataFrame(index=staged.index)
    for part, names in parts.items():
        out[part] = staged[list(names)].sum(axis=1)
    out[inner] -= base
    out["sum of parts"] = out[list(parts)].sum(axis=1)
    out["gap"] = whole[calls[1]] - base
    out["unexplained"] = out["gap"] - out["sum of parts"]
    out[f"{calls[1]} call"] = whole[calls[1]]
    out[f"{calls[2]} call"] = base
    return out.reset_index()


def whole_percents(shares: list[float]) -> list[int]:
    """``shares`` (summing to 1) as whole percents that sum to 100 as printed: each rounded
    down, then the points left over given to the largest remainders."""
    scaled = [100 * x for x in shares]
    out = [math.floor(x) for x in scaled]
    for i in sorted(range(len(scaled)), key=lambda i: out[i] - scaled[i])[: 100 - sum(out)]:
        out[i] += 1
    return out


def table(rows: pd.DataFrame) -> pd.DataFrame:
    """Per model: each part's CPU ms per call (median, quartiles), its suspect, and its share of
    the gap (``share_pct``: as whole percents that sum to 100, :func:`whole_percents`). A share is the part's mean over the gap's mean, both over the same rounds: those
    whose gap lies within its interquartile range (one set of rounds for every part, so a
    stalled round does not dominate). Means over one set of rounds add up: the parts' shares and
    the unexplained rest's sum to 1 exactly, where medians of parts need not sum to the median
    gap (and a sum a reader checks must add up as printed)."""
    frames = []
    for (model, leaves), part_rows in rows.groupby(["model", "leaves"], sort=False):
        rounds = per_round(part_rows)
        typical = _typical(rounds)
        gap = float(typical["gap"].mean())
        # per process (per_leaf.pooled numbers a process's rounds from process * 1e6): the range
        each = [_typical(p) for _, p in rounds.groupby(rounds["round"] // 1_000_000, sort=True)]
        for name in [
            *PARTS,
            "sum of parts",
            "unexplained",
            "gap",
            "filter_pmap call",
            "jax.pmap on params call",
        ]:
            stats = timing.iqr_stats(rounds[name])
            frames.append(
                {
                    "model": model,
                    "leaves": leaves,
                    "part": name,
                    "suspect": PARTS[name][1] if name in PARTS else "",
                    "cpu_ms": stats["median"],
                    "cpu_ms_q25": stats["q25"],
                    "cpu_ms_q75": stats["q75"],
                    "share_of_gap": float(typical[name].mean()) / gap if gap else float("nan"),
                    "rounds": stats["n"],
                    **_share_range([100 * p[name].mean() / p["gap"].mean() for p in each if p["gap"].mean()]),
                }
            )
    out = pd.DataFrame(frames)
    out["share_pct"] = pd.array([pd.NA] * len(out), dtype="Int64")
    for _, part in out.groupby("model", sort=False):
        shown = part[part["part"].isin([*PARTS, "unexplained"])]
        if shown["share_of_gap"].notna().all():
            out.loc[shown.index, "share_pct"] = whole_percents(list(shown["share_of_gap"]))
    return out


def _typical(rounds: pd.DataFrame) -> pd.DataFrame:
    """The rounds whose gap lies within its interquartile range (a stalled round does not dominate)."""
    lo, hi = rounds["gap"].quantile([0.25, 0.75])
    return rounds[(rounds["gap"] >= lo) & (rounds["gap"] <= hi)]


def _share_range(shares: list[float]) -> dict[str, float]:
    """The rerun range of a share (%) over the processes' own shares."""
    if not shares:
        return {"share_pct_lo": float("nan"), "share_pct_hi": float("nan"), "processes": 0}
    found = reruns.spread_of(shares, process=range(len(shares)))
    return {"share_pct_lo": found["lo"], "share_pct_hi": found["hi"], "processes": found["n"]}


def adds_up(accounting: pd.DataFrame) -> dict[str, bool]:
    """Per model: does the unexplained rest's interquartile range hold 0?"""
    rest = accounting[accounting["part"] == "unexplained"]
    return {row.model: bool(row.cpu_ms_q25 <= 0 <= row.cpu_ms_q75) for row in rest.itertuples()}


def run(specs: Iterable[ModelSpec], rounds: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`measure` for each model: (stage rows, profiles)."""
    found = [measure(spec, rounds) for spec in specs]
    return pd.concat([f[0] for f in found], ignore_index=True), pd.concat(
        [f[1] for f in found], ignore_index=True
    )


def none() -> tuple[pd.DataFrame, pd.DataFrame]:
    """What :func:`run` returns for no model: (no stage rows, no profiles)."""
    return pd.DataFrame(columns=["model", "leaves", "round", "call", "stage", "cpu_ms"]), pd.DataFrame()
