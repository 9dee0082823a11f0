"""Whether a kernel pays for ``fori_loop``: per compiler target from the work per loop step the
engine read (each target's verdict with its own numbers and the cause read from its code; the
kernel's is their common one, or "depends on the target"), or from a device's ms (:func:`measured`)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from .targets import TARGETS

FOLD = 2.0  # fori's work per step at least this many times the Python loop's: the Python loop folds it
SAME = 1.25  # within this (either way): the same work per step in both forms
COLUMNS = ["kernel", "source", "kind", "unit", "T", "fori", "python", "ratio", "q25", "q75", "cause"]
#: a target's unit of work -> the unit its classes count (SASS instruction classes, TPU bundle slots)
CLASS_UNITS = {
    "SASS instructions per warp": "SASS instructions per warp",
    "VLIW bundles (cycles)": "TPU slot operations",
}


def static(per_step: pd.DataFrame) -> pd.DataFrame:
    """Per (kernel, target): fori's and the Python loop's work per loop step, their ratio, the cause."""
    rows = []
    for (kernel, target), part in per_step.groupby(["kernel", "target"], sort=False):
        by = part.set_index("form")
        fori_name = next((f for f in ("fori", "fori u=1") if f in by.index), None)
        if fori_name is None or "python" not in by.index:
            continue
        fori, py, u = by.loc[fori_name], by.loc["python"], TARGETS[target][2]
        known = pd.notna(fori.per_step) and pd.notna(py.per_step)
        ratio = float(fori.per_step) / float(py.per_step) if known and py.per_step > 0 else None
        why = f"not read (fori_loop: {fori.get('note') or 'no count'}; Python loop: {py.get('note') or 'no count'})"
        row = dict(kernel=kernel, source=target, kind="static, compiled on a CPU", unit=f"{u} per loop step")
        row |= dict(T=f"{int(fori.T1)}-{int(fori.T2)}" if pd.notna(fori.T1) else "n/a", ratio=ratio)
        row |= dict(fori=float(fori.per_step), python=float(py.per_step)) if known else {}
        how = cause(py.get("classes"), fori.get("classes"), unit=CLASS_UNITS[u]) if ratio is not None else why
        rows.append(row | dict(cause=how))
    return pd.DataFrame(rows, columns=COLUMNS)


def cause(python: Any, fori: Any, *, unit: str, share: float = 0.8) -> str:
    """One sentence in ``unit``: the classes of the compiled code that make up ``share`` of fori_loop's
    extra (or missing) work per step over the Python loop's, largest first, citing only a class that
    grows per step in the form with more of it ("" when a form has no classes)."""
    if not isinstance(python, dict) or not isinstance(fori, dict):
        return ""
    diff = {k: float(fori.get(k) or 0) - float(python.get(k) or 0) for k in dict.fromkeys([*fori, *python])}
    total = sum(diff.values())
    if abs(total) < 0.5:
        flat = all(abs(d) < 0.5 for d in diff.values())
        return f"The same {unit} per step, class by class." if flat else ""
    sign, parts, covered = (1 if total > 0 else -1), list[str](), 0.0
    for k, d in sorted(diff.items(), key=lambda kv: -sign * kv[1]):  # a class fewer at the larger T: no cause
        if sign * d > 0 and covered < share * abs(total) and max(fori.get(k) or 0, python.get(k) or 0) > 0:
            parts, covered = [*parts, f"{k} {d:+.1f}"], covered + sign * d
    same = [k for k, d in diff.items() if abs(d) < 0.5 and (fori.get(k) or 0) > 0]
    text = f"fori_loop issues {abs(total):.1f} {'more' if sign > 0 else 'fewer'} {unit} per step"
    mostly = "mostly" if covered >= share * abs(total) else "partly"
    text += f", {mostly} {', '.join(parts)}" if parts else "; no class explains it"
    return text + (f" (the same {', '.join(same)} per step)" if same else "") + "."


def counted(rows: pd.DataFrame) -> pd.DataFrame:
    """The static rows whose ratio was read."""
    return rows[rows.kind.str.startswith("static") & rows.ratio.notna()]


def target_verdict(ratio: float) -> str:
    """ "pays" at fori/Python work per step of :data:`FOLD` or more, "does not pay" up to
    :data:`SAME`, "pays partly" between."""
    return "pays" if ratio >= FOLD else "pays partly" if ratio > SAME else "does not pay"


def verdict(rows: pd.DataFrame) -> str:
    """The targets' common verdict, or "depends on the target"; without any count, from the measured
    per-pair ratios (lower quartile at least FOLD: pays; every quartile within SAME: does not)."""
    found = {target_verdict(float(r)) for r in counted(rows).ratio}
    if found:
        return found.pop() if len(found) == 1 else "depends on the target"
    meas = rows[rows.kind.str.startswith("measured")]
    if meas.empty:
        return "not read"
    if any(q >= FOLD for q in meas.q25.dropna()):
        return "pays"
    quartiles = [*meas.q25.dropna(), *meas.q75.dropna()]
    return "does not pay" if all(1 / SAME <= r <= SAME for r in quartiles) else "pays partly"


def per_target(rows: pd.DataFrame, judge: bool = True) -> list[str]:
    """Per static row: its verdict (``judge``; else its numbers alone, beside a measurement) with its
    own numbers, then its cause; or why the count was not read."""
    out = []
    for r in rows[rows.kind.str.startswith("static")].itertuples():
        cause_ = c if isinstance(c := getattr(r, "cause", ""), str) else ""
        if r.ratio is None or pd.isna(r.ratio):
            out.append(f"{r.source}: {cause_ or 'not read'}.")
            continue
        said = f"{target_verdict(float(r.ratio))}, " if judge else ""
        numbers = f"{r.fori:.1f} against the Python loop's {r.python:.1f} {r.unit} ({r.ratio:.2f}×, T={r.T})."
        out.append(f"{r.source}: {said}fori_loop {numbers} {cause_}".rstrip())
    return out


def mechanism(rows: pd.DataFrame, judge: bool = True) -> str:
    """The per-target sentences of :func:`per_target`, joined (what the numbers show, per target)."""
    lines = per_target(rows, judge)
    return " ".join(lines) if lines else "not read (no compiler's output here)"


def verdicts(frame: pd.DataFrame) -> dict[str, dict[str, str]]:
    """Per kernel: its verdict and mechanism."""
    by = frame.groupby("kernel", sort=False)
    return {k: {"verdict": verdict(g), "mechanism": mechanism(g)} for k, g in by}


SCAN = 16  # calls per timed call in the scan, before sizing (the reporter's N)
SHARE = 0.5  # the loop's share of a call a measured verdict needs: the loop above the per-call floor
BELOW = "below what this device resolves"


def measured(timings: pd.DataFrame) -> dict[str, Any]:
    """What a device's ms per call say, at the longest scan that timed fori_loop and the Python loop at
    two T or more. ``share``: each one's loop part of its call at the largest T, ms linear in T
    ((ms_L - ms_S) / ms_L x T_L / (T_L - T_S); 0 unless their quartiles part). Where one reaches
    :data:`SHARE`, ``verdict`` judges fori/Python per pair there ("not resolved" where its quartiles
    judge apart); else :data:`BELOW` (``floor``: the forms' ms at the smallest T); None untimed."""
    from ..timing import iqr_stats, pair_ratios

    ok = timings.dropna(subset=["ms_per_call"]) if "ms_per_call" in timings else timings.iloc[0:0]
    ok = ok if "scan" in ok else ok.assign(scan=SCAN)  # timed before the scan was sized: one scan
    fori = "fori" if "fori" in set(ok.form) else "fori u=1"
    scans, Ts = sorted(set(ok.scan)), sorted(set(ok["T"]))
    out: dict[str, Any] = dict(verdict=None, why="not timed")
    out["tried"] = f"T={Ts[0]}-{Ts[-1]} in scans of {' and '.join(map(str, scans))} calls" if Ts else ""
    for scan in reversed(scans):
        at = ok[ok.scan == scan]
        Ts = sorted(set(at[at.form == fori]["T"]) & set(at[at.form == "python"]["T"]))
        if len(Ts) < 2:
            continue
        low, high = Ts[0], Ts[-1]
        out |= dict(why="floor", verdict=BELOW, scan=int(scan), T=int(high), T_small=int(low), share={})
        for form in ("python", fori):
            s, big = (iqr_stats(at[(at.form == form) & (at["T"] == t)].ms_per_call) for t in (low, high))
            grew = (big["median"] - s["median"]) / big["median"] * high / (high - low)
            key = "python" if form == "python" else "fori"
            out["share"][key], out[key] = (min(grew, 1.0) if big["q25"] > s["q75"] else 0.0), big["median"]
        floor = at[at["T"] == low].groupby("form").ms_per_call.median()
        out["floor"] = (float(floor.min()), float(floor.max()))
        if max(out["share"].values()) >= SHARE:
            r = pair_ratios(at[at["T"] == high].rename(columns={"form": "variant"}), "python", "ms_per_call")
            r = r[r.variant == fori].ratio
            q = dict(ratio=float(r.median()), q25=float(r.quantile(0.25)), q75=float(r.quantile(0.75)))
            judged = {target_verdict(q["q25"]), target_verdict(q["q75"])}
            out |= q | dict(why="resolved", verdict=judged.pop() if len(judged) == 1 else "not resolved")
        break
    return out
