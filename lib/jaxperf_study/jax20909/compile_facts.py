"""Compile time against the reporter's, on matched T ranges (jax#20909, issue 33 item 3).

A growth is only compared with his over the same T range, from the first T to the last T a sweep
reached, both in his table (:func:`matched`); a range his table lacks, or a sweep cut short, is
said as such, never judged. His harness' compile estimates that come out negative are flagged
(:func:`harness_flags`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jaxperf.markdown import number

from .vocab import SEED_ROWS

#: his compile ms per T: (Python loop, fori_loop)
REPORTER = {row[0]: (row[1], row[3]) for row in SEED_ROWS}


def reporter_growth(T_from: int, T_to: int) -> dict[str, float] | None:
    """His compile growth from ``T_from`` to ``T_to`` (both in his table), else None."""
    if T_from not in REPORTER or T_to not in REPORTER:
        return None
    (p0, f0), (p1, f1) = REPORTER[T_from], REPORTER[T_to]
    return {"python": p1 / p0, "fori": f1 / f0}


def matched(
    Ts: Sequence[int],
    python_ms: Sequence[float | None],
    fori_ms: Sequence[float | None],
    *,
    planned: Sequence[int] | None = None,
    where: str,
) -> dict[str, Any]:
    """Our compile growth (Python loop, fori_loop) from the first T to the last T both compiled, beside
    his over the same range (``planned``: the T meant to be reached). ``status``: "compared", "not in
    his table", "one T" (run at one T only), "not reached" (fewer than two T compiled)."""
    both = [
        (T, p, f)
        for T, p, f in zip(Ts, python_ms, fori_ms)
        if p is not None and f is not None and p > 0 and f > 0
    ]
    missing = sorted(set(planned or ()) - {T for T, _, _ in both})
    out: dict[str, Any] = {"where": where, "not_reached": missing}
    if len(set(Ts)) == 1:  # run at one T (his harness on a TPU, by its preset): no growth to read
        return out | {"status": "one T", "T_range": [Ts[0], Ts[0]]}
    if len(both) < 2:
        return out | {"status": "not reached", "T_range": None}
    (T0, p0, f0), (T1, p1, f1) = both[0], both[-1]
    out |= {
        "T_range": [T0, T1],
        "python_ms": [p0, p1],
        "fori_ms": [f0, f1],
        "python_growth": p1 / p0,
        "fori_growth": f1 / f0,
    }
    his = reporter_growth(T0, T1) or {}
    return out | {
        "status": "compared" if his else "not in his table",
        "reporter_python_growth": his.get("python"),
        "reporter_fori_growth": his.get("fori"),
    }


def sentence(fact: dict[str, Any]) -> str:
    """One sentence of :func:`matched`'s result, in words a reader can check against his table."""
    where = fact["where"]
    if fact["status"] == "not reached":
        return f"{where}: not reached (fewer than two T compiled both loops)."
    if fact["status"] == "one T":
        return f"{where}: run at one T (T={fact['T_range'][0]}), so no growth to compare."
    (T0, T1), (p0, p1), (f0, f1) = fact["T_range"], fact["python_ms"], fact["fori_ms"]
    text = (
        f"{where}, T={T0} → {T1}: the Python loop's compile {p0:.0f} → {p1:.0f} ms ({fact['python_growth']:.1f}×), "
        f"`fori_loop`'s {f0:.0f} → {f1:.0f} ms ({fact['fori_growth']:.2f}×)"
    )
    if fact["status"] == "compared":
        text += f"; his over the same range: {fact['reporter_python_growth']:.2f}× and {fact['reporter_fori_growth']:.2f}×"
    else:
        text += "; his table has no such range"
    if fact.get("not_reached"):
        text += f"; not reached: T={', '.join(map(str, fact['not_reached']))}"
    return text + "."


def harness_flags(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The harness' compile estimates (first call - second call) that are negative: (mode, T,
    variant, the estimate, the two calls), each one a compile lost in the call's own noise."""
    return [
        {k: r.get(k) for k in ("mode", "T", "variant", "compile_ms", "first_call_ms", "second_call_ms")}
        for r in rows
        if r.get("compile_ms") is not None and r["compile_ms"] < 0
    ]


#: the engine's targets by the names a sentence uses
COMPILERS = {
    "triton sm_86": "Triton sm_86",
    "triton sm_90": "Triton sm_90",
    "mosaic_gpu sm_90a": "Mosaic GPU sm_90a",
    "mosaic_tpu v5e": "Mosaic TPU v5e",
}


def compile_summary(points: Any) -> dict[str, Any]:
    """summary.json's compile part, from :func:`jaxperf_study.jax20909.runs.compiles`' rows: ``compile``
    per (compiler, form, T), its status, compile ms, work per program and error; ``compile_growth`` per
    (compiler, form) from the smallest to the largest T compiled, beside the reporter's (``python``,
    ``fori``); ``static_ratio`` per (compiler, T), fori_loop's and ``scalar_carry u=1``'s work per
    program over the Python loop's; ``failures`` per (compiler, form), the first T that did not compile.
    """
    rows: list[dict[str, Any]] = []
    for r in points.to_dict(orient="records"):
        rows.append(
            dict(
                compiler=COMPILERS.get(r["target"], r["target"]),
                unit=r.get("unit"),
                form=r["form"],
                T=int(r["T"]),
                status=r["status"],
                compile_ms=number(r.get("compile_ms")) if r["status"] == "ok" else None,
                work_per_program=number(r.get("work_per_program")) if r["status"] == "ok" else None,
                steps=number(r.get("steps")),
                error=r.get("error") or "",
            )
        )
    growth, failures, ratios = [], [], []
    keyed: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        keyed.setdefault((row["compiler"], row["form"]), []).append(row)
    for (compiler, form), part in keyed.items():
        part = sorted(part, key=lambda r: r["T"])
        ok = [r for r in part if r["compile_ms"] is not None]
        failed = [r for r in part if r["status"] not in ("ok", "not reached")]
        if failed:
            f = failed[0]
            failures.append(
                dict(
                    compiler=compiler,
                    form=form,
                    T=f["T"],
                    steps=f["T"] // 64,
                    status=f["status"],
                    error=f["error"],
                )
            )
        if len(ok) >= 2:
            lo, hi = ok[0], ok[-1]
            his = reporter_growth(lo["T"], hi["T"])
            base = "fori" if form.startswith("fori") else form
            growth.append(
                dict(
                    compiler=compiler,
                    form=form,
                    T_min=lo["T"],
                    T_max=hi["T"],
                    ms_at_T_min=lo["compile_ms"],
                    ms_at_T_max=hi["compile_ms"],
                    growth=hi["compile_ms"] / lo["compile_ms"],
                    reporter_growth=None if his is None or base not in his else his[base],
                )
            )
    by_point = {(r["compiler"], r["form"], r["T"]): r["work_per_program"] for r in rows}
    for compiler, T in dict.fromkeys((r["compiler"], r["T"]) for r in rows):
        python = by_point.get((compiler, "python", T))
        fori = by_point.get((compiler, "fori", T), by_point.get((compiler, "fori u=1", T)))
        fix = by_point.get((compiler, "scalar_carry u=1", T))
        if python:
            ratios.append(
                dict(
                    compiler=compiler,
                    T=T,
                    fori_vs_python=None if fori is None else fori / python,
                    scalar_carry_u1_vs_python=None if fix is None else fix / python,
                )
            )
    return {"compile": rows, "compile_growth": growth, "static_ratio": ratios, "failures": failures}


def reporter_rows() -> list[dict[str, Any]]:
    """The reporter's table (RTX A6000) per T: his ms per call and compile ms, and fori_loop over
    the Python loop of each."""
    return [
        dict(
            T=T,
            python_ms=p_ms,
            fori_ms=f_ms,
            python_compile_ms=p_c,
            fori_compile_ms=f_c,
            ratio=f_ms / p_ms,
            compile_ratio=f_c / p_c,
        )
        for T, p_c, p_ms, f_c, f_ms in SEED_ROWS
    ]
