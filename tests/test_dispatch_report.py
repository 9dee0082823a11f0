"""Notebook 01's arithmetic on synthetic timings: the cost per leaf recovered from per-round
pairs, the seed's implied it/s, ranges over every cell, and a summary that answers in five
bullets and keeps the project's goals folded."""

import re
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from jaxperf_study import reruns
from jaxperf_study.dispatch import per_leaf, report

ROUNDS = 6


def frame(cpu_ms, leaves=(14, 56, 392), family="pmap", step="noop", donated=False, noise=0.0, seed=0):
    """Timings of one family: ``cpu_ms[method](leaves)`` host ms per call in every round, it/s
    the inverse; ``noise``: a relative jitter per round."""
    rng = np.random.default_rng(seed)
    rows = []
    for n in leaves:
        for r in range(ROUNDS):
            for method, cost in cpu_ms.items():
                ms = cost(n) * (1 + noise * rng.standard_normal())
                rows.append(
                    {
                        "step": step,
                        "model": f"mlp_{n}",
                        "kind": "mlp",
                        "leaves": n,
                        "donated": donated,
                        "family": family,
                        "variant": f"{method} path",
                        "method": method,
                        "repeat": r,
                        "cpu_s_per_call": ms / 1e3,
                        "wall_s_per_call": ms / 1e3,
                        "dispatch_s_per_call": ms / 2e3,
                        "it_per_s": 1e3 / ms,
                        "loop_it_per_s": 1e3 / ms,
                        "stopped_by": "precision",
                    }
                )
    return pd.DataFrame(rows)


PMAP = {
    "pmap_params": lambda n: 0.5 + 0.05 * n,
    "filter_pmap": lambda n: 0.5 + 0.05 * n + 1.0 + 0.040 * n,  # +1 ms and 40 µs per leaf
    "cached_filter_pmap": lambda n: 0.5 + 0.05 * n + 0.1,
    "filter_pmap_recipe": lambda n: 0.5 + 0.05 * n + 0.5 + 0.02 * n,  # Equinox's recipe: half the cost
}


def test_the_line_recovers_the_cost_per_leaf_and_its_intercept():
    rounds = per_leaf.excess(frame(PMAP), "filter_pmap")
    line = per_leaf.fit_per_process(rounds)
    assert line["b_us_per_leaf"] == pytest.approx(40.0) and line["a_ms"] == pytest.approx(1.0)
    assert line["b_us_per_leaf_lo"] <= 40.0 + 1e-9 <= line["b_us_per_leaf_hi"] + 1e-9
    cells = per_leaf.against_fit(rounds, line)
    assert cells["on_the_line"].all()


def test_excess_pairs_rounds_within_a_cell():
    df = frame(PMAP, noise=0.2, seed=1)
    rounds = per_leaf.excess(df, "filter_pmap")
    one = df[(df["leaves"] == 56) & (df["repeat"] == 3)].set_index("method")["cpu_s_per_call"] * 1e3
    got = rounds[(rounds["leaves"] == 56) & (rounds["repeat"] == 3)]["excess_ms"].iloc[0]
    assert got == pytest.approx(one["filter_pmap"] - one["pmap_params"])


def test_noisy_processes_give_a_range_that_holds_the_truth():
    runs = [frame(PMAP, noise=0.05, seed=seed).assign(process=seed) for seed in range(3)]
    line = per_leaf.fit_per_process(per_leaf.excess(per_leaf.pooled(pd.concat(runs)), "filter_pmap"))
    assert line["b_us_per_leaf_lo"] < line["b_us_per_leaf_hi"] and line["processes"] == 3
    assert abs(line["b_us_per_leaf"] - 40) < 10


def test_one_leaf_count_is_not_a_line():
    with pytest.raises(ValueError, match="two leaf counts"):
        per_leaf.fit_per_process(per_leaf.excess(frame(PMAP, leaves=(56,)), "filter_pmap"))


def test_a_coarse_clock_gives_way_to_the_wall_time_while_enqueuing():
    """A TPU host's thread clock moves in 10 ms ticks: a round's CPU per call is then a count of
    ticks (0 or 10 ms for a 3 ms call). The host's time per call is the wall time while the loop
    enqueues there, which resolves; where the clock resolves, the thread's CPU time stays."""
    rng = np.random.default_rng(0)
    tick, calls, rows = 0.010, 4, []
    for process in range(3):
        for r in range(20):
            for method, true_ms in {"pmap_params": 3.0, "filter_pmap": 12.0, "packed_pmap": 0.2}.items():
                ticks = np.floor(calls * true_ms / 1e3 / tick + rng.random())
                wall = true_ms / 1e3 * (1 + 0.02 * rng.standard_normal())
                row = frame({method: lambda n, ms=true_ms: ms}, leaves=(392,)).iloc[0].to_dict()
                rows.append({**row, "repeat": r, "calls": calls, "process": process, "cpu_tick_s": tick,
                             "enqueue_cpu_s_per_call": ticks * tick / calls, "dispatch_s_per_call": wall})  # fmt: skip
    timings = pd.DataFrame(rows)
    assert per_leaf.host_column(timings) == "dispatch_s_per_call"
    assert "10 ms" in report.timing.host_measure(timings)  # the summary says which quantity, and why
    assert report.excess_at(timings, "filter_pmap")[0]["median"] == pytest.approx(9.0, rel=0.05)
    cases = {c["method"]: c for c in report.cases(timings)}
    assert cases["packed_pmap"]["host_cpu_ms"]["median"] == pytest.approx(0.2, rel=0.05)
    ratio = per_leaf.host_ratio(timings, "filter_pmap", {"step": "noop"})[0]
    assert ratio["median"] == pytest.approx(4.0, rel=0.05)
    fine = timings.assign(cpu_tick_s=1e-6)
    assert per_leaf.host_column(fine) == "enqueue_cpu_s_per_call"


def test_a_range_wider_than_three_times_its_median_is_not_resolved():
    assert reruns.quote({"median": 2.71, "lo": 2.17, "hi": 3.35}, "r.2f×") == "2.71× [2.17, 3.35]"
    assert reruns.quote({"median": 11.5, "lo": 7.3, "hi": 19.2}, "r.1f ms") == "11.5 ms [7.3, 19.2]"
    for wide in ({"median": 13.8, "lo": 0.2, "hi": 1116.2}, {"median": 0.62, "lo": 0.0, "hi": 121.1}):
        assert reruns.quote(wide, "r.1f×").startswith("not resolved (its processes disagree")
    assert reruns.resolved(1.0, 0.5, 3.5) and not reruns.resolved(1.0, 0.5, 3.6)
    assert reruns.quote({"median": float("nan"), "lo": 1, "hi": 2}, "r.1f") == "not measured"
    with pytest.raises(ValueError, match="spec"):
        reruns.quote({"median": 1, "lo": 1, "hi": 1}, ".2f")


def test_ranges_count_every_cell_and_call_a_wide_one_not_resolved():
    quiet = frame(PMAP)
    r = per_leaf.ranges(quiet, "filter_pmap", "pmap_params", "loop_it_per_s", 0.05)
    assert r["n"] == 3 and r["counts"]["slower"] == 3
    assert r["max"] < 1
    noisy = frame({"pmap_params": lambda n: 1.0, "cached_filter_pmap": lambda n: 1.0}, noise=0.3, seed=3)
    r = per_leaf.ranges(noisy, "cached_filter_pmap", "pmap_params", "loop_it_per_s", 0.05)
    assert r["counts"]["a tie"] == 0 and r["counts"]["not resolved"] >= 1


def _summary(quick=False):
    timings = pd.concat(
        [
            frame(PMAP),
            frame(
                {
                    "jit_params": lambda n: 0.2 + 0.01 * n,
                    "filter_jit": lambda n: 0.5 + 0.016 * n,
                    "cached_filter_jit": lambda n: 0.25 + 0.01 * n,
                    "filter_jit_recipe": lambda n: 0.4 + 0.012 * n,
                },
                family="jit",
            ),
        ],
        ignore_index=True,
    )
    acc_rows = []
    for r in range(5):
        for stage, ms in {
            "axis resolution": 1,
            "partition": 3,
            "ShapeDtypeStruct": 1,
            "cache lookup": 1,
            "inner pmap call (dispatch)": 8,
            "combine": 2,
            "wait for execution": 0,
            "free the outputs": 1,
        }.items():
            acc_rows.append(
                {"round": r, "call": "filter_pmap, staged", "stage": stage, "cpu_ms": ms, "wall_ms": ms}
            )
        acc_rows.append(
            {"round": r, "call": "filter_pmap", "stage": "whole call", "cpu_ms": 17.2, "wall_ms": 18}
        )
        acc_rows.append(
            {"round": r, "call": "jax.pmap on params", "stage": "whole call", "cpu_ms": 7.0, "wall_ms": 8}
        )
    acc = pd.DataFrame(acc_rows).assign(model="mlp_depth64", leaves=392)
    prof = pd.DataFrame(
        [
            {
                "function": "__getattribute__ (equinox/_module/_module.py:585)",
                "calls_per_step": 2228.0,
                "self_ms_per_step": 5.0,
                "cumulative_ms_per_step": 8.0,
            }
        ]
    )
    notes = pd.DataFrame(columns=["step", "model", "kind", "leaves", "donated", "family", "path", "why"])
    return report.headline(timings, notes, acc, prof, precision=0.05, quick=quick)


def test_the_accounting_adds_up_to_the_gap():
    s = _summary()
    acc = pd.DataFrame(s["accounting"]).set_index("part")
    assert acc.loc["inner jax.pmap call's excess", "cpu_ms"] == pytest.approx(8 + 0 + 1 - 7)
    assert acc.loc["gap", "cpu_ms"] == pytest.approx(10.2)
    assert acc.loc["unexplained", "cpu_ms"] == pytest.approx(10.2 - (1 + 5 + 2 + 2))
    assert s["accounting_adds_up"] == {"mlp_depth64": False}  # 0.2 ms every round: its range excludes 0


def test_the_summary_answers_in_five_bullets_and_folds_the_goals():
    s = _summary()
    text = report.render(s, SimpleNamespace(backend="cpu", device_count=8, device_kind="cpu"))
    visible = re.sub(r"<details>.*?</details>", "", text, flags=re.S)
    assert len([line for line in visible.splitlines() if line.startswith("- ")]) <= 5
    assert not re.search(r"\b(goals?|met|cells?|lent)\b", visible, re.I)  # reader text, not bookkeeping
    assert "adds, on MLPs 40 [40, 40]" in visible and "Benchmark goals" in text
    assert s["goals"]  # judged in a full run, shown folded


def test_the_summary_says_what_equinoxs_recipe_buys_and_what_the_fixes_add_on_top():
    s = _summary()
    at = {c["leaves"]: c["median"] for c in s["host_ratio"]["filter_pmap_recipe"]}
    assert at[392] == pytest.approx((1.0 + 0.07 * 392) / (0.5 + 0.05 * 392))  # host CPU / jax.pmap's
    on_top = s["ranges"]["cached_filter_pmap/filter_pmap_recipe"]["loop_it_per_s"]
    assert on_top["n"] == 3 and on_top["min"] == pytest.approx((1.0 + 0.07 * 392) / (0.6 + 0.05 * 392))
    assert s["ranges"]["cached_filter_jit/filter_jit_recipe"]["loop_it_per_s"]["min"] > 1
    text = report.render(s, SimpleNamespace(backend="cpu", device_count=8, device_kind="cpu"))
    assert f"`eqx.filter_pmap` on flat leaves ÷ `jax.pmap` on params {at[392]:.2f}×" in text
    fix = s["ranges"]["cached_filter_pmap/pmap_params"]["loop_it_per_s"]
    assert f"`jaxperf.cached_filter_pmap` {fix['min']:.2f}–{fix['max']:.2f}×" in text


def test_a_smoke_run_judges_no_goal():
    s = _summary(quick=True)
    assert s["goals"] == {}
    text = report.render(s, SimpleNamespace(backend="cpu", device_count=8, device_kind="cpu"))
    assert "Smoke run" in text


def test_a_line_per_model_family_and_the_host_ratio_per_cell():
    """Issue 38 item 3, issue 63: each family with three sizes or more gets its own line (two
    points make any line); the host CPU ratio is the per-round ratio to the family's baseline in
    each cell."""
    mlp = frame(PMAP)
    other = frame(PMAP, leaves=(20, 80, 160)).assign(kind="transformer")
    other["model"] = other["model"].str.replace("mlp", "transformer")
    both = pd.concat([mlp, other], ignore_index=True)
    lines = per_leaf.by_kind(per_leaf.excess(both, "filter_pmap"))
    assert set(lines) == {"mlp", "transformer"}
    two = per_leaf.by_kind(per_leaf.excess(pd.concat([mlp, other[other["leaves"] < 100]]), "filter_pmap"))
    assert set(two) == {"mlp"}  # two sizes are no line
    ratios = per_leaf.host_ratio(mlp, "filter_pmap", {"step": "noop"})
    assert ratios and all(r["lo"] <= r["median"] <= r["hi"] for r in ratios)
    assert all(r["median"] > 1 for r in ratios)  # filter_pmap costs more than the baseline here


def test_the_accounting_shares_add_up_even_when_a_round_stalls():
    """Issue 39: the printed shares must add up. Shares are means over one set of rounds (those
    whose gap is typical), so one stalled round neither breaks the sum nor dominates it."""
    from jaxperf_study.dispatch import accounting

    rows = []
    for r in range(8):
        stall = 40.0 if r == 0 else 0.0  # one round where the whole call stalled
        staged = {
            "axis resolution": 1,
            "partition": 3 + r % 2,
            "ShapeDtypeStruct": 1,
            "cache lookup": 1,
            "inner pmap call (dispatch)": 8,
            "combine": 2,
            "wait for execution": 0,
            "free the outputs": 1,
        }
        for stage, ms in staged.items():
            rows.append(
                {"round": r, "call": "filter_pmap, staged", "stage": stage, "cpu_ms": ms, "wall_ms": ms}
            )
        rows.append(
            {
                "round": r,
                "call": "filter_pmap",
                "stage": "whole call",
                "cpu_ms": 17.2 + r % 2 + stall,
                "wall_ms": 18,
            }
        )
        rows.append(
            {"round": r, "call": "jax.pmap on params", "stage": "whole call", "cpu_ms": 7.0, "wall_ms": 8}
        )
    acc = accounting.table(pd.DataFrame(rows).assign(model="m", leaves=392)).set_index("part")
    shares = acc["share_of_gap"]
    assert shares[list(accounting.PARTS)].sum() + shares["unexplained"] == pytest.approx(1.0)
    assert shares["unexplained"] < 0.1  # the stalled round is not in the typical set


def test_each_model_family_gets_its_own_line():
    """Issue 38 item 3: the seed's model is a transformer; its line (here 100 µs per leaf) is its
    own, beside the MLPs' (40 µs per leaf)."""
    transformer = {
        "pmap_params": lambda n: 0.5 + 0.05 * n,
        "filter_pmap": lambda n: 0.5 + 0.05 * n + 0.100 * n,
    }
    mlp = frame(PMAP)
    other = frame(transformer, leaves=(44, 152, 440)).assign(kind="transformer")
    other["model"] = "transformer_" + other["leaves"].astype(str)
    notes = pd.DataFrame(columns=["step", "model", "kind", "leaves", "donated", "family", "path", "why"])
    acc = pd.DataFrame(
        [
            {"round": r, "call": call, "stage": stage, "cpu_ms": 1.0, "wall_ms": 1.0}
            for r in range(3)
            for call, stage in [
                *[("filter_pmap, staged", st) for st in ("axis resolution", "partition", "ShapeDtypeStruct",
                  "cache lookup", "inner pmap call (dispatch)", "combine", "wait for execution", "free the outputs")],
                ("filter_pmap", "whole call"),
                ("jax.pmap on params", "whole call"),
            ]
        ]
    ).assign(model="mlp_depth64", leaves=392)  # fmt: skip
    prof = pd.DataFrame([{"function": "f (x.py:1)", "calls_per_step": 1.0, "self_ms_per_step": 1.0,
                          "cumulative_ms_per_step": 1.0}])  # fmt: skip
    s = report.headline(
        pd.concat([mlp, other], ignore_index=True), notes, acc, prof, precision=0.05, quick=True
    )
    lines = s["per_leaf_by_kind"]["filter_pmap"]
    assert lines["transformer"]["b_us_per_leaf"] == pytest.approx(100.0)
    assert lines["mlp"]["b_us_per_leaf"] == pytest.approx(40.0)


def test_a_number_measured_in_three_processes_is_their_median_with_its_range():
    """Issue 39 item 1: each quoted number is the median of per-process medians with the range a
    rerun's median is expected in (reruns.rerun_range);
    processes on both sides of 1 leave a case not resolved, however tight each one is."""
    runs = []
    for process, fix_ms in enumerate((0.9, 0.92, 1.1)):  # two processes faster, one slower
        costs = {**PMAP, "cached_filter_pmap": lambda n, ms=fix_ms: (0.5 + 0.05 * n) * ms}
        runs.append(frame(costs).assign(process=process))
    timings = pd.concat(runs, ignore_index=True)
    r = per_leaf.ranges(timings, "cached_filter_pmap", "pmap_params", "loop_it_per_s", 0.05)
    cell = r["cells"].iloc[0]
    assert (cell["lo"], cell["hi"]) == pytest.approx(reruns.rerun_range([1 / 0.9, 1 / 0.92, 1 / 1.1]))
    assert cell["median"] == pytest.approx(1 / 0.92) and r["counts"]["not resolved"] == 3
    ratio = per_leaf.host_ratio(timings, "filter_pmap", {"step": "noop"})
    assert all(c["n"] == 3 and c["resolved"] for c in ratio)
    line = per_leaf.fit_per_process(per_leaf.excess(per_leaf.pooled(timings), "filter_pmap"))
    assert line["b_us_per_leaf"] == pytest.approx(40.0) and line["processes"] == 3


@pytest.mark.parametrize("shares", [[0.335, 0.335, 0.33], [0.105, 0.205, 0.705, -0.015], [1.0]])
def test_printed_shares_sum_to_one_hundred(shares):
    from jaxperf_study.dispatch.accounting import whole_percents

    printed = whole_percents(shares)
    assert sum(printed) == 100
    assert all(abs(p - 100 * s) < 1 for p, s in zip(printed, shares))


def test_the_packed_goal_is_judged_on_the_largest_no_op_case_with_where_its_time_goes():
    costs = {"pmap_params": lambda n: 0.5 + 0.05 * n, "packed_pmap": lambda n: 2.0}  # 392 leaves: 20.1 / 2.0
    timings = frame(costs)
    summary = {
        "ranges": {"packed_pmap/pmap_params": report.ranges_of(timings, "packed_pmap", "pmap_params", 0.05)}
    }
    (name, goal), *_ = report.goals(summary, quick=False, timings=timings).items()
    assert name.endswith("(neither donated), no-op, 392 leaves") and goal["verdict"] == "met"
    assert goal["ratio"]["median"] == pytest.approx(20.1 / 2.0)
    assert goal["per_call_ms"]["packed_pmap"] == {
        "host_cpu": pytest.approx(2.0),
        "in_the_loop": pytest.approx(2.0),
    }
    assert (
        "packed_pmap: 2.00 ms of host CPU per blocked call, 2.00 ms per call in the loop"
        in report._where_time_goes(goal)
    )


def test_a_run_that_reached_a_case_in_fewer_processes_drops_only_its_own_rows():
    """Two merged device runs: the second reached the 392-leaf case in 2 of its 3 processes. Its
    rows of that case are not quoted; the first run's are, and the note names the second run."""
    cost = {"filter_pmap": lambda n: 1 + 0.03 * n, "pmap_params": lambda n: 1.0}
    runs = []
    for run in (1, 2):
        for process in range(3):
            f = frame(cost).assign(run=run, process=3 * (run - 1) + process)
            if run == 2 and process == 2:
                f = f[f["leaves"] != 392]
            runs.append(f)
    timings = pd.concat(runs, ignore_index=True)
    notes = pd.DataFrame(columns=[*per_leaf.KEYS, "path", "why", "process", "run"])
    kept, notes = report.complete(timings, notes)
    at_392 = kept[kept["leaves"] == 392]
    assert sorted(at_392["run"].unique()) == [1]
    assert sorted(kept[kept["leaves"] == 14]["run"].unique()) == [1, 2]
    assert notes[["leaves", "run"]].values.tolist() == [[392, 2]]
    assert "that run's rows not quoted" in notes["why"].iloc[0]


def test_the_summary_says_which_loop_its_records_timed():
    """Issue 63: records made before the seed's loop (rounds of ``calls``, the TPU's kept ones) say
    so; records of the seed's loop say that, with the fewest and most calls of any path's loop."""
    info = SimpleNamespace(backend="cpu", device_count=8, device_kind="cpu")
    notes = pd.DataFrame(columns=["step", "model", "kind", "leaves", "donated", "family", "path", "why"])
    rounds = frame(PMAP).assign(calls=4)

    def summary(timings):
        return report.headline(timings, notes, pd.DataFrame(), pd.DataFrame(), precision=0.05, quick=False)

    short = summary(rounds)
    assert (short["seed_loop"], short["loop_calls"]) == (False, [4, 4])
    assert "in short rounds, before the seed's loop" in report.render(short, info)
    seeded = summary(rounds.assign(loop_calls=np.where(rounds["method"] == "filter_pmap", 60, 3000)))
    assert (seeded["seed_loop"], seeded["loop_calls"]) == (True, [60, 3000])
    text = report.render(seeded, info)
    assert "it/s in the seed's loop" in text and "60 to 3,000 calls a loop" in text
