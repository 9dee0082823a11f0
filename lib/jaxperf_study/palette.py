"""The study's one palette: a colour per dispatch method, per loop form and per source of a
jax#20909 number, the same in every figure, and a line style per unroll
(re-exported by :mod:`jaxperf_study.plots`)."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

import seaborn as sns

from jaxperf.errors import bad_value

# ---------------------------------------------------------------- the one palette
# One colour per dispatch method, per loop form and per source of a jax#20909 number, the
# same in every figure of the study; within each group no two names share a colour.
METHOD_COLORS = {
    "filter_pmap": "#d62728",  # the slow path of equinox#192: red
    "pmap_params": "#1f77b4",  # the reporter's fast baseline: blue
    "cached_filter_pmap": "#2ca02c",  # the drop-in fix: green
    "packed_pmap": "#9467bd",
    "packed_jit": "#bcbd22",
    "filter_pmap_recipe": "#17becf",  # Equinox's low-overhead recipe (docs/tricks.md)
    "filter_jit_recipe": "#e377c2",
    "jit_single_device": "#000000",
    "filter_jit": "#ff7f0e",
    "cached_filter_jit": "#006d2c",
    "filter_jit_patched": "#8c6d31",  # eqx.filter_jit with the proposed change patched in
    "filter_pmap_patched": "#c49c94",  # eqx.filter_pmap with the same change (results/equinox_patch)
    "jit_params": "#393b79",
    # what Equinox advises instead of filter_pmap: each a light shade of its baseline
    "filter_jit_sharded": "#ffbb78",
    "jit_sharded": "#6b6ecf",
    "shard_map_jit": "#aec7e8",  # what jax.pmap is inside
}
# Flax NNX (notebook 11), a group of its own: graph mode red as filter_pmap, the functional
# baseline blue as pmap on params, the drop-in green as the Equinox drop-ins (one step is either
# an NNX step or not, so the two groups never share a figure).
NNX_METHOD_COLORS = {
    "nnx_jit": "#d62728",
    "nnx_tree": "#ff7f0e",
    "nnx_cached_partial": "#8c564b",
    "nnx_jit_partial": "#e377c2",
    "nnx_split_jit": "#1f77b4",
    "nnx_split_leaves_jit": "#17becf",
    "cached_nnx_jit": "#2ca02c",
}
LOOP_FORM_COLORS = {
    "python": "#000000",
    "fori": "#d62728",
    "pl_loop": "#ff7f0e",
    "hand_unrolled": "#9467bd",
    "hoisted": "#1f77b4",
    "scalar_carry": "#2ca02c",
}
SOURCE_COLORS = {  # where a jax#20909 number comes from
    "reporter A6000": "#000000",
    "XLA:CPU": "#1f77b4",
    "Pallas interpret": "#7f7f7f",
    "Triton sm_86": "#ff7f0e",
    "Triton sm_90": "#d62728",
    "Mosaic GPU": "#17becf",
    "Mosaic TPU": "#9467bd",
    "model A6000": "#8c564b",
    "model H200": "#e377c2",
    "H200": "#2ca02c",
}
UNROLL_STYLES = {1: "-", 2: (0, (5, 1)), 4: "--", 8: "-.", 16: ":"}


def color(name: str) -> str:
    """The study's colour for a dispatch method id, a loop form or a variant (``"fori u=4"``
    takes ``fori``'s colour), or a source of a jax#20909 number (see :data:`SOURCE_COLORS`).
    Raises ValueError for a name the palette does not know: add it to its group first."""
    for group in (METHOD_COLORS, NNX_METHOD_COLORS, LOOP_FORM_COLORS, SOURCE_COLORS):
        if name in group:
            return group[name]
    form = str(name).split(" u=")[0].split("+")[0]
    for group in (LOOP_FORM_COLORS, METHOD_COLORS, NNX_METHOD_COLORS):
        if form in group:
            return group[form]
    raise bad_value("name", name, "a method, loop form or source in jaxperf_study.plots' palette")


def colors_for(names: Sequence[str]) -> dict[str, Any]:
    """Colours for the hues of one plot: the palette's colour for each name it knows (methods,
    loop forms, sources), and for other names (models, stages, releases) a colourblind-safe
    cycle in the order given."""
    known = {}
    for name in names:
        with contextlib.suppress(ValueError):  # not in the palette: the cycle's
            known[name] = color(name)
    others = [n for n in names if n not in known]
    cycle = dict(zip(others, sns.color_palette("colorblind", n_colors=max(len(others), 1))))
    return {n: known[n] if n in known else cycle[n] for n in names}


def unroll_style(variant: str) -> Any:
    """The line style of a variant's unroll (``"hoisted u=4"`` -> ``"--"``; python/u=1: solid)."""
    _, _, unroll = str(variant).partition(" u=")
    return UNROLL_STYLES.get(int(unroll), "-") if unroll.isdigit() else "-"
