"""Why fori_loop is slower on Triton (jax#20909), read from the compiler's own output.

For each loop form of a kernel, compiled on a CPU for one target at two T,
every level of the Triton pipeline is counted inside and outside its loops:

- ``ttir (JAX)``: the Triton module Pallas hands to Triton; ``ttir``, ``ttgir``:
  after Triton's passes; ops by kind (``tt.reduce``, loads, tensor and scalar
  arithmetic, splats), the ops inside a ``tt.reduce`` combiner not counted apart;
- ``llir``: LLVM IR; loops are back edges between basic blocks; warp shuffles,
  barriers, global loads/stores and floating-point operations (a ``<64 x half>``
  add counts 64);
- ``sass``: machine code; loops are backward branches; the instruction mix of
  :data:`jaxperf.compilers.triton.sass.CATEGORIES` (counted by :mod:`jaxperf.compilers.triton.ir`).

"Reduction inside the loop body" is then a count, per level: ``tt.reduce`` in
the ``scf.for``, shuffles in an LLVM loop, ``SHFL`` in a SASS loop. The
instructions each extra loop step costs come from the two T: the static
dynamic counts of :mod:`jaxperf.compilers.triton.estimate` at T2 minus those at T1,
divided by the extra steps (for a Python loop, which has no loop in SASS,
that is what each traced step added; likewise for the scalar carry where ptxas
unrolled its loop). Compiled, never executed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from ..compilers.triton import estimate
from ..compilers.triton import sass as _sass
from ..compilers.triton.capture import capture
from ..compilers.triton.compile import compile_ttir
from ..compilers.triton.ir import IN_LOOP, LEVELS, OUTSIDE, REDUCTION, levels
from ..compilers.triton.toolchain import DEFAULT_TARGET, check_target, label
from ..jax20909 import vocab
from .sweep import Shape, Variant, build_variant


def evidence(
    variants: Sequence[Variant],
    sizes: Sequence[int] = (8192, 16384),
    *,
    target: str = DEFAULT_TARGET,
    shape: Shape = Shape(),
    build: Callable[..., Any] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Compile each variant at both ``sizes`` (T1 < T2) and count.

    Returns ``(counts, per_step)``: ``counts`` is tidy, one row per (variant, T,
    level, place, kind) with ``count`` and the level's ``loops``; ``per_step`` has
    one row per variant: the SASS instructions each extra loop step adds, by
    category (static estimate), with the SHFL and BAR totals at T1.
    """
    check_target(target)
    if len(sizes) != 2 or not sizes[0] < sizes[1]:
        raise ValueError(f"sizes={list(sizes)!r} is not allowed: expected two T, the smaller first.")
    rows, steps = [], []
    for v in variants:
        dynamic = {}
        for T in sizes:
            fn, args = build_variant(v, T, shape, build)
            captured = capture(fn, args, target=target)
            result = compile_ttir(
                captured.ttir, target=target, num_warps=captured.num_warps, num_stages=captured.num_stages
            )
            for level, (inside, outside, loops) in levels(captured.ttir, result.texts, result.sass).items():
                for where, counts in ((IN_LOOP, inside), (OUTSIDE, outside)):
                    rows += [
                        dict(
                            kernel=v.kernel,
                            variant=v.name,
                            T=T,
                            level=level,
                            place=where,
                            kind=k,
                            count=n,
                            loops=loops,
                        )
                        for k, n in counts.items()
                    ]
            dynamic[T] = estimate.dynamic_counts(result.sass)
        extra = (sizes[1] - sizes[0]) // shape.block_rows
        first, second = dynamic[sizes[0]], dynamic[sizes[1]]
        per_cat = {k: _per_step(first.by_category[k], second.by_category[k], extra) for k in _sass.CATEGORIES}
        known = [v for v in per_cat.values() if v is not None]
        total = sum(known) if len(known) == len(per_cat) else None
        steps.append(
            {
                "kernel": v.kernel,
                "variant": v.name,
                "T1": sizes[0],
                "T2": sizes[1],
                "per_step_total": total,
                **per_cat,
            }
        )
    return pd.DataFrame(rows), pd.DataFrame(steps)


def _per_step(first: int | None, second: int | None, extra_steps: int) -> float | None:
    return None if first is None or second is None else (second - first) / extra_steps


def reduction_table(counts: pd.DataFrame) -> pd.DataFrame:
    """Per variant and level: the reduction's ops inside and outside loops (at the smaller T)."""
    T1 = counts["T"].min()
    part = counts[counts["T"] == T1]
    out = []
    for (variant, level), group in part.groupby(["variant", "level"], sort=False):
        kind = REDUCTION[level]
        pick = group[group.kind == kind]
        out.append(
            {
                "variant": variant,
                "level": level,
                "reduction op": "tt.reduce"
                if kind == "reduce"
                else ("SHFL" if level == "sass" else "shfl.sync"),
                IN_LOOP: int(pick[pick.place == IN_LOOP]["count"].sum()),
                OUTSIDE: int(pick[pick.place == OUTSIDE]["count"].sum()),
                "loops": int(group["loops"].iloc[0]),
            }
        )
    return pd.DataFrame(out)


def loops_by_level(counts: pd.DataFrame) -> dict[str, dict[str, int]]:
    """Per variant: the loops each level holds at the larger T (SASS: backward branches)."""
    part = counts[counts["T"] == counts["T"].max()]
    by = part.groupby(["variant", "level"], sort=False)["loops"].max()
    return {v: {lv: int(n) for (v2, lv), n in by.items() if v2 == v} for v in dict.fromkeys(part.variant)}


def verdict(counts: pd.DataFrame, per_step: pd.DataFrame, target: str = DEFAULT_TARGET) -> dict[str, Any]:
    """The one-line Triton verdict of jax#20909, with the counts behind it."""
    red = reduction_table(counts)
    sass_red = red[red.level == "sass"].set_index("variant")
    shfl_total = (sass_red[IN_LOOP] + sass_red[OUTSIDE]).to_dict()
    reduce_in_loop = {lv: red[(red.level == lv)].set_index("variant")[IN_LOOP].to_dict() for lv in LEVELS}
    steps = per_step.set_index("variant")
    fp_per_step = steps["fp arithmetic"].to_dict()
    total_per_step = steps["per_step_total"].to_dict()
    loops = loops_by_level(counts)
    python, fori, fix = "python", "fori u=1", vocab.FIX
    line = (
        f"Triton ({label(target)}): "
        + (
            "the reduction runs once in every form"
            if len(set(shfl_total.values())) == 1
            else "the forms' reductions differ"
        )
        + f" ({', '.join(f'{v} {n} SHFL' for v, n in shfl_total.items())}; SHFL inside a SASS loop: "
        + ", ".join(f"{v} {n}" for v, n in reduce_in_loop["sass"].items())
        + f"; tt.reduce inside scf.for in JAX's TTIR: fori {reduce_in_loop['ttir (JAX)'].get(fori)}, after Triton's passes: "
        + f"{reduce_in_loop['ttgir'].get(fori)}). Each extra loop step costs {_num(total_per_step.get(fori))} SASS instructions in "
        + f"fori_loop ({_num(fp_per_step.get(fori))} fp arithmetic: the [128, D] carry, added to in full every step) against "
        + f"{_num(total_per_step.get(python))} in the Python loop ({_num(fp_per_step.get(python))} fp: the add happens on one scalar, "
        + "broadcast once at the end)."
    )
    if fix in total_per_step:
        kept = loops.get(fix, {})
        line += (
            f" The scalar carry ({fix}, the XLA:CPU fix: the Python loop's scalar in a fori_loop) costs "
            f"{_num(total_per_step.get(fix))} SASS instructions per step ({_num(fp_per_step.get(fix))} fp)"
            + (
                "; its loop is still in the LLVM IR, but none is left in the SASS (ptxas unrolls it)."
                if kept.get("sass") == 0 and kept.get("llir", 0) > 0
                else f"; loops left in its SASS: {kept.get('sass', 'n/a')}."
            )
        )
    return {
        "target": target,
        "sizes": sorted(int(t) for t in counts["T"].unique()),
        "shfl_total": shfl_total,
        "reduction_in_loop": reduce_in_loop,
        "sass_per_step": total_per_step,
        "sass_fp_per_step": fp_per_step,
        "loops": loops,
        "line": line,
        "reduction_table": red.to_dict(orient="records"),
        "per_step": per_step.replace({float("nan"): None}).to_dict(orient="records"),
    }


def _num(value: Any) -> str:
    return "n/a" if value is None or value != value else f"{value:.1f}"
