"""From the sweep's tidy rows to the answers: medians and ratios, the reporter's table,
the recommendation, the ``seed_reproduction`` rows and issue 11's goals."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from jaxperf import timing

from .. import goals as verdicts
from .vocab import FIX, PORTABLE_FORMS, UNROLLED_FORMS, seed_cell

WITHIN = 1.05  # "within 5% of the Python loop"
COMPILE_BUDGET = 1.5  # "compile time within 1.5x of fori_loop(unroll=1)"
REPRODUCED_RATIO = 2.0  # "fori/Python at least 2 at the largest T"
ROOFLINE_WITHIN = 1.5  # "best fix within 1.5x of the roofline at the largest T"
GROUP = ["mode", "kernel", "T"]
KEYS = [*GROUP, "loop_form", "unroll", "variant"]


def headline(variants: pd.DataFrame, timings: pd.DataFrame) -> pd.DataFrame:
    """One row per (mode, kernel, T, loop form, unroll): medians and IQRs, ratios to python and fori u=1."""
    grouped = timings.groupby(KEYS, sort=False)["ms_per_call"]
    stats = grouped.apply(lambda s: pd.Series(timing.iqr_stats(s))).unstack().reset_index()
    stats = stats.rename(columns={"median": "ms_per_call", "q25": "ms_q25", "q75": "ms_q75", "n": "repeats"})
    extra = ["batch"] if "batch" in variants else []  # a device's batch, per T on a TPU
    out = stats.merge(variants[KEYS + ["lower_ms", "compile_ms", "error_vs_tolerance", *extra]], on=KEYS)
    if "python" in set(timings["variant"]):
        ratios = timing.pair_ratios(timings, "python", "ms_per_call", by=GROUP)
        grouped = ratios.groupby(GROUP + ["variant"])["ratio"]
        stats = [grouped.median(), grouped.quantile(0.25), grouped.quantile(0.75)]
        med = pd.concat(stats, axis=1, keys=["ms_vs_python", "ms_vs_python_q25", "ms_vs_python_q75"])
        out = out.merge(med.reset_index(), on=GROUP + ["variant"], how="left")
        py = out[out.variant == "python"].set_index(GROUP)["compile_ms"].rename("python_compile_ms")
        out = out.join(py, on=GROUP)
    if "fori u=1" in set(timings["variant"]):
        f1 = out[out.variant == "fori u=1"].set_index(GROUP)["compile_ms"].rename("fori1_compile_ms")
        out = out.join(f1, on=GROUP)
        out["compile_vs_fori1"] = out["compile_ms"] / out["fori1_compile_ms"]
    return out


def seed_table(head: pd.DataFrame, mode: str, kernel: str = "seed") -> pd.DataFrame:
    """The reporter's table: per T, compile ms / ms per kernel call, Python loop vs fori_loop."""
    part = head[(head["mode"] == mode) & (head["kernel"] == kernel)]
    rows = []
    for T, g in part.groupby("T", sort=True):
        row: dict[str, Any] = {"T": int(T)}
        for label, variant in (("Python loop", "python"), ("fori_loop", "fori u=1")):
            hit = g[g.variant == variant]
            row[f"{label} compile / exec"] = (
                seed_cell(*hit[["compile_ms", "ms_per_call"]].iloc[0]) if len(hit) else "n/a"
            )
        rows.append(row)
    return pd.DataFrame(rows)


def recommend(
    head: pd.DataFrame, loop_forms: Sequence[str] = UNROLLED_FORMS, within: float = WITHIN
) -> pd.DataFrame:
    """Per (mode, kernel, T, loop form): the smallest unroll within ``within`` of that form's best,
    and whether it meets issue 11's fix goal (execution within 5% of the Python loop,
    compile within 1.5x of fori_loop(unroll=1)); None where that was not measured. Execution is
    judged on the per-pair ratio's spread (:func:`exec_verdict`): "tie" when it holds 1.05."""
    rows = []
    for (mode, kernel, T, form), g in head[head.loop_form.isin(loop_forms)].groupby([*GROUP, "loop_form"]):
        best = g.ms_per_call.min()
        pick = g[g.ms_per_call <= within * best].sort_values("unroll").iloc[0]
        vs_python, vs_fori1 = pick.get("ms_vs_python", np.nan), pick.get("compile_vs_fori1", np.nan)
        exec_ok = exec_verdict(pick, within)
        compile_ok = None if pd.isna(vs_fori1) else bool(vs_fori1 <= COMPILE_BUDGET)
        rows.append(
            dict(
                mode=mode,
                kernel=kernel,
                T=int(T),
                loop_form=form,
                unroll=int(pick.unroll),
                ms_per_call=pick.ms_per_call,
                best_unroll=int(g.loc[g.ms_per_call.idxmin(), "unroll"]),
                best_ms_per_call=best,
                compile_ms=pick.compile_ms,
                ms_vs_python=vs_python,
                exec_within_5pct_of_python=exec_ok,
                compile_vs_fori1=vs_fori1,
                **{"compile_within_1.5x_of_fori1": compile_ok},
                goal_met=None
                if exec_ok is None or compile_ok is None
                else verdicts.every([exec_ok, verdicts.MET if compile_ok else verdicts.MISSED]),
            )
        )
    return pd.DataFrame(rows)


def exec_verdict(row: pd.Series, within: float = WITHIN) -> str | None:
    """One variant's execution against the Python loop: "met" when the per-pair ratio's
    interquartile range lies within ``within``, "not met" when it lies above, else "tie";
    None where no Python loop ran at that T."""
    pair = _pair_stat(row)
    return None if pair is None else verdicts.judge(pair, within, at_least=False)


def _pick_fix(g: pd.DataFrame) -> pd.Series | None:
    """The portable variant to report as the fix at one T: the fastest within the compile
    budget (the fastest of all portable variants if none is)."""
    portable = g[g.loop_form.isin(PORTABLE_FORMS)]
    if portable.empty:
        return None
    ok = portable[portable.get("compile_vs_fori1", pd.Series(np.nan, index=portable.index)) <= COMPILE_BUDGET]
    pool = ok if len(ok) else portable
    return pool.loc[pool.ms_per_call.idxmin()]


def seed_reproduction(head: pd.DataFrame, kernel: str = "seed") -> list[dict[str, Any]]:
    """summary.json's ``seed_reproduction``: per (mode, T) with a Python loop and fori_loop(unroll=1),
    the reporter's columns, their ratio, the fastest portable form there (``fix_*``) and the study's
    named fix, ``scalar_carry u=1`` (``scalar_carry_u1_*``)."""
    rows = []
    for (mode, T), g in head[head.kernel == kernel].groupby(["mode", "T"], sort=False):
        at = g.set_index("variant")
        if "python" not in at.index or "fori u=1" not in at.index:
            continue
        py, f1, fix = at.loc["python"], at.loc["fori u=1"], _pick_fix(g)
        named = at.loc[FIX] if FIX in at.index else None  # the study's fix, scalar_carry u=1
        rows.append(
            dict(
                mode=mode,
                T=int(T),
                batch=int(py.batch) if pd.notna(py.get("batch", np.nan)) else None,
                python_ms=float(py.ms_per_call),
                fori_ms=float(f1.ms_per_call),
                ratio=float(f1.ms_per_call / py.ms_per_call),
                ratio_pair=_pair_stat(f1),  # fori u=1 over the Python loop, per pair
                python_compile_ms=float(py.compile_ms),
                fori_compile_ms=float(f1.compile_ms),
                fix_form=None if fix is None else str(fix.loop_form),
                fix_unroll=None if fix is None else int(fix.unroll),
                fix_ms=None if fix is None else float(fix.ms_per_call),
                fix_compile_ms=None if fix is None else float(fix.compile_ms),
                scalar_carry_u1_ms=None if named is None else float(named.ms_per_call),
                scalar_carry_u1_vs_python=None
                if named is None
                else float(named.ms_per_call / py.ms_per_call),
                scalar_carry_u1_compile_ms=None if named is None else float(named.compile_ms),
                # per pair (same repeat), median and interquartile range: what a verdict reads
                scalar_carry_u1_vs_python_pair=None if named is None else _pair_stat(named),
            )
        )
    return sorted(rows, key=lambda r: (r["mode"], r["T"]))


def _pair_stat(row: pd.Series) -> dict[str, float] | None:
    """A variant's per-pair ratio to the Python loop as {median, q25, q75}, None if not timed."""
    if pd.isna(row.get("ms_vs_python", np.nan)):
        return None
    return {
        q: float(row[c])
        for q, c in (("median", "ms_vs_python"), ("q25", "ms_vs_python_q25"), ("q75", "ms_vs_python_q75"))
    }


def _spread(pair: dict[str, float] | None, point: float) -> tuple[float, float, float, str]:
    """A ratio as (median, q25, q75, words): the per-pair median and interquartile range where
    a per-pair spread exists, else the point value (a ratio of medians) with no range."""
    if not pair or any(pd.isna(pair.get(q, np.nan)) for q in ("median", "q25", "q75")):
        return point, point, point, f"{point:.2f}×"
    med = float(pair["median"])
    lo, hi = min(pair["q25"], med), max(pair["q75"], med)
    return med, lo, hi, f"{med:.2f}× [{lo:.2f}, {hi:.2f}] per pair"


def pattern_parts(
    Ts: Sequence[int],
    ratios: Sequence[float],
    python_compile_ms: Sequence[float],
    fori_compile_ms: Sequence[float],
    pairs: Sequence[dict[str, float] | None] | None = None,
) -> dict[str, list[str]]:
    """The reporter's pattern, part by part: ``{"misses": [...], "ties": [...]}`` in words with their
    numbers (both empty: shown). fori/Python grows with T (its per-pair interquartile range at the
    largest T above the first T's; overlapping ones are not resolved, the Ts between not judged) to at
    least 2 at the largest T (``goals.judge``); the Python loop's compile at least doubles, fori's
    grows at most 1.5x. ``pairs``: each T's per-pair {median, q25, q75} (else a point)."""
    misses: list[str] = []
    ties: list[str] = []
    if not ratios:
        return {"misses": misses, "ties": ties}
    pairs = list(pairs) if pairs is not None else [None] * len(ratios)
    _, lo0, hi0, first = _spread(pairs[0], ratios[0])
    med1, lo1, hi1, last = _spread(pairs[-1], ratios[-1])
    ends = f"{first} at T={Ts[0]}, {last} at T={Ts[-1]}"
    if hi1 <= lo0:
        misses.append(f"fori/Python does not grow ({ends})")
    elif lo1 <= hi0:
        ties.append(f"fori/Python's growth is within its spread ({ends})")
    at_least = verdicts.judge({"median": med1, "q25": lo1, "q75": hi1}, REPRODUCED_RATIO, at_least=True)
    if at_least == verdicts.MISSED:
        misses.append(f"fori/Python is {last} at T={Ts[-1]}, under {REPRODUCED_RATIO:g}×")
    elif at_least == verdicts.TIE:
        ties.append(
            f"fori/Python is {last} at T={Ts[-1]}, not resolved against {REPRODUCED_RATIO:g}× (its spread holds it)"
        )
    if python_compile_ms and not python_compile_ms[-1] > 2 * python_compile_ms[0]:
        misses.append(
            f"the Python loop's compile does not double ({python_compile_ms[0]:.0f} → {python_compile_ms[-1]:.0f} ms)"
        )
    if fori_compile_ms and not fori_compile_ms[-1] <= 1.5 * fori_compile_ms[0]:
        misses.append(
            f"fori_loop's compile grows more than 1.5× ({fori_compile_ms[0]:.0f} → {fori_compile_ms[-1]:.0f} ms)"
        )
    return {"misses": misses, "ties": ties}


def goals(
    head: pd.DataFrame,
    *,
    roofline_ms: float | None = None,
    fresh_output_roofline_ms: float | None = None,
    mode: str = "xla",
    kernel: str = "seed",
    quick: bool,
) -> dict[str, Any]:
    """Issue 11's goals on (``mode``, ``kernel``), with the numbers that decide each. ``roofline_ms``:
    the largest T's bytes over the in-place copy bandwidth (the yardstick); ``fresh_output_roofline_ms``
    the same at a fresh output's bandwidth (beside it). ``met`` is True/False, None where not
    measured, and never judged in a smoke run (``quick``: ``judged`` False, every ``met`` None)."""
    rows = [r for r in seed_reproduction(head, kernel) if r["mode"] == mode]
    part = head[(head["mode"] == mode) & (head.kernel == kernel)]
    out: dict[str, Any] = {"judged": not quick, "mode": mode, "kernel": kernel}
    ratios = [r["ratio"] for r in rows]
    py_c, f1_c = [r["python_compile_ms"] for r in rows], [r["fori_compile_ms"] for r in rows]
    Ts = [r["T"] for r in rows]
    pairs = [r.get("ratio_pair") for r in rows]
    parts = pattern_parts(Ts, ratios, py_c, f1_c, pairs) if len(rows) >= 2 else {}
    rep_verdict = None
    if parts:
        rep_verdict = verdicts.MISSED if parts["misses"] else verdicts.TIE if parts["ties"] else verdicts.MET
    out["reproduction"] = dict(
        _verdict(rep_verdict),
        misses=parts.get("misses", []),
        ties=parts.get("ties", []),
        Ts=Ts,
        ratios=ratios,
        ratio_pairs=pairs,
        python_compile_ms=py_c,
        fori_compile_ms=f1_c,
    )
    per_T: dict[int, list[str] | None] = {}
    tying: dict[int, list[str] | None] = {}
    at_T: list[str | None] = []
    for T, g in part.groupby("T"):
        if "ms_vs_python" not in g:
            per_T[int(T)] = tying[int(T)] = None
            at_T.append(None)
            continue
        ok = g[g.loop_form.isin(PORTABLE_FORMS) & (g.get("compile_vs_fori1", np.nan) <= COMPILE_BUDGET)]
        ok = ok.assign(verdict=[exec_verdict(row) for _, row in ok.iterrows()]).sort_values("ms_per_call")
        per_T[int(T)] = [str(v) for v in ok.loc[ok.verdict == verdicts.MET, "variant"]]
        tying[int(T)] = [str(v) for v in ok.loc[ok.verdict == verdicts.TIE, "variant"]]
        # this T meets the goal when one form meets it, ties when none meets and one ties
        at_T.append(verdicts.MET if per_T[int(T)] else verdicts.TIE if tying[int(T)] else verdicts.MISSED)
    verdict = None if not at_T or any(v is None for v in at_T) else verdicts.every(at_T)
    out["fix"] = dict(
        _verdict(verdict),
        variants_meeting_it_per_T=per_T,
        variants_tying_it_per_T=tying,
    )
    best = roof_verdict = None  # the fastest portable form at the largest T, against the roofline
    largest = part[(part["T"] == part["T"].max()) & part.loop_form.isin(PORTABLE_FORMS)]
    if roofline_ms and len(largest):
        best_row = largest.loc[largest.ms_per_call.idxmin()]
        best = float(best_row.ms_per_call)
        quartiles = (("median", "ms_per_call"), ("q25", "ms_q25"), ("q75", "ms_q75"))
        ratio = {q: best_row.get(col, best) / roofline_ms for q, col in quartiles}
        roof_verdict = verdicts.judge(ratio, ROOFLINE_WITHIN, at_least=False)
    fresh = fresh_output_roofline_ms
    out["roofline"] = dict(
        _verdict(roof_verdict),
        best_fix_ms=best,
        roofline_ms=roofline_ms,
        best_fix_vs_roofline=None if best is None or not roofline_ms else best / roofline_ms,
        fresh_output_roofline_ms=fresh,
        best_fix_vs_fresh_output_roofline=None if best is None or not fresh else best / fresh,
    )
    if quick:
        for key in ("reproduction", "fix", "roofline"):
            out[key] |= _verdict(None)
        out["reproduction"]["misses"] = out["reproduction"]["ties"] = []  # nothing judged
    return out


def _verdict(verdict: str | None) -> dict[str, Any]:
    """A goal's ``met`` (True/False, None where not judged) and its ``verdict``."""
    return dict(met=None if verdict is None else verdict == verdicts.MET, verdict=verdict)


def device_ms(head: pd.DataFrame, runs: Sequence[Any] = ()) -> pd.DataFrame:
    """Per (kernel, T, form) timed compiled on a device: ms per call and compile ms (the sweep's
    rows for the reporter's kernel, each engine run's timings for the others; ``fori`` is ``fori u=1``)."""
    cols = ["kernel", "T", "form", "ms_per_call", "compile_ms"]
    frames = [head[head["mode"] == "pallas"].rename(columns={"variant": "form"}).reindex(columns=cols)]
    for run in runs:
        t = run.timings.dropna(subset=["ms_per_call"])
        built = (
            run.points.reindex(columns=["form", "T", "compile_ms"])
            .groupby(["form", "T"], as_index=False)
            .min()
        )
        frames.append(
            t.groupby(["form", "T"], as_index=False)
            .ms_per_call.median()
            .merge(built, how="left")
            .assign(kernel=run.kernel)
        )
    out = pd.concat(frames, ignore_index=True).reindex(columns=cols)
    return out.assign(form=out.form.replace("fori", "fori u=1"), T=out["T"].astype(int))


def static_vs_measured(head: pd.DataFrame, runs: Sequence[Any] = ()) -> pd.DataFrame:
    """Per (kernel, T, form) timed on a TPU: ms per call beside the static cycles per program of the
    same kernel at the same batch (the engine's Mosaic TPU compile on the TPU's host), ``ns_per_cycle``
    (ms per call over static cycles per call: one value if the count predicted time) and each over
    the Python loop's at that T (``ms_vs_python``, ``static_vs_python``)."""
    columns = ["kernel", "form", "T", "target", "work_per_program", "programs"]
    points = pd.concat([r.points for r in runs], ignore_index=True).reindex(columns=columns) if runs else None
    if points is None or points.empty:
        return pd.DataFrame()
    points = points[(points.target == "mosaic_tpu v5e") & points.work_per_program.notna()]
    points = points.assign(form=points.form.replace("fori", "fori u=1"), T=points["T"].astype(int))
    out = device_ms(head, runs).merge(points.drop(columns="target"), on=["kernel", "T", "form"])
    out["ns_per_cycle"] = out.ms_per_call * 1e6 / (out.work_per_program * out.programs)
    python = out[out.form == "python"].set_index(["kernel", "T"])
    for value, ratio in (("ms_per_call", "ms_vs_python"), ("work_per_program", "static_vs_python")):
        out[ratio] = out[value] / out.join(python[value].rename("_base"), on=["kernel", "T"])["_base"]
    return out


def best_forms(head: pd.DataFrame, runs: Sequence[Any] = ()) -> list[dict[str, Any]]:
    """Which form to write on this device, per kernel, from measured ms at its largest T timed: the
    fastest form, its ms and compile ms, it and ``fori u=1`` over the Python loop's ms."""
    out = []
    for kernel, part in device_ms(head, runs).groupby("kernel", sort=False):
        at = part[part["T"] == part["T"].max()].set_index("form")
        best, ms = at.ms_per_call.idxmin(), at.ms_per_call
        python, fori = ms.get("python"), ms.get("fori u=1")
        row = dict(kernel=kernel, T=int(at["T"].iloc[0]), form=str(best), ms_per_call=float(ms[best]))
        row["compile_ms"] = None if pd.isna(at.compile_ms[best]) else float(at.compile_ms[best])
        row["vs_python"] = None if python is None else float(ms[best] / python)
        out.append(row | {"fori_vs_python": None if python is None or fori is None else float(fori / python)})
    return out
