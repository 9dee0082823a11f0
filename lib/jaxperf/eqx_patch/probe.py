"""The patch's numbers for the issue text, read from notebook 01's timings (the diagnosis
engine times ``eqx.filter_jit`` and ``eqx.filter_pmap``, shipped and patched, beside ``jax.jit``
and ``jax.pmap`` on params, every path first proved to compute the same): :func:`summary`
reads each variant's CPU per call and, per round, its excess over its baseline; :func:`per_leaf`
turns the excesses at two sizes into milliseconds per leaf; :func:`traversals` counts the
pytree work of one call of each wrapper.
"""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax
import pandas as pd

from .. import timing
from ..errors import bad_value
from .load import patched_filter_jit, patched_filter_pmap

#: variant -> label
VARIANTS = {
    "jit_params": "jax.jit on params",
    "filter_jit": "eqx.filter_jit",
    "filter_jit_patched": "eqx.filter_jit, patched",
    "pmap_params": "jax.pmap on params",
    "filter_pmap": "eqx.filter_pmap",
    "filter_pmap_patched": "eqx.filter_pmap, patched",
}
#: each Equinox variant's baseline: the same step through JAX on the model's arrays
BASELINE = {
    "filter_jit": "jit_params",
    "filter_jit_patched": "jit_params",
    "filter_pmap": "pmap_params",
    "filter_pmap_patched": "pmap_params",
}


def summary(timings: pd.DataFrame) -> pd.DataFrame:
    """Per (leaves, variant): CPU ms per call and, for the Equinox variants, the per-repeat
    excess over the baseline (ms) and ratio to it, each as median, q25, q75."""
    df = timings.assign(cpu_ms=timings["cpu_s_per_call"] * 1e3)
    cpu = timing.summarize(df, "cpu_ms", ["leaves", "variant"])
    cpu = cpu.rename(columns={k: f"cpu_ms_{k}" for k in ("median", "q25", "q75", "n")})
    # one column per variant, one row per (leaves, repeat): a repeat's variants ran back to back
    paired = df.pivot_table(index=["leaves", "repeat"], columns="variant", values="cpu_ms")
    rows = []
    for variant, baseline in BASELINE.items():
        if variant not in paired or baseline not in paired:
            continue
        for leaves, group in paired.groupby(level="leaves"):
            pair = group[[variant, baseline]].dropna()
            if pair.empty:
                continue
            excess = timing.iqr_stats(pair[variant] - pair[baseline])
            ratio = timing.iqr_stats(pair[variant] / pair[baseline])
            rows.append(
                {
                    "leaves": leaves,
                    "variant": variant,
                    "baseline": baseline,
                    **{f"excess_ms_{k}": excess[k] for k in ("median", "q25", "q75")},
                    **{f"ratio_{k}": ratio[k] for k in ("median", "q25", "q75")},
                }
            )
    out = cpu.merge(pd.DataFrame(rows), on=["leaves", "variant"], how="left")
    return out.assign(label=out["variant"].map(VARIANTS))


def per_leaf(table: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Per Equinox variant, the excess's growth per array leaf (ms) between the smallest and the
    largest model of ``table`` (from :func:`summary`): ``median`` from the median excesses,
    ``low``/``high`` from the quartiles that make it smallest/largest; ``at_zero_ms``: the
    median line's value at zero leaves. Raises ValueError with fewer than two sizes."""
    sizes = sorted(table["leaves"].unique())
    if len(sizes) < 2:
        raise bad_value("table", f"{len(sizes)} model size(s)", "a summary of at least two model sizes")
    small, large = sizes[0], sizes[-1]
    out = {}
    for variant in BASELINE:
        rows = table[table["variant"] == variant].set_index("leaves")
        a, b = rows.loc[small], rows.loc[large]
        span = large - small
        slope = (b["excess_ms_median"] - a["excess_ms_median"]) / span
        out[variant] = {
            "median": float(slope),
            "low": float((b["excess_ms_q25"] - a["excess_ms_q75"]) / span),
            "high": float((b["excess_ms_q75"] - a["excess_ms_q25"]) / span),
            "at_zero_ms": float(a["excess_ms_median"] - slope * small),
            "leaves_small": int(small),
            "leaves_large": int(large),
        }
    return out


def traversals() -> pd.DataFrame:
    """How many times one call of each wrapper flattens and unflattens a pytree node of its
    input and output (the call after the compiling one, on a node that counts itself): the
    per-call tree work that grows with the leaves, counted rather than timed. One row per
    variant of :data:`VARIANTS`, the pmap ones on one device."""
    import jax.numpy as jnp
    import jax.tree_util as jtu

    counts = {"flattens": 0, "unflattens": 0}

    class Node:
        def __init__(self, x: Any):
            self.x = x

    def flatten(node: Node) -> tuple[tuple[Any], None]:
        counts["flattens"] += 1
        return (node.x,), None

    def unflatten(_: None, children: Any) -> Node:
        counts["unflattens"] += 1
        return Node(*children)

    jtu.register_pytree_node(Node, flatten, unflatten)
    step = lambda node: Node(node.x + 1)  # noqa: E731
    shipped_filter_pmap: Any = eqx.filter_pmap  # its overloads do not list **pmapkwargs
    device = jax.devices()[:1]
    wrappers = {
        "jit_params": jax.jit(step),
        "filter_jit": eqx.filter_jit(step),
        "filter_jit_patched": patched_filter_jit(step),
        "pmap_params": jax.pmap(step, devices=device),
        "filter_pmap": shipped_filter_pmap(step, devices=device),
        "filter_pmap_patched": patched_filter_pmap(step, devices=device),
    }
    rows = []
    for variant, fn in wrappers.items():
        jax.block_until_ready(fn(Node(jnp.zeros(1))).x)  # compiled
        counts.update(flattens=0, unflattens=0)
        out = fn(Node(jnp.ones(1)))
        rows.append({"variant": variant, "label": VARIANTS[variant], **counts})
        if float(out.x[0]) != 2.0:
            raise AssertionError(f"{variant} computed {out.x} from [1.0], not [2.0]")
    return pd.DataFrame(rows)
