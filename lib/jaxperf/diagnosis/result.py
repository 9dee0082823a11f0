"""What :func:`jaxperf.diagnosis.diagnose` returns: :class:`Diagnosis`, the raw interleaved timings and
what derives from them (ratios with verdicts, host time and wait per call, paths not timed).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pandas as pd

from .. import runs_ahead, timing
from ..errors import check_choice
from . import verdicts as v

#: how a row of the it/s table is ordered: the reader's path, then the fastest first
PIPELINED, BLOCKED = "loop_it_per_s", "it_per_s"
#: the columns of :meth:`Diagnosis.waiting`
WAITS = ["variant", "verdict", "ratio_median", "ratio_q25", "ratio_q75"]
#: the least median it/s ratio a change must show to be recommended
WORTH = 1.05
#: how far a measured ratio may pass :meth:`Diagnosis.dispatch_limit` and still count as a dispatch gain
SLACK = 1.02


@dataclasses.dataclass
class Diagnosis:
    """The answer for one step: ``timings`` (a row per path and round) and what derives from them."""

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
    failed: dict[str, str] = dataclasses.field(default_factory=dict)  # path -> the error it raised
    retrace: dict[str, Any] | None = None  # how the reader's loop compiles call after call
    printed: dict[str, Any] = dataclasses.field(default_factory=dict)  # the step's own output
    snippets: dict[str, str] = dataclasses.field(default_factory=dict)  # path -> how to write it
    unchecked: list[str] = dataclasses.field(default_factory=list)  # paths the time cap left out
    static: dict[str, Any] | None = None  # a Python scalar argument a new value of which compiles again
    compile_seconds: float = 0.0  # of ``seconds``, compiling (not counted against the cap)

    @property
    def timed(self) -> bool:
        return not self.timings.empty and self.reader in set(self.timings["variant"])

    def ratios(self, value: str = PIPELINED) -> pd.DataFrame:
        check_choice("value", value, (PIPELINED, BLOCKED))
        if not self.timed or self.timings["variant"].nunique() < 2:
            return pd.DataFrame(columns=v.RATIO_COLUMNS)
        return v.ratios(self.timings, self.reader, self.precision, value)

    def per_call(self) -> pd.DataFrame:
        """:func:`~jaxperf.diagnosis.verdicts.per_call`; where the host's time is the wall time while
        enqueuing (a coarse CPU clock), the device's time in a path that waits is moved to its wait."""
        if not self.timed:
            return pd.DataFrame(columns=["variant", "host_ms", "wait_ms"])
        table = v.per_call(self.timings)
        found = self.waiting()
        waits = table["variant"].isin(found.loc[found["verdict"] == runs_ahead.WAITS, "variant"])
        if waits.any() and timing.coarse_clock(self.timings):
            device = table.loc[~waits, ["wait_ms", "loop_ms"]].clip(lower=0).min().min()
            for end in ("", "_q25", "_q75"):
                table.loc[waits, "host_ms" + end] -= device
                table.loc[waits, "wait_ms" + end] += device
        return table

    def device_ms(self) -> float:
        """The step's device time per call, at most any path's wait or pipelined loop (one program)."""
        return float(self.per_call()[["wait_ms", "loop_ms"]].clip(lower=0).min().min())

    def where(self) -> str:
        env = self.environment
        versions = ", ".join(f"{k} {val}" for k, val in env.get("packages", {}).items())
        return f"{env.get('backend')}: {env.get('device_count')} x {env.get('device_kind')}; {versions}"

    def reference(self) -> str:
        """The timed path the runs-ahead verdicts take as running ahead: jax.jit on the partitioned state,
        else a jaxperf drop-in, else a jax.jit or jaxperf reader's own ("" where none was timed)."""
        ahead = [p for p in self.paths if "partitioned" in p or "split" in p]
        ahead += [p for p in self.paths if p.startswith("jaxperf.")]
        ahead += [self.reader] * self.kind.startswith(("jax.jit", "jax.pmap", "jaxperf."))
        return next((p for p in ahead if p in set(self.timings["variant"])), "")

    def waiting(self) -> pd.DataFrame:
        if not self.timed:
            return pd.DataFrame(columns=WAITS)
        return runs_ahead.verdicts(self.timings, self.reference())

    def table(self) -> pd.DataFrame:
        """One row per timed path: it/s, ratios to the reader's (in the loop, blocked), host, wait."""
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
                    "host ms per call": per_call.loc[name, "host_ms"],
                    "wait ms per call": max(per_call.loc[name, "wait_ms"], 0.0),
                    "waits for each call": waits.loc[name, "verdict"],
                }
            )
        table = pd.DataFrame(rows)
        order = [self.reader] + [
            n for n in loop.sort_values("median", ascending=False).index if n in set(table["path"])
        ]
        return table.set_index("path").loc[order].reset_index()

    def dispatch_limit(self) -> float:
        """The most any dispatch path could give the reader's loop: the least of loop/device and 1 +
        host/device (all host work removed); loop/device alone where the reader's calls wait (the idle
        time between its call's end and the next enqueue is no host CPU, yet running ahead removes it);
        inf where host-bound or run-ahead is not judged."""
        if not self.timed:
            return float("inf")
        device_ms, mine = self.device_ms(), self.per_call().set_index("variant").loc[self.reader]
        verdict = self.waiting().set_index("variant").loc[self.reader, "verdict"]
        if mine["host_ms"] > device_ms or device_ms < 1.0 or verdict == runs_ahead.NOT_JUDGED:
            return float("inf")
        host = mine["loop_ms"] if verdict == runs_ahead.WAITS else device_ms + mine["host_ms"]
        return float(min(mine["loop_ms"], host) / device_ms)

    def beyond_dispatch(self) -> dict[str, float]:
        """{path: median ratio} faster than :meth:`dispatch_limit` allows: reported, never recommended."""
        limit = SLACK * self.dispatch_limit()
        loop = self.ratios(PIPELINED)
        over = loop[(loop["verdict"] == v.FASTER) & (loop["median"] > limit)]
        return dict(zip(over["variant"], over["median"].astype(float)))

    def best(self) -> dict[str, Any] | None:
        """The path with the highest median it/s ratio in the reader's loop that is faster
        on its whole spread, by at least :data:`WORTH`, and by no more than removing all host
        work could explain (:meth:`beyond_dispatch`); None when no path is."""
        loop = self.ratios(PIPELINED)
        beyond = self.beyond_dispatch()
        ok = (loop["verdict"] == v.FASTER) & (loop["median"] >= WORTH) & ~loop["variant"].isin(list(beyond))
        faster = loop[ok].sort_values("median", ascending=False)
        return None if faster.empty else faster.iloc[0].to_dict()

    def headline(self) -> list[str]:
        """The verdict first: a retrace, else where the time goes, whether calls wait, what to change."""
        if self.retrace:
            r = self.retrace
            where = f"argument {r.get('argument')}" + (f" ({r['name']})" if r.get("name") else "")
            if r.get("int"):  # a Python int the step takes as static, not returned: the loop's counter
                return [f"Your step compiles again on every call that passes {where} a new value: it "
                        f"takes this Python int as static ({r['before']} then {r['after']}: {r['ms']:.3g} ms, "
                        "compiling), as a loop that counts steps in it does. Pass it as an array (jnp.asarray("
                        f"{r['name'] or '...'})), or close over it if it never changes; then diagnose again: "
                        "nothing else was timed."]  # fmt: skip
            if r.get("cannot"):  # a static argument the step returns as an array
                return [
                    f"Your step compiles again for every new value of {where}, a static argument, and "
                    f"returns it as an array, which JAX refuses as a static argument ({r['cannot']}): "
                    "your loop cannot pass it back. Pass it as a traced array; nothing else was timed."
                ]
            lines = [
                f"Your step compiles again on every call: {r['compiles']} compiles in {r['calls']} calls "
                f"of your loop, about {r['ms_per_call']:.3g} ms per call, most of it compiling."
            ]
            if "argument" in r:
                lines.append(
                    f"What changes: {where}{r.get('path') or ''}, {r.get('before')} then {r.get('after')}. "
                    "Keep it fixed from call to call (a traced array, or out of what the step returns); "
                    "then diagnose again: nothing else was timed."
                )
            return lines
        a, static = self.static, []
        if a:  # a Python scalar the step takes as static: a replay of the loop's own outputs cannot see it
            name, ms = f"argument {a['argument']}" + (f" ({a['name']})" * bool(a.get("name"))), a["ms"]
            static = [f"Each new value of {name}, a Python scalar your step takes as static, compiles it again "
                      f"({ms:.3g} ms): if your loop changes it (a step count, a schedule), every call compiles. "
                      f"Pass it as an array (jnp.asarray({a.get('name') or '...'})) instead."]  # fmt: skip
        if not self.timed:
            return [*static, "Nothing was timed."]
        table = self.waiting().set_index("variant")
        waits, device_ms = table.loc[self.reader, "verdict"], self.device_ms()
        mine = self.per_call().set_index("variant").loc[self.reader]
        lines = [*static, f"Your loop is {v.bound(mine, device_ms)} (the shortest wait or loop of any path)."]
        if waits == runs_ahead.WAITS:
            lines.append("Each call waits for its result before returning, so the host cannot run ahead.")
        elif waits == runs_ahead.NOT_JUDGED:
            name, why = self.reference(), "your path's host time exceeds the device's, so its enqueue takes "
            why += "most of its blocked time whether or not it waits"
            ref = table.loc[name] if name else None
            if ref is None:
                why = "no path known to run ahead (jax.jit on the partitioned state, jaxperf's) was timed"
            elif ref["verdict"] == runs_ahead.NOT_JUDGED:  # the threshold, and what was measured
                why = (f"the step's device time is too short to tell; that needs {name}, "
                       f"which runs ahead, to enqueue in under {runs_ahead.BOUNDARY:g} of its blocked time "
                       "in 3 rounds of 4 (more device than host time); it measured "
                       f"{ref['ratio_q75']:.2f} (upper quartile), {ref['enqueue_ms_per_call']:.3g} of "
                       f"{ref['blocked_ms_per_call']:.3g} ms per call")  # fmt: skip
            lines.append(f"Whether calls run ahead is not judged: {why}.")
        best = self.best()
        beyond = self.beyond_dispatch()
        if beyond:
            name, ratio = next(iter(beyond.items()))
            lines.append(
                f"{name} measured {ratio:.2f}x, more than removing all host work could give this loop "
                f"(at most {self.dispatch_limit():.3f}x): not a dispatch gain (its compiled program "
                "differs, or noise); not recommended."
            )
        if self.unchecked:  # never "no path is faster" over paths that were not tried
            lines.append(
                f"Not checked within the time cap: {', '.join(self.unchecked)}. Give them time with a "
                f"larger cap (--max-seconds {max(60, 2 * round(self.seconds - self.compile_seconds)):.0f}, "
                "or diagnose(max_seconds=...); compiles do not count against it)."
            )
        if best is None:
            tried = "Of the paths checked, none" if self.unchecked else "No path tried here"
            return [
                *lines,
                f"{tried} is faster in your loop by {100 * (WORTH - 1):.0f}% or more on its whole spread.",
            ]
        lines.append(
            f"Change: {best['variant']}, {best['median']:.2f}x your it/s [{best['q25']:.2f}, "
            f"{best['q75']:.2f}] in your loop ({self.paths[best['variant']]})."
        )
        if mine["host_ms"] <= device_ms:  # device-bound, and still a faster path: say why both hold
            host = f"{mine['host_ms']:.3g} ms of host time per call"
            if waits == "waits for each call":
                why = f"your calls wait for their results, so the {host} add to the device's time"
            elif self.environment.get("backend") == "cpu":
                why = f"on the cpu backend the device is the host's own cores, so the {host} compete with it"
            else:
                why = f"the {host} are not all hidden behind the device's work (it idles between calls)"
            lines.append(f"Device-bound and still faster with the change: {why}.")
        return lines

    def rounds(self) -> dict[str, Any]:
        if not self.timed:
            return {
                "rounds": 0,
                "calls_per_round": 0,
                "loop_calls": [0, 0],
                "stopped_by": "nothing timed",
                "rel_iqr": None,
            }
        first = self.timings.iloc[0]
        loop = self.timings["loop_calls"] if "loop_calls" in self.timings else self.timings["calls"]
        return {
            "rounds": int(self.timings["repeat"].max()) + 1,
            "calls_per_round": int(first["calls"]),
            "loop_calls": [int(loop.min()), int(loop.max())],  # the pipelined loop's, fewest and most
            "stopped_by": str(first["stopped_by"]),
            "rel_iqr": None if pd.isna(first["rel_iqr"]) else float(first["rel_iqr"]),
        }

    def summary(self) -> dict[str, Any]:
        """Everything :meth:`markdown` states, as JSON-ready data."""
        records = lambda frame: frame.to_dict(orient="records")  # noqa: E731
        return (
            dict(kind=self.kind, reader=self.reader, array_leaves_per_call=self.leaves, donate=self.donate)
            | dict(carry={str(k): val for k, val in self.carry.items()}, batch_at=self.batch_at)
            | dict(loader=self.loader, precision=self.precision, **self.rounds())
            | dict(seconds=round(self.seconds, 1), environment=self.environment, headline=self.headline())
            | dict(per_call_ms=records(self.per_call()), ratios_in_your_loop=records(self.ratios(PIPELINED)))
            | dict(ratios_blocked=records(self.ratios(BLOCKED)), waits=records(self.waiting()[WAITS]))
            | dict(
                paths=self.paths,
                methods=self.methods,
                snippets=self.snippets,
                not_offered=self.skipped,
                differs=self.problems,
            )
            | dict(failed=self.failed, retrace=self.retrace, static=self.static, not_checked=self.unchecked)
            | dict(compile_seconds=round(self.compile_seconds, 1), printed=self.printed)
        )

    def to_json(self) -> str:
        return json.dumps(self.summary(), indent=2, default=str)

    def markdown(self) -> str:
        """At most 25 lines, paste-ready: verdict, table, what was not timed, how and where measured."""
        from .. import markdown as md

        head = f"**{self.kind} step, {self.leaves} array leaves in its arguments** ({self.where()})"
        lines = [head, "", *(f"- {line}" for line in self.headline())]
        best = self.best()
        code = "" if best is None else self.snippets.get(best["variant"], "")
        if code:
            lines += ["", "```python", code, "```"]
        if self.timed:
            table = self.table()
            for col in ("it/s in your loop", "host ms per call", "wait ms per call"):
                table[col] = table[col].map(lambda x: f"{x:,.0f}" if x >= 1000 else f"{x:.3g}")
            lines += ["", md.table(table)]
        for title, notes in (
            ("Not timed, results differ from yours", self.problems),
            ("Not timed, raised", self.failed),
            ("Not offered", self.skipped),
        ):
            if notes:
                lines += ["", f"{title}: " + "; ".join(f"{k} ({why})" for k, why in notes.items()) + "."]
        printed = self.printed.get("lines", 0)
        if printed:
            first = self.printed.get("first") or [""]
            lines += [
                "",
                f"Your step printed {printed:,} lines while diagnosed (not shown; the first: {first[0]!r}).",
            ]
        r = self.rounds()
        loop = "your loader feeding each call" if self.loader else "the same batch each call"
        if r["rounds"]:
            spread = "" if r["rel_iqr"] is None else f"widest ratio +-{100 * r['rel_iqr']:.1f}%, "
            host = "the dispatching thread's CPU time per blocked call"
            if timing.coarse_clock(self.timings):  # a TPU host's thread CPU clock moves in 10 ms steps
                host = "the wall time while enqueuing (a coarse CPU clock), less the device's if it waits"
            lo, hi = r["loop_calls"]
            calls = f"{lo:,}" if lo == hi else f"{lo:,} to {hi:,}"
            lines += [
                "",
                f"Measured: {r['rounds']} interleaved rounds per path, each a loop of {calls} calls blocked "
                f"once at its end (it/s in your loop) and {r['calls_per_round']} calls blocked one by one, "
                f"state passed from call to call, {loop}, donation {self.donate}; host time: {host}; ratios "
                f"are medians of per-round pairs [quartiles]; stopped by {r['stopped_by']} ({spread}"
                f"target +-{100 * self.precision:.0f}%) after {self.seconds:.0f} s in all"
                f" ({self.compile_seconds:.0f} s of it compiling, not counted against the cap).",
            ]
        else:
            lines += ["", f"Measured: nothing timed; donation {self.donate}; {self.seconds:.0f} s in all."]
        return "\n".join(lines)
