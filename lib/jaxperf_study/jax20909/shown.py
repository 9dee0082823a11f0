"""Which variants a figure of jax#20909 draws, and the ratio its title quotes: one choice for
every study's figures (the loop study's, the Triton and TPU compile studies'), so a variant
leads or stays in the secondary figure the same way everywhere. No plotting here."""

from __future__ import annotations

import pandas as pd

from .vocab import FIX, PORTABLE_FORMS, frame_variant_order, variant_name


def key_variants(df: pd.DataFrame) -> list[str]:
    """The lines worth a curve, in the study's order: the Python loop, fori_loop(unroll=1),
    the hoisted loop and the fix (scalar_carry u=1) at unroll 1, and the portable
    hand-unrolled loop at its largest unroll (hoisted, then scalar_carry, where no
    hand_unrolled ran). Every unroll is in :func:`plot_unroll_heatmap`."""
    present = set(df.variant) if "variant" in df else set(frame_variant_order(df))
    keep = [v for v in ("python", "fori u=1", "hoisted u=1", FIX) if v in present]
    for form in PORTABLE_FORMS:
        unrolled = df[(df.loop_form == form) & (df.unroll > 1)]
        if len(unrolled):
            keep.append(variant_name(form, int(unrolled.unroll.max())))
            break
    return [v for v in frame_variant_order(df) if v in keep]


def ratio_at_largest_T(medians: pd.DataFrame, value: str, variant: str) -> tuple[int, float] | None:
    """``(T, variant's value / the Python loop's)`` at the largest T with both, else None."""
    both = medians.pivot_table(index="T", columns="variant", values=value)
    if "python" not in both or variant not in both:
        return None
    both = both[["python", variant]].dropna()
    if both.empty:
        return None
    T = int(both.index.max())
    return T, float(both.loc[T, variant] / both.loc[T, "python"])
