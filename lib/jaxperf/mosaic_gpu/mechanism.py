"""Why fori_loop costs more on Mosaic GPU (jax#20909), read from Mosaic GPU's own output.

From the compile sweep's dumps at the two mechanism T (compiled for sm_90a on a CPU, never
executed), every level is counted inside and outside its loops
(:func:`jaxperf.compilers.mosaic_gpu.ir.level_counts`): the module Pallas hands to
Mosaic GPU (``scf.for`` and what it carries), the LLVM dialect after Mosaic GPU's passes,
PTX and SASS. "The reduction inside the loop body" is a count per level: warp shuffles and
barriers in a loop. What one extra step costs is the static SASS count of the larger T minus
the smaller's, over the extra steps, by instruction kind (for a form whose loop was unrolled
away, that is what each step added to the straight-line code). How the Python loop's program
grows with T is read from the compile sweep at every T (:func:`python_growth`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ..compilers.mosaic_gpu import compile as mgpu_compile
from ..compilers.mosaic_gpu import ir as mgpu_ir
from ..compilers.mosaic_gpu import sass as mgpu_sass
from ..compilers.mosaic_gpu.ir import LEVELS
from ..compilers.triton import sass as _sass
from ..jax20909 import vocab

IN_LOOP, OUTSIDE = "in loop", "outside loops"


def counts(compiled: pd.DataFrame, out_dir: Path, sizes: tuple[int, int]) -> pd.DataFrame:
    """Tidy counts: one row per (variant, T, level, place, kind) with ``count`` and the level's loops."""
    rows = []
    for r in compiled[compiled["T"].isin(sizes) & (compiled.status == "ok")].itertuples():
        texts = mgpu_compile.read_dump(out_dir, {"dump_dir": getattr(r, "dump_dir", "")})
        if not texts:
            continue
        for level, (inside, outside, loops) in mgpu_ir.level_counts(texts).items():
            for place, found in ((IN_LOOP, inside), (OUTSIDE, outside)):
                rows += [
                    dict(
                        variant=r.variant, T=int(r.T), level=level, place=place, kind=k, count=n, loops=loops
                    )
                    for k, n in found.items()
                ]
    return pd.DataFrame(rows, columns=["variant", "T", "level", "place", "kind", "count", "loops"])


def per_step(compiled: pd.DataFrame, out_dir: Path, sizes: tuple[int, int]) -> pd.DataFrame:
    """SASS instructions each extra loop step adds per program, by kind, between the two T."""
    T1, T2 = sorted(sizes)
    extra = (T2 - T1) // vocab.SEED_STEP_ROWS
    rows = []
    ok = compiled[compiled.status == "ok"]
    for variant in vocab.frame_variant_order(ok):
        by_T = {}
        for T in (T1, T2):
            hit = ok[(ok.variant == variant) & (ok["T"] == T)]
            texts = mgpu_compile.read_dump(out_dir, {"dump_dir": hit.iloc[0]["dump_dir"]}) if len(hit) else {}
            by_T[T] = mgpu_sass.dynamic_counts(texts["sass"]) if texts else None
        first, second = by_T[T1], by_T[T2]
        if first is None or second is None:
            continue
        kinds = {k: _step(first.by_category[k], second.by_category[k], extra) for k in _sass.CATEGORIES}
        known = [v for v in kinds.values() if v is not None]
        total = sum(known) if len(known) == len(kinds) else None
        rows.append(dict(variant=variant, T1=T1, T2=T2, per_step_total=total, **kinds))
    return pd.DataFrame(rows)


def _step(first: int | None, second: int | None, extra: int) -> float | None:
    return None if first is None or second is None else (second - first) / extra


def reduction_table(table: pd.DataFrame) -> pd.DataFrame:
    """Per variant and level at the smaller T: shuffles and barriers inside and outside loops."""
    part = table[table["T"] == table["T"].min()]
    out = []
    for (variant, level), g in part.groupby(["variant", "level"], sort=False):
        row: dict[str, Any] = {"variant": variant, "level": level, "loops": int(g["loops"].iloc[0])}
        for kind in ("shuffle", "barrier"):
            for place in (IN_LOOP, OUTSIDE):
                row[f"{kind} {place}"] = int(g[(g.kind == kind) & (g.place == place)]["count"].sum())
        out.append(row)
    frame = pd.DataFrame(out)
    if frame.empty:
        return frame
    frame["level"] = pd.Categorical(frame["level"], LEVELS, ordered=True)
    return frame.sort_values(["variant", "level"], key=vocab.variant_sort_key, kind="stable").reset_index(
        drop=True
    )


def python_growth(compiled: pd.DataFrame) -> pd.DataFrame:
    """The Python loop's program and compile at every T it compiled (the sweep's own counts)."""
    cols = [
        "T",
        "mosaic_lines",
        "ptx_lines",
        "sass_instructions",
        "lower_ms",
        "compile_ms",
        "compile_total_ms",
    ]
    py = compiled[(compiled.variant == "python") & (compiled.status == "ok")]
    return py[[c for c in cols if c in py]].sort_values("T").reset_index(drop=True)


def verdict(table: pd.DataFrame, steps: pd.DataFrame, compiled: pd.DataFrame) -> dict[str, Any]:
    """The one-line Mosaic GPU verdict of jax#20909, with the counts behind it."""
    red = reduction_table(table)
    sass = red[red.level == "sass"].set_index("variant") if len(red) else pd.DataFrame()
    by = steps.set_index("variant") if len(steps) else pd.DataFrame()
    carries = dict(zip(compiled.variant, compiled.get("loop_carries", pd.Series(dtype=str))))

    def at(frame: pd.DataFrame, variant: str, col: str) -> Any:
        return frame.loc[variant, col] if variant in frame.index and col in frame.columns else None

    fori, python, fix = "fori u=1", "python", vocab.FIX
    kept = at(sass, fori, "loops") or 0
    where = (
        f"stay inside the loop down to SASS ({at(sass, fori, 'shuffle in loop')} SHFL and "
        f"{at(sass, fori, 'barrier in loop')} barriers in its body; LLVM hoists only each thread's partial sum)"
        if kept and at(sass, fori, "shuffle in loop")
        else "run every step (LLVM unrolled the loop at these T, and each copy keeps them)"
    )
    line = (
        "Mosaic GPU (sm_90a, compiled on a CPU, not executed): the [128, D] carry is one float per thread in every "
        f"looping form (Mosaic GPU keeps the carry a splat: fori_loop's `scf.for` carries `{carries.get(fori, '?')}`). "
        f"In fori_loop the reduction's warp shuffles and cross-warp barriers {where}, so each extra step costs "
        f"{_num(at(by, fori, 'per_step_total'))} SASS instructions ({_num(at(by, fori, 'shuffle'))} SHFL, "
        f"{_num(at(by, fori, 'barrier'))} barriers) against {_num(at(by, python, 'per_step_total'))} in the Python "
        "loop, whose program reduces once and adds one scalar per step. The same reduction traced twice in one "
        f"iteration is computed once, so fori u=4 pays it every 4th step ({_num(at(by, 'fori u=4', 'per_step_total'))} "
        f"per step); hoisting the sum (hoisted u=1) or carrying the scalar ({fix}) takes it out of the loop: "
        f"{_num(at(by, 'hoisted u=1', 'per_step_total'))} / {_num(at(by, fix, 'per_step_total'))} per step."
    )
    return {
        "sizes": sorted(int(t) for t in table["T"].unique()) if len(table) else [],
        "line": line,
        "reduction_table": red.astype({"level": str}).to_dict(orient="records") if len(red) else [],
        "per_step": steps.replace({float("nan"): None}).to_dict(orient="records"),
        "loop_carries": carries,
    }


def _num(value: Any) -> str:
    return "n/a" if value is None or value != value else f"{float(value):.1f}"
