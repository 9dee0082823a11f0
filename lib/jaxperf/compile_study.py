"""The GPU compile-time half of jax-ml/jax#20909, measured on a CPU.

Every (kernel, loop form, unroll) of the Pallas loop study is exported for
CUDA, its Triton module compiled for a named NVIDIA target (sm_90 by default)
through every Triton stage to SASS (:mod:`jaxperf.triton_compile`), for T
from 256 to 65536. Nothing is executed: the numbers are compile time and
machine-code size, labelled "compiled for sm_90 on a CPU, not executed".

The sweep (:func:`sweep`) writes one tidy row per (kernel, loop form, unroll,
T, repeat). Variants Pallas' Triton lowering rejects (``fori_loop`` and
``pl.loop`` with ``unroll > 1``) are recorded as "does not lower", never
dropped. The Python loop's compile time grows with T (faster than linearly in
Triton 3.9), so it stops at the first T whose predicted compile time (the
previous T's, scaled by the T ratio to the power 1.5) exceeds ``max_compile_s``; those points
are recorded as "over budget", not measured. The other forms hold at most
``unroll`` body copies whatever T is, and are measured at every T.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from . import plots, records
from . import triton_compile as tc
from .errors import bad_value, check_choice, check_int, check_ints

SEED_ISSUE = "jax-ml/jax#20909"
SEED_SETUP = "RTX A6000 (sm_86), jax 0.4.25, fp16, B=512, D=64, 128-row carry, 64-row steps"
# The seed's compile column (ms), from the issue's table.
SEED_COMPILE_MS = pd.DataFrame(
    {
        "T": [256, 2048, 8192, 16384, 32768, 65536],
        "python": [177, 242, 473, 776, 1460, 2978],
        "fori": [193, 200, 194, 198, 200, 195],
    }
)
SEED_SIZES = tuple(SEED_COMPILE_MS["T"])
KERNELS = ("seed", "attention")
LOOP_FORMS = ("python", "fori", "pl_loop", "hand_unrolled")
# Forms whose program grows with T (the others hold at most `unroll` body copies).
GROWS_WITH_T = ("python",)
# The Python loop's compile time is predicted to grow as T**1.5 when deciding
# whether the next T fits the budget: measured here it grows as T**1.1 to
# T**1.4 from T=2048 to 8192 (its ttgir and llir stages grow faster than T).
PREDICTED_GROWTH = 1.5
STATUS_OK = "ok"
STATUS_NO_LOWER = "does not lower"
STATUS_OVER_BUDGET = "over budget"
STATUS_FAILED = "failed"
STAGE_COLUMNS = ("export_ms", *(f"{s}_ms" for s in tc.STAGES))
STAGE_LABELS = {
    "export_ms": "JAX export (trace + Pallas->Triton)",
    "ttir_ms": "ttir passes",
    "ttgir_ms": "ttgir",
    "llir_ms": "llir",
    "ptx_ms": "PTX (LLVM)",
    "cubin_ms": "cubin (ptxas)",
}


def label(target: str = tc.DEFAULT_TARGET) -> str:
    return f"compiled for {target} on a CPU, not executed"


def variant_name(loop_form: str, unroll: int) -> str:
    """Same names as the loop study: "python", "fori u=1", "hand_unrolled u=4"."""
    return "python" if loop_form == "python" else f"{loop_form} u={unroll}"


@dataclass(frozen=True)
class Variant:
    kernel: str
    loop_form: str
    unroll: int

    @property
    def name(self) -> str:
        return variant_name(self.loop_form, self.unroll)


def variants(
    kernels: Iterable[str] = KERNELS,
    loop_forms: Iterable[str] = LOOP_FORMS,
    unrolls: Iterable[int] = (1, 2, 4, 8, 16),
) -> list[Variant]:
    """Every (kernel, loop form, unroll); the Python loop only with unroll=1
    (it is already fully unrolled). ``fori``/``pl_loop`` with unroll > 1 are
    kept: the sweep records that they do not lower."""
    kernels = [check_choice("kernels[...]", k, KERNELS) for k in kernels]
    loop_forms = [check_choice("loop_forms[...]", f, LOOP_FORMS) for f in loop_forms]
    unrolls = sorted(set(check_ints("unrolls", unrolls)))
    out = []
    for kernel in kernels:
        for form in loop_forms:
            for unroll in [1] if form == "python" else unrolls:
                out.append(Variant(kernel, form, unroll))
    return out


def check_sizes(sizes: Any, block_rows: int = 64) -> list[int]:
    sizes = check_ints("sizes", sizes, minimum=block_rows)
    for T in sizes:
        if T % block_rows:
            raise bad_value("sizes[...]", T, f"a multiple of block_rows={block_rows}")
    return sorted(set(sizes))


@dataclass(frozen=True)
class Shape:
    """Kernel shape: the seed's by default (fp16, D=64, B=512, 64-row steps)."""

    D: int = 64
    batch: int = 512
    dtype: str = "float16"
    block_rows: int = 64


def _default_build() -> Callable[..., Any]:
    from . import pallas_kernels

    return pallas_kernels.build


def sweep(
    variant_list: Sequence[Variant],
    sizes: Sequence[int] | Mapping[str, Sequence[int]],
    *,
    target: str = tc.DEFAULT_TARGET,
    repeats: int = 1,
    repeat_below_s: float = float("inf"),
    max_compile_s: float = 30.0,
    shape: Shape = Shape(),
    build: Callable[..., Any] | None = None,
    progress: Any = None,
) -> pd.DataFrame:
    """Compile every variant at every T; one tidy row per (variant, T, repeat).

    ``sizes`` is one list of T for every kernel, or a dict kernel -> list
    (the attention kernel costs ~10x more to compile than the seed's).
    Each point is compiled once, and ``repeats`` times in all when that first
    compile took under ``repeat_below_s`` (cheap points, where the machine's
    noise is largest relative to the value); the summaries take the median.

    T ascends; inside one T each repeat visits all variants, in an order
    rotated from repeat to repeat, so drift on a shared machine hits them
    alike. A variant that does not lower is recorded once per T. Once the
    Python loop's predicted compile time at the next T (this T's median,
    scaled by the T ratio to the power 1.5) exceeds ``max_compile_s``, its larger T are
    recorded as "over budget". ``build(kernel, loop_form, unroll, T=..., ...)``
    defaults to :func:`jaxperf.pallas_kernels.build` with the Triton lowering.
    ``progress`` (a tqdm bar) advances once per (variant, T).
    Raises TritonUnavailableError without the triton extra.
    """
    tc.check_target(target)
    check_int("repeats", repeats, minimum=1)
    if not (isinstance(repeat_below_s, (int, float)) and repeat_below_s > 0):
        raise bad_value("repeat_below_s", repeat_below_s, "a number of seconds > 0")
    if not (isinstance(max_compile_s, (int, float)) and max_compile_s > 0):
        raise bad_value("max_compile_s", max_compile_s, "a number of seconds > 0")
    per_kernel = _sizes_per_kernel(variant_list, sizes, shape.block_rows)
    tc.require()
    build = build or _default_build()
    rows: list[dict[str, Any]] = []
    stopped: dict[Variant, str] = {}
    last: dict[Variant, tuple[int, float]] = {}

    def base(v: Variant, T: int) -> dict[str, Any]:
        return {
            "kernel": v.kernel,
            "loop_form": v.loop_form,
            "unroll": v.unroll,
            "variant": v.name,
            "T": T,
            "steps": T // shape.block_rows,
            "target": target,
        }

    for T in sorted(set().union(*per_kernel.values())):
        active = []
        for v in variant_list:
            if T not in per_kernel[v.kernel]:
                continue
            if v.loop_form in GROWS_WITH_T and v in last and v not in stopped:
                prev_T, prev_s = last[v]
                predicted = prev_s * (T / prev_T) ** PREDICTED_GROWTH
                if predicted > max_compile_s:
                    stopped[v] = (
                        f"not measured: at T={prev_T} one compile took {prev_s:.1f} s, "
                        f"so T={T} is predicted at ~{predicted:.0f} s (x (T ratio)^{PREDICTED_GROWTH:g}) > max_compile_s={max_compile_s:g}"
                    )
            if v in stopped:
                rows.append({**base(v, T), "repeat": 0, "status": STATUS_OVER_BUDGET, "error": stopped[v]})
                if progress is not None:
                    progress.update(1)
            else:
                active.append(v)
        times: dict[Variant, list[float]] = {v: [] for v in active}
        no_lower: set[Variant] = set()
        for repeat in range(repeats):
            shift = repeat % max(len(active), 1)
            for v in active[shift:] + active[:shift]:
                if v in no_lower or (repeat > 0 and not (times[v] and times[v][0] < repeat_below_s)):
                    continue
                fn, args = build(
                    v.kernel,
                    v.loop_form,
                    v.unroll,
                    T=T,
                    D=shape.D,
                    batch=shape.batch,
                    dtype=shape.dtype,
                    block_rows=shape.block_rows,
                    interpret=False,
                    lowering="triton",
                )
                start = time.perf_counter()
                try:
                    (row,) = tc.measure(fn, args, target=target, repeats=1)
                except tc.DoesNotLower as err:
                    no_lower.add(v)
                    rows.append({**base(v, T), "repeat": 0, "status": STATUS_NO_LOWER, "error": str(err)})
                except tc.TritonUnavailableError:
                    raise
                except Exception as err:  # a compiler crash is a result; record it and go on
                    rows.append(
                        {
                            **base(v, T),
                            "repeat": repeat,
                            "status": STATUS_FAILED,
                            "error": f"{type(err).__name__}: {str(err)[:500]}",
                        }
                    )
                else:
                    row.update(repeat=repeat, status=STATUS_OK, error="", wall_s=time.perf_counter() - start)
                    rows.append({**base(v, T), **row})
                    times[v].append(row["compile_ms"] / 1e3)
                if progress is not None and repeat == 0:
                    progress.update(1)
        for v, secs in times.items():
            if secs:
                last[v] = (T, float(np.median(secs)))
    df = pd.DataFrame(rows)
    columns = [
        "kernel",
        "loop_form",
        "unroll",
        "variant",
        "T",
        "steps",
        "target",
        "repeat",
        "status",
        "error",
    ]
    return df[columns + [c for c in df.columns if c not in columns]]


def _sizes_per_kernel(
    variant_list: Sequence[Variant], sizes: Sequence[int] | Mapping[str, Sequence[int]], block_rows: int = 64
) -> dict[str, list[int]]:
    kernels = list(dict.fromkeys(v.kernel for v in variant_list))
    if isinstance(sizes, Mapping):
        missing = [k for k in kernels if k not in sizes]
        if missing:
            raise bad_value("sizes", dict(sizes), f"a list of T for each kernel swept ({kernels})")
        return {k: check_sizes(sizes[k], block_rows) for k in kernels}
    checked = check_sizes(sizes, block_rows)
    return {k: checked for k in kernels}


def count_points(
    variant_list: Sequence[Variant], sizes: Sequence[int] | Mapping[str, Sequence[int]], block_rows: int = 64
) -> int:
    """How many (variant, T) points :func:`sweep` visits (for a progress bar)."""
    per_kernel = _sizes_per_kernel(variant_list, sizes, block_rows)
    return sum(len(per_kernel[v.kernel]) for v in variant_list)


# --------------------------------------------------------------------------
# Summaries


def point_medians(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (kernel, variant, T): status, median of the timed columns,
    the (deterministic) code metrics, and how many compiles the median is of."""
    keys = ["kernel", "loop_form", "unroll", "variant", "T", "steps"]
    ok = df[df.status == STATUS_OK]
    timed = ["compile_ms", "triton_ms", *STAGE_COLUMNS, "triton_lowering_ms"]
    code = [
        "ttir_lines",
        "ptx_instructions",
        "sass_instructions",
        "registers",
        "spill_stores_bytes",
        "spill_loads_bytes",
        "local_memory_instructions",
        "backward_branches",
        "loop_present",
    ]
    if ok.empty:
        med = pd.DataFrame(columns=keys + timed + code + ["compiles"])
    else:
        med = ok.groupby(keys, sort=False)[timed].median().reset_index()
        med = med.merge(ok.groupby(keys, sort=False)[code].first().reset_index(), on=keys)
        med = med.merge(ok.groupby(keys, sort=False).size().rename("compiles").reset_index(), on=keys)
    status = (
        df.groupby(keys, sort=False).agg(status=("status", "first"), error=("error", "first")).reset_index()
    )
    out = status.merge(med, on=keys, how="left")
    return out.sort_values(["kernel", "loop_form", "unroll", "T"], key=_sort_key).reset_index(drop=True)


def _sort_key(col: pd.Series) -> pd.Series:
    if col.name == "loop_form":
        return col.map(LOOP_FORMS.index)
    if col.name == "kernel":
        return col.map(lambda k: KERNELS.index(k) if k in KERNELS else len(KERNELS))
    return col


def _cell(med: pd.DataFrame, kernel: str, variant: str, T: int) -> str:
    row = med[(med.kernel == kernel) & (med.variant == variant) & (med["T"] == T)]
    if row.empty:
        return "n/a"
    row = row.iloc[0]
    if row.status != STATUS_OK:
        return row.status
    return f"{row.compile_ms:.0f} ms / not executed"


def seed_format_table(
    df: pd.DataFrame, kernel: str = "seed", hand_unroll: int = 4, target: str = tc.DEFAULT_TARGET
) -> pd.DataFrame:
    """The seed's table layout (T | Python loop compile / exec | fori_loop
    compile / exec), plus the hand-unrolled loop and the seed's A6000
    compile numbers beside ours. Compile = JAX export + Triton ttir->cubin."""
    med = point_medians(df)
    seed = SEED_COMPILE_MS.set_index("T")
    rows = []
    for T in sorted(med[med.kernel == kernel]["T"].unique()):
        rows.append(
            {
                "T": int(T),
                f"Python loop compile / exec ({target}, CPU)": _cell(med, kernel, "python", T),
                f"fori_loop compile / exec ({target}, CPU)": _cell(med, kernel, "fori u=1", T),
                f"hand-unrolled k={hand_unroll} compile / exec ({target}, CPU)": _cell(
                    med, kernel, f"hand_unrolled u={hand_unroll}", T
                ),
                "seed A6000 Python / fori compile": (
                    f"{seed.loc[T, 'python']} / {seed.loc[T, 'fori']} ms"
                    if kernel == "seed" and T in seed.index
                    else "-"
                ),
            }
        )
    return pd.DataFrame(rows)


def stage_table(df: pd.DataFrame, T: int | None = None, *, include_short: bool = True) -> pd.DataFrame:
    """Median ms per stage for every variant that compiled at ``T`` (default:
    each kernel's largest compiled T, and with ``include_short`` a variant
    that stopped short of it, like the Python loop, at its own largest T),
    plus the largest stage."""
    med = point_medians(df)
    med = med[med.status == STATUS_OK]
    if med.empty:
        return pd.DataFrame()
    if T is None and not include_short:
        part = med[med["T"] == med.groupby("kernel")["T"].transform("max")]
    elif T is None:
        largest = med[med["T"] == med.groupby("kernel")["T"].transform("max")]
        # a variant that stopped short of the largest T (the Python loop) shows at its own largest T
        own = med.loc[med.groupby(["kernel", "variant"], sort=False)["T"].idxmax()]
        part = pd.concat(
            [
                largest,
                own[
                    ~own.set_index(["kernel", "variant"]).index.isin(
                        largest.set_index(["kernel", "variant"]).index
                    )
                ],
            ]
        )
        part = part.sort_values(["kernel", "loop_form", "unroll"], key=_sort_key)
    else:
        part = med[med["T"] == T]
    table = part[["kernel", "variant", "T", *STAGE_COLUMNS, "compile_ms"]].copy()
    table["largest stage"] = part[list(STAGE_COLUMNS)].idxmax(axis=1).map(STAGE_LABELS).values
    return table.reset_index(drop=True)


def stages_by_T(df: pd.DataFrame, variant: str = "python") -> pd.DataFrame:
    """Median ms per stage at every T one variant compiled at (default: the
    Python loop, whose stages do not all grow alike)."""
    med = point_medians(df)
    med = med[(med.status == STATUS_OK) & (med.variant == variant)]
    cols = ["kernel", "variant", "T", *STAGE_COLUMNS, "compile_ms", "ttir_lines", "sass_instructions"]
    return med[cols].reset_index(drop=True)


def code_table(df: pd.DataFrame, T: int | None = None) -> pd.DataFrame:
    """PTX/SASS instruction counts, registers, spills and loop survival at ``T``
    (default: the largest T each variant compiled at)."""
    med = point_medians(df)
    med = med[med.status == STATUS_OK]
    if med.empty:
        return pd.DataFrame()
    if T is None:
        med = med.loc[med.groupby(["kernel", "variant"], sort=False)["T"].idxmax()]
    else:
        med = med[med["T"] == T]
    cols = [
        "kernel",
        "variant",
        "T",
        "ttir_lines",
        "ptx_instructions",
        "sass_instructions",
        "registers",
        "spill_stores_bytes",
        "spill_loads_bytes",
        "loop_present",
    ]
    return med[cols].reset_index(drop=True)


def growth(df: pd.DataFrame) -> pd.DataFrame:
    """Per variant: compile ms at a reference T and at its largest measured T,
    their ratio, and the growth exponent b of compile_ms ~ T**b (least squares
    on log-log over the T from the reference on).

    The reference is the smallest T whose trip count reaches the unroll: below
    it a k-unrolled loop is only its remainder copies, a different program,
    so its change there is not growth with T. (For the Python loop and k=1
    it is the smallest T.)
    """
    med = point_medians(df)
    med = med[med.status == STATUS_OK]
    rows = []
    for (kernel, variant), part in med.groupby(["kernel", "variant"], sort=False):
        part = part.sort_values("T")
        full = part[(part.loop_form == "python") | (part.steps >= part.unroll)]
        full = full if not full.empty else part
        first, last = full.iloc[0], part.iloc[-1]
        slope = (
            float(np.polyfit(np.log(full["T"].astype(float)), np.log(full.compile_ms.astype(float)), 1)[0])
            if len(full) >= 2
            else float("nan")
        )
        rows.append(
            {
                "kernel": kernel,
                "variant": variant,
                "T_ref": int(first["T"]),
                "T_max": int(last["T"]),
                "compile_ms_at_T_ref": first.compile_ms,
                "compile_ms_at_T_max": last.compile_ms,
                "ratio": last.compile_ms / first.compile_ms,
                "exponent": slope,
                "points": len(full),
                "max_over_min": part.compile_ms[part["T"] >= first["T"]].max()
                / part.compile_ms[part["T"] >= first["T"]].min(),
            }
        )
    return pd.DataFrame(rows)


def verdict(df: pd.DataFrame, kernel: str = "seed", grows: float = 0.5, flat: float = 0.25) -> dict[str, Any]:
    """Does the seed's compile column reproduce? The Python loop's compile
    time grows with T (exponent b of compile_ms ~ T**b at least ``grows``)
    while fori_loop(unroll=1) and every hand-unrolled k stay flat (|b| at
    most ``flat``). A fitted exponent, not a ratio of two single compiles:
    one compile on a shared 2-core machine can be 2-3x off."""
    g = growth(df)
    g = g[g.kernel == kernel]
    if g.empty:
        return {"kernel": kernel, "reproduced": None, "reason": "nothing compiled"}
    python = g[g.variant == "python"]
    loops = g[(g.variant == "fori u=1") | g.variant.str.startswith("hand_unrolled")]
    python_grows = bool(not python.empty and python.exponent.iloc[0] >= grows)
    fitted = loops[loops.points >= 2]
    loops_flat = bool(not fitted.empty and (fitted.exponent.abs() <= flat).all())
    one_T = python.empty or python.T_ref.iloc[0] == python.T_max.iloc[0]
    return {
        "kernel": kernel,
        # None: the Python loop compiled at one T only (larger T over budget), so growth is not measured.
        "reproduced": None if one_T else python_grows and loops_flat,
        "python_ratio": float(python.ratio.iloc[0]) if not python.empty else None,
        "python_T_range": [int(python.T_ref.iloc[0]), int(python.T_max.iloc[0])]
        if not python.empty
        else None,
        "python_exponent": float(python.exponent.iloc[0]) if not python.empty else None,
        "loops_max_ratio": float(loops.ratio.max()) if not loops.empty else None,
        "loops_exponents": {
            r.variant: (None if np.isnan(r.exponent) else float(r.exponent)) for r in loops.itertuples()
        },
        "loops_T_max": int(loops.T_max.min()) if not loops.empty else None,
        "thresholds": {"python_exponent_at_least": grows, "loops_abs_exponent_at_most": flat},
    }


def seed_exponent(column: str = "python", T_from: int = 256) -> float:
    """b of compile_ms ~ T**b for the seed's A6000 numbers, from ``T_from`` on."""
    part = SEED_COMPILE_MS[SEED_COMPILE_MS["T"] >= T_from]
    return float(np.polyfit(np.log(part["T"].astype(float)), np.log(part[column].astype(float)), 1)[0])


def does_not_lower(df: pd.DataFrame) -> pd.DataFrame:
    bad = df[df.status == STATUS_NO_LOWER]
    return (
        bad.groupby(["kernel", "variant"], sort=False)
        .agg(T=("T", lambda s: ", ".join(str(t) for t in sorted(s))), error=("error", "first"))
        .reset_index()
    )


def summary_dict(
    df: pd.DataFrame,
    *,
    target: str,
    repeats: int,
    max_compile_s: float,
    status: tc.TritonStatus,
    repeat_below_s: float = float("inf"),
) -> dict[str, Any]:
    """Headline numbers for summary.json."""
    med = point_medians(df)
    return {
        "measured": True,
        "label": label(target),
        "target": target,
        "triton": status.version,
        "seed_source": f"{SEED_ISSUE}: {SEED_SETUP}",
        "seed_compile_ms": SEED_COMPILE_MS.to_dict(orient="records"),
        "seed_python_exponent": seed_exponent(),
        "compile_ms_definition": "jax.export (trace + Pallas->Triton + StableHLO) + Triton ttir passes, ttgir, llir, PTX, cubin (ptxas); median over compiles",
        "repeats": repeats,
        "repeat_below_s": repeat_below_s if np.isfinite(repeat_below_s) else None,
        "max_compile_s": max_compile_s,
        "plan": {
            k: {
                "T": sorted(int(t) for t in part["T"].unique()),
                "unrolls": sorted(int(u) for u in part["unroll"].unique()),
                "loop_forms": list(dict.fromkeys(part["loop_form"])),
            }
            for k, part in df.groupby("kernel", sort=False)
        },
        "seed_format_table": {
            k: seed_format_table(df, k, target=target).to_dict(orient="records")
            for k in KERNELS
            if k in set(df.kernel)
        },
        "verdict": {k: verdict(df, k) for k in KERNELS if k in set(df.kernel)},
        "growth": growth(df).to_dict(orient="records"),
        "stages_at_largest_T": stage_table(df).to_dict(orient="records"),
        "python_stages_by_T": stages_by_T(df).to_dict(orient="records"),
        "code_at_largest_T": code_table(df).to_dict(orient="records"),
        "does_not_lower": does_not_lower(df).to_dict(orient="records"),
        "over_budget": med[med.status == STATUS_OVER_BUDGET][["kernel", "variant", "T"]].to_dict(
            orient="records"
        ),
        "failed": med[med.status == STATUS_FAILED][["kernel", "variant", "T", "error"]].to_dict(
            orient="records"
        ),
        "points": int(len(med)),
        "compiles": int((df.status == STATUS_OK).sum()),
    }


def _md(df: pd.DataFrame, floatfmt: str = "{:.0f}") -> str:
    return records.markdown_table(df, floatfmt=floatfmt) if not df.empty else "(none)"


def summary_markdown(df: pd.DataFrame, summary: dict[str, Any]) -> str:
    """summary.md: the seed-format compile table per kernel, the verdict, the
    stage split and the code at the largest T, what did not lower."""
    target = summary["target"]
    lines = [
        f"# Triton compile time and machine code, {label(target)}",
        "",
        f"Every Pallas loop form of {SEED_ISSUE} exported for CUDA on this CPU-only machine and compiled by "
        f"triton {summary['triton']} for {target} through ttir, ttgir, llir, PTX and cubin (ptxas), then read "
        "as SASS with cuobjdump. **Nothing was executed**: the exec column of the seed's table stays "
        '"not executed". Compile = '
        + summary["compile_ms_definition"]
        + (
            f" (median of {summary['repeats']} compiles for points whose first compile took under "
            f"{summary['repeat_below_s']:g} s, else one compile)."
            if summary["repeat_below_s"] is not None
            else f" (median of {summary['repeats']} compiles per point)."
        ),
        "",
        "Plan: "
        + "; ".join(
            f"`{k}` kernel: T in {v['T']}, unroll in {v['unrolls']}" for k, v in summary["plan"].items()
        )
        + ".",
        "",
        f"The seed's numbers: {summary['seed_source']}; its Python loop compiled as T^{summary['seed_python_exponent']:.2f} "
        f"over T=256-65536 (T^{seed_exponent(T_from=8192):.2f} from T=8192 on), its fori_loop flat.",
    ]
    for kernel, rows in summary["seed_format_table"].items():
        v = summary["verdict"][kernel]
        lines += [
            "",
            f"## `{kernel}` kernel: compile time ({label(target)})",
            "",
            _md(pd.DataFrame(rows)),
            "",
        ]
        exps = ", ".join(
            f"{name} {b:+.2f}" for name, b in v.get("loops_exponents", {}).items() if b is not None
        )
        if v.get("reproduced") is None and v.get("python_T_range"):
            lines.append(
                f"The Python loop compiled only at T={v['python_T_range'][0]} within the budget, so its growth is not "
                f"measured for this kernel. fori_loop(unroll=1) and the hand-unrolled loops, compile_ms ~ T^b: {exps} "
                "(single compiles for the dear points: machine noise included)."
            )
        elif v.get("python_ratio") is not None:
            th = v["thresholds"]
            lines.append(
                f"The Python loop's compile time grows {v['python_ratio']:.1f}x from T={v['python_T_range'][0]} "
                f"to T={v['python_T_range'][1]} (compile_ms ~ T^{v['python_exponent']:.2f}); fori_loop(unroll=1) and "
                f"the hand-unrolled loops stay flat up to T={v['loops_T_max']} (T^b with b: {exps}; fitted from the "
                f"first T whose trip count reaches the unroll). Seed pattern reproduced (Python b >= "
                f"{th['python_exponent_at_least']:g}, loops |b| <= {th['loops_abs_exponent_at_most']:g}): "
                f"**{v['reproduced']}**."
            )
    if summary["over_budget"]:
        lines += [
            "",
            f"Not measured (a single compile predicted over max_compile_s={summary['max_compile_s']:g} s): "
            + "; ".join(f"{r['kernel']} {r['variant']} T={r['T']}" for r in summary["over_budget"])
            + ".",
        ]
    stages = stage_table(df)
    if not stages.empty:
        lines += [
            "",
            "## Where compile time goes at each kernel's largest T (median ms per stage)",
            "",
            _md(stages.rename(columns=STAGE_LABELS)),
        ]
    python = stages_by_T(df)
    if not python.empty:
        lines += [
            "",
            "## The Python loop's stages as T grows (median ms)",
            "",
            _md(python.rename(columns=STAGE_LABELS)),
        ]
    code = code_table(df)
    if not code.empty:
        lines += [
            "",
            "## Machine code at each variant's largest compiled T",
            "",
            "`loop_present`: a backward branch survives in SASS (the loop was not fully unrolled by ptxas).",
            "",
            _md(code),
        ]
    bad = does_not_lower(df)
    if not bad.empty:
        lines += [
            "",
            "## Does not lower (Pallas' Triton lowering rejects it)",
            "",
            "`fori_loop(unroll=k>1)` and `pl.loop(unroll=k>1)` raise a bare NotImplementedError in "
            "`_scan_lowering_rule`; the hand-unrolled loop is the portable way to unroll.",
            "",
            _md(bad),
        ]
    if summary["failed"]:
        lines += ["", "## Failed compiles", "", _md(pd.DataFrame(summary["failed"]))]
    return "\n".join(lines) + "\n"


def not_measured_summary(
    status: tc.TritonStatus, target: str = tc.DEFAULT_TARGET
) -> tuple[dict[str, Any], str]:
    """summary.json / summary.md when the triton extra is absent: say so, no fake data."""
    summary = {
        "measured": False,
        "reason": status.reason,
        "label": label(target),
        "target": target,
        "seed_source": f"{SEED_ISSUE}: {SEED_SETUP}",
        "seed_compile_ms": SEED_COMPILE_MS.to_dict(orient="records"),
    }
    markdown = (
        f"# Triton compile time and machine code ({label(target)})\n\n"
        f"**{tc.NOT_INSTALLED}.** {status.reason}\n\n"
        f"Nothing was compiled; the seed's compile column ({SEED_ISSUE}, {SEED_SETUP}) is not reproduced here.\n"
    )
    return summary, markdown


# --------------------------------------------------------------------------
# Figures


def _facets(n: int, width: float = 5.5, height: float = 4.2):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, n, figsize=(width * n, height), squeeze=False)
    return fig, list(axes[0])


def _T_axis(ax, sizes: Iterable[int]) -> None:
    """Log T axis ticked at the measured sizes, labelled as plain integers."""
    from matplotlib.ticker import FixedLocator, NullLocator

    sizes = sorted({int(t) for t in sizes})
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(FixedLocator(sizes))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([str(t) for t in sizes], rotation=45 if len(sizes) > 4 else 0, fontsize=8)


def _variant_order(df: pd.DataFrame) -> list[str]:
    pairs = df.drop_duplicates("variant")[["loop_form", "unroll", "variant"]].itertuples(index=False)
    return [v for _, _, v in sorted(pairs, key=lambda p: (LOOP_FORMS.index(p[0]), p[1]))]


def plot_compile_vs_T(df: pd.DataFrame, target: str = tc.DEFAULT_TARGET):
    """Compile ms vs T per loop form (median line, IQR band), one panel per
    kernel; the seed's A6000 compile column dashed beside the seed kernel."""
    ok = df[df.status == STATUS_OK]
    kernels = [k for k in KERNELS if k in set(ok.kernel)]
    fig, axes = _facets(len(kernels))
    stats = []
    for ax, kernel in zip(axes, kernels):
        part = ok[ok.kernel == kernel]
        s = plots.median_iqr_lines(
            ax, part, "T", "compile_ms", "variant", hue_order=_variant_order(part), logx=True, logy=True
        )
        stats.append(s.assign(kernel=kernel, source=f"this study ({label(target)})"))
        if kernel == "seed":
            for col, style in (("python", "--"), ("fori", ":")):
                ax.plot(
                    SEED_COMPILE_MS["T"],
                    SEED_COMPILE_MS[col],
                    style,
                    color="black",
                    lw=1.5,
                    label=f"{SEED_ISSUE} A6000: {'Python loop' if col == 'python' else 'fori_loop'}",
                )
                stats.append(
                    pd.DataFrame(
                        {
                            "variant": f"{SEED_ISSUE} A6000 {col}",
                            "T": SEED_COMPILE_MS["T"],
                            "median": SEED_COMPILE_MS[col].astype(float),
                            "kernel": kernel,
                            "source": f"{SEED_ISSUE} ({SEED_SETUP})",
                        }
                    )
                )
        _T_axis(ax, set(part["T"]) | (set(SEED_COMPILE_MS["T"]) if kernel == "seed" else set()))
        ax.set(
            title=f"{kernel} kernel",
            xlabel="T (sequence length)",
            ylabel="compile ms (median, IQR band)\nJAX export + Triton ttir->cubin",
        )
        ax.legend(fontsize=7)
    fig.suptitle(f"Compile time vs T per loop form: {label(target)}", fontsize=11)
    return fig, pd.concat(stats, ignore_index=True)


def plot_sass_vs_T(df: pd.DataFrame, target: str = tc.DEFAULT_TARGET):
    """SASS instructions vs T per loop form; hollow markers where no loop survives in SASS."""
    med = point_medians(df)
    med = med[med.status == STATUS_OK]
    kernels = [k for k in KERNELS if k in set(med.kernel)]
    fig, axes = _facets(len(kernels))
    import seaborn as sns

    for ax, kernel in zip(axes, kernels):
        part = med[med.kernel == kernel]
        order = _variant_order(part)
        palette = dict(zip(order, sns.color_palette("tab10", n_colors=max(len(order), 1))))
        for name in order:
            v = part[part.variant == name].sort_values("T")
            ax.plot(v["T"], v["sass_instructions"], color=palette[name], label=name, lw=1.2)
            loop = v.loop_present.astype(bool)
            ax.scatter(v["T"][loop], v["sass_instructions"][loop], color=palette[name], s=22, zorder=3)
            ax.scatter(
                v["T"][~loop],
                v["sass_instructions"][~loop],
                facecolors="white",
                edgecolors=palette[name],
                s=22,
                zorder=3,
            )
        _T_axis(ax, part["T"])
        ax.set_yscale("log")
        ax.set(
            title=f"{kernel} kernel", xlabel="T (sequence length)", ylabel="SASS instructions (NOPs excluded)"
        )
        ax.legend(fontsize=7)
    fig.suptitle(f"SASS size vs T ({label(target)}); hollow marker = no loop left in SASS", fontsize=11)
    cols = [
        "kernel",
        "variant",
        "T",
        "sass_instructions",
        "ptx_instructions",
        "registers",
        "spill_stores_bytes",
        "loop_present",
    ]
    return fig, med[cols].reset_index(drop=True)


def plot_stage_breakdown(df: pd.DataFrame, T: int | None = None, target: str = tc.DEFAULT_TARGET):
    """Stacked bars: median ms per compile stage for each variant at ``T``
    (default: each kernel's largest compiled T), one panel per kernel."""
    table = stage_table(df, T, include_short=False)
    import matplotlib.pyplot as plt
    import seaborn as sns

    if table.empty:
        fig, ax = plt.subplots(figsize=(6, 3))
        ax.text(0.5, 0.5, "nothing compiled", ha="center")
        return fig, table
    kernels = [k for k in KERNELS if k in set(table.kernel)]
    fig, axes = _facets(len(kernels), width=6.0, height=4.5)
    colors = dict(zip(STAGE_COLUMNS, sns.color_palette("Set2", n_colors=len(STAGE_COLUMNS))))
    for ax, kernel in zip(axes, kernels):
        part = table[table.kernel == kernel].iloc[::-1]
        T = int(part["T"].iloc[0])
        left = np.zeros(len(part))
        for col in STAGE_COLUMNS:
            ax.barh(part["variant"], part[col], left=left, color=colors[col], label=STAGE_LABELS[col])
            left += part[col].to_numpy(float)
        ax.set(title=f"{kernel} kernel, T={T}", xlabel="ms (median per stage)")
        absent = df[(df.kernel == kernel) & (df["T"] == T) & (df.status != STATUS_OK)].drop_duplicates(
            "variant"
        )
        if not absent.empty:
            ax.set_xlabel("ms (median per stage)\nnot compiled at this T:\n" + _compact(absent), fontsize=8)
    axes[-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), framealpha=0.9)
    fig.suptitle(f"Compile stages at the largest T ({label(target)})", fontsize=11)
    return fig, table


def _compact(rows: pd.DataFrame) -> str:
    """One line per status ('does not lower: fori u=2,4; pl_loop u=2,4') for the absent variants."""
    parts = []
    for status, by_status in rows.groupby("status", sort=False):
        forms = []
        for form, group in by_status.groupby("loop_form", sort=False):
            unrolls = ",".join(str(u) for u in sorted(group.unroll))
            forms.append(form if form == "python" else f"{form} u={unrolls}")
        parts.append(f"{status}: " + "; ".join(forms))
    return "\n".join(parts)


def plot_python_stages_vs_T(df: pd.DataFrame, target: str = tc.DEFAULT_TARGET):
    """The Python loop's compile stages vs T (log-log, one line per stage),
    one panel per kernel it compiled at two or more T for."""
    table = stages_by_T(df)
    kernels = [k for k in KERNELS if (table.kernel == k).sum() >= 2]
    import matplotlib.pyplot as plt
    import seaborn as sns

    if not kernels:
        fig, ax = plt.subplots(figsize=(6, 3))
        ax.text(0.5, 0.5, "the Python loop compiled at fewer than two T", ha="center")
        ax.set_axis_off()
        return fig, table
    fig, axes = _facets(len(kernels))
    colors = dict(zip(STAGE_COLUMNS, sns.color_palette("Set2", n_colors=len(STAGE_COLUMNS))))
    for ax, kernel in zip(axes, kernels):
        part = table[table.kernel == kernel].sort_values("T")
        for col in STAGE_COLUMNS:
            ax.plot(part["T"], part[col], marker="o", ms=4, color=colors[col], label=STAGE_LABELS[col])
        ax.plot(part["T"], part["compile_ms"], marker="s", ms=4, color="black", lw=1.5, label="total")
        _T_axis(ax, part["T"])
        ax.set_yscale("log")
        ax.set(
            title=f"{kernel} kernel: Python loop",
            xlabel="T (sequence length)",
            ylabel="ms per stage (median)",
        )
        ax.legend(fontsize=7)
    fig.suptitle(f"Where the Python loop's compile time grows\n({label(target)})", fontsize=10)
    return fig, table


def largest_T(df: pd.DataFrame) -> int | None:
    ok = df[df.status == STATUS_OK]
    return int(ok["T"].max()) if not ok.empty else None


# --------------------------------------------------------------------------
# The notebook's parameters


def settings(parameters: dict[str, Any]) -> dict[str, Any]:
    """Validate the notebook's parameters (papermill only warns on unknown
    ones) and derive the sweep: ``sizes``/``unrolls`` for the seed kernel,
    ``attention_sizes``/``attention_unrolls`` for the attention kernel (about
    10x dearer to compile); quick mode swaps in ``quick_sizes``,
    ``quick_attention_sizes`` and ``quick_unrolls``, one compile per point. Raises ValueError naming the
    parameter, its value and what is allowed."""
    from .backend import BACKENDS

    p = dict(parameters)
    check_choice("backend", p["backend"], BACKENDS)
    if not isinstance(p["quick"], bool):
        raise bad_value("quick", p["quick"], "True or False")
    if not isinstance(p["output_root"], str):
        raise bad_value("output_root", p["output_root"], 'a path as a string ("" for the default)')
    check_int("host_devices", p["host_devices"], minimum=1)
    tc.check_target(p["target"])
    kernels = p["kernels"]
    if isinstance(kernels, str) or not kernels:
        raise bad_value("kernels", kernels, f"a non-empty list drawn from {list(KERNELS)}")
    loop_forms = p["loop_forms"]
    if isinstance(loop_forms, str) or not loop_forms:
        raise bad_value("loop_forms", loop_forms, f"a non-empty list drawn from {list(LOOP_FORMS)}")
    for name in ("sizes", "attention_sizes", "quick_sizes", "quick_attention_sizes"):
        if not isinstance(p[name], (list, tuple)):
            raise bad_value(name, p[name], "a non-empty list of T, multiples of 64")
        try:
            check_sizes(p[name])
        except ValueError as err:
            raise bad_value(name, p[name], "a non-empty list of T, multiples of 64") from err
    for name in ("unrolls", "attention_unrolls", "quick_unrolls"):
        check_ints(name, p[name])
    if p["quick"]:
        sizes = {"seed": check_sizes(p["quick_sizes"]), "attention": check_sizes(p["quick_attention_sizes"])}
        unrolls = {"seed": p["quick_unrolls"], "attention": p["quick_unrolls"]}
    else:
        sizes = {"seed": check_sizes(p["sizes"]), "attention": check_sizes(p["attention_sizes"])}
        unrolls = {"seed": p["unrolls"], "attention": p["attention_unrolls"]}
    check_int("repeats", p["repeats"], minimum=1)
    if p["repeats"] > 5:
        raise bad_value("repeats", p["repeats"], "an integer from 1 to 5 (each compile costs seconds)")
    cheap = p["repeat_below_s"]
    if isinstance(cheap, bool) or not isinstance(cheap, (int, float)) or not cheap > 0:
        raise bad_value("repeat_below_s", cheap, "a number of seconds > 0")
    budget = p["max_compile_s"]
    if isinstance(budget, bool) or not isinstance(budget, (int, float)) or not budget > 0:
        raise bad_value("max_compile_s", budget, "a number of seconds > 0")
    for kernel in kernels:
        check_choice("kernels[...]", kernel, KERNELS)
    plan = [v for kernel in kernels for v in variants([kernel], loop_forms, unrolls[kernel])]
    sizes = {k: sizes[k] for k in dict.fromkeys(kernels)}
    return {
        "target": p["target"],
        "variants": plan,
        "sizes": sizes,
        "repeats": 1 if p["quick"] else p["repeats"],
        "repeat_below_s": float(cheap),
        "max_compile_s": float(budget),
        "points": count_points(plan, sizes),
    }
