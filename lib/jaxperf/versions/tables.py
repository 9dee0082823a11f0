"""Per-pair tables of a version matrix: ``filter_pmap`` against ``jax.pmap`` on params
(``BASELINE``) in the same repeat, back to back, as median and interquartile range."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..markdown import fmt_stat
from ..timing import iqr_stats, pair_ratios
from .bench import BASELINE, MODELS, VARIANTS, VersionMatrix


def _paired_difference(df: pd.DataFrame, baseline: str, value: str, by: list[str]) -> pd.DataFrame:
    """Per-repeat ``value(variant) - value(baseline)`` inside each group, in column ``difference``.

    The difference counterpart of ``timing.pair_ratios``: pairs are matched on ``by + ['repeat']``.
    """
    keys = by + ["repeat"]
    base = df[df["variant"] == baseline][keys + [value]].rename(columns={value: "_base"})
    merged = df.merge(base, on=keys, how="inner")
    merged["difference"] = merged[value] - merged["_base"]
    return merged.drop(columns="_base")


# filter_pmap's extra cost over jax.pmap, per pair, three ways: the dispatching thread's CPU time (Equinox's
# host work, steadiest on a shared machine), blocked wall time (what a training loop feels), enqueue-only time.
EXTRA_MEASURES = {
    "extra_cpu_ms": "cpu_s_per_call",
    "extra_ms": "wall_s_per_call",
    "extra_dispatch_ms": "dispatch_s_per_call",
}


def tabulate(matrix: VersionMatrix) -> pd.DataFrame:
    """One row per (release, model), all per pair against ``jax.pmap`` on params
    (median, q25, q75): filter_pmap's extra host-CPU ms (``extra_cpu_ms_*``),
    extra wall ms (``extra_ms_*``) and extra enqueue ms (``extra_dispatch_ms_*``)
    per call, the it/s ratios of filter_pmap and the cached fix; plus median ms
    per call and it/s of each method. Failed releases get one row with their error."""
    by = ["release", "model", "round"]
    rows = []
    timings = matrix.timings
    for env in matrix.environments.itertuples(index=False):
        part = timings[timings["release"] == env.release] if len(timings) else timings
        if part.empty:
            rows.append(
                {
                    "release": env.release,
                    "jax": env.jax,
                    "python": env.python,
                    "model": "-",
                    "status": env.status,
                    "error": env.error,
                }
            )
            continue
        ratios = pair_ratios(part, BASELINE, "it_per_s", by=by)
        extras = {
            stem: _paired_difference(part, BASELINE, column, by=by) for stem, column in EXTRA_MEASURES.items()
        }
        for model in [m for m in MODELS if m in set(part["model"])]:
            row: dict[str, Any] = {
                "release": env.release,
                "jax": env.jax,
                "python": env.python,
                "model": model,
            }
            for variant in ("filter_pmap", "pmap_cached"):
                r = iqr_stats(ratios[(ratios["model"] == model) & (ratios["variant"] == variant)]["ratio"])
                row.update({f"{variant}_ratio_{k}": r[k] for k in ("median", "q25", "q75")})
            for stem, diffs in extras.items():
                e = iqr_stats(
                    1e3 * diffs[(diffs["model"] == model) & (diffs["variant"] == "filter_pmap")]["difference"]
                )
                row.update({f"{stem}_{k}": e[k] for k in ("median", "q25", "q75")})
            row["pairs"] = e["n"]
            for variant in VARIANTS:
                sel = part[(part["model"] == model) & (part["variant"] == variant)]
                row[f"{variant}_ms_per_call"] = 1e3 * float(np.median(sel["wall_s_per_call"]))
                row[f"{variant}_cpu_ms_per_call"] = 1e3 * float(np.median(sel["cpu_s_per_call"]))
                row[f"{variant}_it_per_s"] = float(np.median(sel["it_per_s"]))
            row.update({"status": env.status, "error": env.error})
            rows.append(row)
    return pd.DataFrame(rows)


def display_table(table: pd.DataFrame) -> pd.DataFrame:
    """The table as it reads in an issue: ``median [q25, q75]`` strings."""
    out = []
    for r in table.to_dict("records"):
        if r.get("model", "-") == "-":
            out.append(
                {
                    "equinox": r["release"],
                    "jax": r["jax"],
                    "model": "-",
                    "filter_pmap / pmap it/s": "failed",
                    "extra CPU ms/call": "-",
                    "extra wall ms/call": "-",
                    "cached fix / pmap it/s": "-",
                    "pmap ms/call": "-",
                    "filter_pmap ms/call": "-",
                    "note": _short_error(r.get("error", "")),
                }
            )
            continue
        out.append(
            {
                "equinox": r["release"],
                "jax": r["jax"],
                "model": r["model"],
                "filter_pmap / pmap it/s": fmt_stat(
                    {k: r[f"filter_pmap_ratio_{k}"] for k in ("median", "q25", "q75")}
                ),
                "extra CPU ms/call": fmt_stat(
                    {k: r[f"extra_cpu_ms_{k}"] for k in ("median", "q25", "q75")}, 1
                ),
                "extra wall ms/call": fmt_stat({k: r[f"extra_ms_{k}"] for k in ("median", "q25", "q75")}, 1),
                "cached fix / pmap it/s": fmt_stat(
                    {k: r[f"pmap_cached_ratio_{k}"] for k in ("median", "q25", "q75")}
                ),
                "pmap ms/call": f"{r['pmap_params_ms_per_call']:.2f}",
                "filter_pmap ms/call": f"{r['filter_pmap_ms_per_call']:.2f}",
                "note": "",
            }
        )
    return pd.DataFrame(out)


def _short_error(error: str, limit: int = 160) -> str:
    line = " ".join(str(error).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."
