"""What :func:`jaxperf.diagnose` returns: the measured answer for one step, paste-ready.

:class:`Diagnosis` holds the raw interleaved timings (one row per path and round) and
what is derived from them: per path the it/s ratio to the reader's step in the reader's
loop and with each call blocked (median and quartiles of per-round pairs, with a verdict
from :mod:`.verdicts`), the host CPU and the wait per call, whether calls run ahead; the
paths not offered and why; the paths that do not compute the same (never timed).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pandas as pd

from ..errors import check_choice
from . import verdicts as v

#: how a row of the it/s table is ordered: the reader's path, then the fastest first
PIPELINED, BLOCKED = "loop_it_per_s", "it_per_s"


@dataclasses.dataclass
class Diagnosis:
    """The answer for one step. ``timings``: one row per (path, round), as
    :func:`jaxperf.timing.compare` writes them; the rest is derived (:meth:`summary`)."""

    kind: str
    reader: str
    leaves: int  # array leaves in the arguments of one call
    paths: dict[str, str]  # path -> what it changes
    skipped: dict[str, str]  # builder -> why it was not offered
    problems: dict[str, str]  # path -> how it differs (not timed)
    carry: dict[int, int]
    batch_at: int | None
    donate: str
    loader: bool
    timings: pd.DataFrame
    seconds: float
    precision: float
    environment: dict[str, Any]
    methods: dict[str, str] = dataclasses.field(default_factory=dict)  # path -> palette id

    # ------------------------------------------------------------ derived

    def ratios(self, value: str = PIPELINED) -> pd.DataFrame:
        check_choice("value", value, (PIPELINED, BLOCKED))
        return v.ratios(self.timings, self.reader, self.precision, value)

    def per_call(self) -> pd.DataFrame:
        return v.per_call(self.timings)

    def waiting(self) -> pd.DataFrame:
        reference = next((p for p in self.paths if "partitioned" in p or "split" in p), self.reader)
        if reference not in set(self.timings["variant"]):
            reference = self.reader
        return v.waiting(self.timings, reference)

    def table(self) -> pd.DataFrame:
        """One row per timed path: its it/s in the reader's loop, the ratios to the reader's
        (in the loop and blocked, as text), host CPU and wait per call, and whether it waits."""
        per_call = self.per_call().set_index("variant")
        loop, blocked = self.ratios(PIPELINED).set_index("variant"), self.ratios(BLOCKED).set_index("variant")
        waits = self.waiting().set_index("variant")
        rows = []
        for name in per_call.index:
            mine = name == self.reader
            rows.append(
                {
                    "path": name,
                    "it/s in your loop": 1e3 / per_call.loc[name, "loop_ms"],
                    "x yours, in your loop": "1" if mine else v.ratio_text(loop.loc[name]),
                    "x yours, each call blocked": "1" if mine else v.ratio_text(blocked.loc[name]),
                    "host CPU ms per call": per_call.loc[name, "host_ms"],
                    "wait ms per call": max(per_call.loc[name, "wait_ms"], 0.0),
                    "waits for each call": waits.loc[name, "verdict"],
                }
            )
        table = pd.DataFrame(rows)
        order = [self.reader] + [
            n for n in loop.sort_values("median", ascending=False).index if n in set(table["path"])
        ]
        return table.set_index("path").loc[order].reset_index()

    def best(self) -> dict[str, Any] | None:
        """The path with the highest median it/s ratio in the reader's loop that is faster
        on its whole spread; None when no path is."""
        loop = self.ratios(PIPELINED)
        faster = loop[loop["verdict"] == v.FASTER].sort_values("median", ascending=False)
        return None if faster.empty else faster.iloc[0].to_dict()

    def headline(self) -> list[str]:
        """The verdict first: where the reader's time goes, whether calls wait, what to change."""
        per_call = self.per_call().set_index("variant")
        waits = self.waiting().set_index("variant").loc[self.reader, "verdict"]
        device_ms = float(per_call["wait_ms"].clip(lower=0).min())
        lines = [
            f"Your loop is {v.bound(per_call.loc[self.reader], device_ms)} (the shortest wait of any path)."
        ]
        if waits == "waits for each call":
            lines.append("Each call waits for its result before returning, so the host cannot run ahead.")
        elif waits == "not judged":
            lines.append(
                "Whether calls run ahead is not judged: the step's device time is too short to tell."
            )
        best = self.best()
        if best is None:
            lines.append("No path tried here is faster in your loop on its whole spread.")
        else:
            lines.append(
                f"Change: {best['variant']}, {best['median']:.2f}x your it/s [{best['q25']:.2f}, "
                f"{best['q75']:.2f}] in your loop ({self.paths[best['variant']]})."
            )
        return lines

    def rounds(self) -> dict[str, Any]:
        first = self.timings.iloc[0]
        return {
            "rounds": int(self.timings["repeat"].max()) + 1,
            "calls_per_round": int(first["calls"]),
            "stopped_by": str(first["stopped_by"]),
            "rel_iqr": float(first["rel_iqr"]),
        }

    # ------------------------------------------------------------ output

    def summary(self) -> dict[str, Any]:
        """Everything :meth:`markdown` states, as JSON-ready data."""
        return {
            "kind": self.kind,
            "reader": self.reader,
            "array_leaves_per_call": self.leaves,
            "donate": self.donate,
            "carry": {str(k): val for k, val in self.carry.items()},
            "batch_at": self.batch_at,
            "loader": self.loader,
            "precision": self.precision,
            **self.rounds(),
            "seconds": round(self.seconds, 1),
            "environment": self.environment,
            "headline": self.headline(),
            "per_call_ms": self.per_call().to_dict(orient="records"),
            "ratios_in_your_loop": self.ratios(PIPELINED).to_dict(orient="records"),
            "ratios_blocked": self.ratios(BLOCKED).to_dict(orient="records"),
            "waits": self.waiting()[["variant", "verdict", "ratio_median", "ratio_q25", "ratio_q75"]].to_dict(
                orient="records"
            ),
            "paths": self.paths,
            "not_offered": self.skipped,
            "differs": self.problems,
        }

    def to_json(self) -> str:
        return json.dumps(self.summary(), indent=2, default=str)

    def markdown(self) -> str:
        """At most 25 lines, paste-ready: the verdict, a table of paths, what was not timed,
        how it was measured, where."""
        from .. import markdown as md

        env = self.environment
        versions = ", ".join(f"{k} {val}" for k, val in env.get("packages", {}).items())
        head = (
            f"**{self.kind} step, {self.leaves} array leaves in its arguments** "
            f"({env.get('backend')}: {env.get('device_count')} x {env.get('device_kind')}; {versions})"
        )
        table = self.table()
        for col in ("it/s in your loop", "host CPU ms per call", "wait ms per call"):
            table[col] = table[col].map(lambda x: f"{x:,.0f}" if x >= 1000 else f"{x:.3g}")
        lines = [head, "", *(f"- {line}" for line in self.headline()), "", md.table(table)]
        notes = [f"{name}: {why}" for name, why in self.problems.items()]
        if notes:
            lines += ["", "Not timed, results differ from yours: " + "; ".join(notes) + "."]
        if self.skipped:
            lines += [
                "",
                "Not offered: " + "; ".join(f"{k} ({why})" for k, why in self.skipped.items()) + ".",
            ]
        r = self.rounds()
        loop = "your loader feeding each call" if self.loader else "the same batch each call"
        lines += [
            "",
            f"Measured: {r['rounds']} interleaved rounds of {r['calls_per_round']} calls per path, "
            f"state passed from call to call, {loop}, donation {self.donate}; ratios are medians of "
            f"per-round pairs [quartiles]; stopped by {r['stopped_by']} (widest ratio +-{100 * r['rel_iqr']:.1f}%, "
            f"target +-{100 * self.precision:.0f}%) after {self.seconds:.0f} s.",
        ]
        return "\n".join(lines)

    def figure(self, footer: bool = True) -> tuple[Any, pd.DataFrame]:
        """(figure, data): it/s per path in the reader's loop (median, IQR), and where each
        path's time per blocked call goes (host CPU, waiting); ``footer``: the backend, devices
        and versions on the figure (leave it to ``study.figure`` inside a notebook)."""
        from .figure import draw

        return draw(self, footer)
