"""The harness on a fake clock: statistics, interleaving, warm-up not counted."""

import collections

import numpy as np
import pandas as pd
import pytest

from jaxperf import timing
from jaxperf_study import reruns


class FakeClock:
    """Advances only when a fake variant runs: each call costs its own known time."""

    def __init__(self):
        self.now = 0.0
        self.cpu_now = 0.0

    def wall(self):
        return self.now

    def cpu(self):
        return self.cpu_now


def make_variants(clock, costs, log):
    def variant(name):
        def call():
            log.append(name)
            cost = costs[name](len([n for n in log if n == name]))
            clock.now += cost
            clock.cpu_now += cost / 2
            return name

        return call

    return {name: variant(name) for name in costs}


def test_warmup_calls_are_not_counted():
    clock, log = FakeClock(), []
    # The first 3 calls of "a" are 1000x slower (compilation); then 1 ms each.
    costs = {"a": lambda i: 1.0 if i <= 3 else 0.001}
    cfg = timing.TimingConfig(
        warmup=3, repeats=4, number=5, dispatch_only=False, clock=timing.Clock(clock.wall, clock.cpu)
    )
    df = timing.compare(make_variants(clock, costs, log), cfg, sync=lambda x: x)
    assert len(log) == 3 + 4 * 5
    assert np.allclose(df["wall_s_per_call"], 0.001)
    assert np.allclose(df["cpu_s_per_call"], 0.0005)
    assert np.allclose(df["it_per_s"], 1000.0)


@pytest.mark.parametrize("k", [2, 3, 4, 5])
def test_interleaving_puts_each_variant_after_each_other_equally_often(k):
    clock, log = FakeClock(), []
    costs = {name: (lambda i, c=0.001 * (n + 1): c) for n, name in enumerate("abcde"[:k])}
    rounds = 2 * k
    cfg = timing.TimingConfig(
        warmup=0, repeats=rounds, number=1, dispatch_only=False, clock=timing.Clock(clock.wall, clock.cpu)
    )
    df = timing.compare(make_variants(clock, costs, log), cfg, sync=lambda x: x)
    rows = [log[r * k : (r + 1) * k] for r in range(rounds)]
    assert all(sorted(row) == sorted(costs) for row in rows)
    after = collections.Counter(pair for row in rows for pair in zip(row, row[1:]))
    assert len(after) == k * (k - 1) and set(after.values()) == {2}  # a rotation: k of them
    places = collections.Counter((name, i) for row in rows for i, name in enumerate(row))
    assert set(places.values()) == {2}
    assert list(df["variant"]) == log
    assert df.groupby("variant")["wall_s_per_call"].median().to_dict() == pytest.approx(
        {name: 0.001 * (n + 1) for n, name in enumerate(costs)}
    )


def test_dispatch_only_excludes_the_final_block():
    clock, log = FakeClock(), []
    costs = {"a": lambda i: 0.001}
    blocked = []

    def slow_sync(x):  # blocking costs 1 s: counted per call end to end, never in dispatch-only
        blocked.append(x)
        clock.now += 1.0
        return x

    cfg = timing.TimingConfig(warmup=0, repeats=2, number=4, clock=timing.Clock(clock.wall, clock.cpu))
    df = timing.compare(make_variants(clock, costs, log), cfg, sync=slow_sync)
    assert np.allclose(df["dispatch_s_per_call"], 0.001)
    assert np.allclose(df["wall_s_per_call"], 1.001)
    assert np.allclose(df["loop_it_per_s"], 1 / (0.001 + 1.0 / 4))  # one block shared by 4 calls
    assert len(blocked) == 2 * (4 + 1)  # per round: 4 blocked calls, then one block after the loop
    assert (df["loop_calls"] == 4).all()  # without loop_seconds, a loop of `number` calls


def counting_variants(clock, costs):
    """Variants that cost ``costs[name]`` seconds a call and count the outputs still alive."""
    alive = collections.Counter()

    class Out:
        def __init__(self, name):
            self.name = name
            alive[name] += 1

        def __del__(self):
            alive[self.name] -= 1

    def variant(name):
        def call():
            clock.now += costs[name]
            return Out(name)

        return call

    return {name: variant(name) for name in costs}, alive


def test_the_seed_loop_runs_each_variant_long_enough_and_keeps_one_output():
    clock = FakeClock()
    costs = {"slow": 0.04, "fast": 0.0001}  # 25 and 10,000 it/s
    variants, alive = counting_variants(clock, costs)
    most_alive = collections.Counter()

    def sync(out):
        for name, n in alive.items():
            most_alive[name] = max(most_alive[name], n)
        return out

    cfg = timing.TimingConfig(
        warmup=0,
        repeats=2,
        number=3,
        loop_calls=50,
        loop_seconds=1.0,
        clock=timing.Clock(clock.wall, clock.cpu),
    )
    df = timing.compare(variants, cfg, sync=sync)
    calls = df.groupby("variant")["loop_calls"].agg(["min", "max"])
    assert calls.loc["slow", "min"] == calls.loc["slow", "max"] == 50  # 50 calls: 2 s, past 1 s
    assert calls.loc["fast", "min"] == calls.loc["fast", "max"]  # fixed once, the same every round
    assert 10_000 <= calls.loc["fast", "min"] <= 12_000  # at least 1 s: 10% over
    seconds = df["loop_calls"] / df["loop_it_per_s"]
    assert (seconds >= 1.0).all()
    assert most_alive["fast"] <= 2  # the loop holds the last output only, not thousands
    assert (df["calls"] == 3).all()  # the blocked calls keep their own count


@pytest.mark.parametrize(
    ("field", "value"), [("loop_seconds", -1.0), ("loop_seconds", True), ("loop_calls", 0)]
)
def test_a_bad_seed_loop_is_named(field, value):
    with pytest.raises(ValueError, match=f"{field}="):
        timing.TimingConfig(**{field: value})


def test_iqr_stats():
    s = timing.iqr_stats([1, 2, 3, 4, 100])
    assert s == {"median": 3.0, "q25": 2.0, "q75": 4.0, "n": 5}


def test_pair_ratios_match_repeats():
    df = pd.DataFrame(
        {
            "variant": ["base", "fast", "base", "fast"],
            "repeat": [0, 0, 1, 1],
            "it_per_s": [10.0, 30.0, 20.0, 40.0],
        }
    )
    r = timing.pair_ratios(df, "base")
    fast = r[r["variant"] == "fast"].sort_values("repeat")["ratio"].tolist()
    assert fast == [3.0, 2.0]  # paired per repeat, not median / median (=2.33)


@pytest.mark.parametrize("field,value", [("repeats", 0), ("number", 0), ("warmup", -1), ("repeats", 2.5)])
def test_bad_config_is_a_clear_error(field, value):
    with pytest.raises(ValueError, match=field):
        timing.TimingConfig(**{field: value})


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="variants"):
        timing.compare({}, timing.TimingConfig())
    with pytest.raises(ValueError, match="baseline='nope'"):
        timing.pair_ratios(pd.DataFrame({"variant": ["a"], "repeat": [0], "it_per_s": [1.0]}), "nope")


# ------------------------------------------------------------------ precision-driven repeats


def noisy_costs(spread_for):
    """Variant costs that alternate around 1 ms by +-spread (per call number i)."""

    def cost(spread):
        return lambda i: 0.001 * (1 + spread * (-1) ** i)

    return {name: cost(spread) for name, spread in spread_for.items()}


def precision_config(clock, **kwargs):
    base = dict(warmup=0, repeats=3, number=1, dispatch_only=False, clock=timing.Clock(clock.wall, clock.cpu))
    return timing.TimingConfig(**{**base, **kwargs})


def test_fixed_repeats_say_so():
    clock = FakeClock()
    df = timing.compare(
        make_variants(clock, noisy_costs({"a": 0, "b": 0}), []), precision_config(clock), sync=lambda x: x
    )
    assert df["repeat"].max() == 2 and set(df["stopped_by"]) == {"fixed repeats"}
    assert df["rel_iqr"].isna().all()  # nothing watched


def test_quiet_ratios_stop_at_the_minimum_repeats():
    clock = FakeClock()
    cfg = precision_config(clock, precision=0.05)
    df = timing.compare(make_variants(clock, noisy_costs({"a": 0, "b": 0}), []), cfg, sync=lambda x: x)
    assert df["repeat"].max() == 2 and set(df["stopped_by"]) == {"precision"}
    assert df["rel_iqr"].iloc[0] == pytest.approx(0.0)


def test_a_noisy_ratio_runs_until_the_time_cap_and_says_how_wide_it_stayed():
    clock = FakeClock()
    # b alternates 0.5 ms / 1.5 ms per round: its ratio to a never narrows to +-5%
    cfg = precision_config(clock, precision=0.05, max_seconds=0.1)
    df = timing.compare(make_variants(clock, noisy_costs({"a": 0, "b": 0.5}), []), cfg, sync=lambda x: x)
    assert set(df["stopped_by"]) == {"time cap"}
    assert df["repeat"].max() + 1 > 3  # went past the minimum
    assert clock.now >= 0.1 and df["rel_iqr"].iloc[0] > 0.05


def test_the_repeat_cap_stops_a_comparison_that_never_narrows():
    clock = FakeClock()
    cfg = precision_config(clock, precision=0.05, max_repeats=6)
    df = timing.compare(make_variants(clock, noisy_costs({"a": 0, "b": 0.5}), []), cfg, sync=lambda x: x)
    assert set(df["stopped_by"]) == {"repeat cap"} and df["repeat"].max() == 5


def test_only_the_watched_ratios_decide():
    clock = FakeClock()
    cfg = precision_config(clock, precision=0.05, max_repeats=8)
    costs = noisy_costs({"a": 0, "b": 0, "c": 0.5})
    quiet = timing.compare(
        make_variants(clock, costs, []), cfg, sync=lambda x: x, watch=[("b", "a", "it_per_s")]
    )
    assert set(quiet["stopped_by"]) == {"precision"}
    noisy = timing.compare(
        make_variants(clock, costs, []), cfg, sync=lambda x: x, watch=[("c", "a", "it_per_s")]
    )
    assert set(noisy["stopped_by"]) == {"repeat cap"}


@pytest.mark.parametrize(
    "watch,match",
    [
        ([("b", "zz", "it_per_s")], "watch variant='zz'"),
        ([("b", "a", "loop_it_per_s")], "watch value='loop_it_per_s'"),  # not timed: dispatch_only=False
        (["b"], "watch='b'"),
    ],
)
def test_a_bad_watch_is_a_clear_error(watch, match):
    clock = FakeClock()
    with pytest.raises(ValueError, match=match):
        timing.compare(
            make_variants(clock, noisy_costs({"a": 0, "b": 0}), []), precision_config(clock), watch=watch
        )


@pytest.mark.parametrize(
    "field,value", [("precision", 0), ("precision", 1.5), ("precision", True), ("max_seconds", 0)]
)
def test_bad_precision_settings_are_clear_errors(field, value):
    with pytest.raises(ValueError, match=field):
        timing.TimingConfig(**{field: value})


def test_relative_iqr():
    assert timing.relative_iqr([0.9, 1.0, 1.0, 1.1]) == pytest.approx(0.025)  # q25 0.975, q75 1.025
    assert timing.relative_iqr([0, 0, 0]) == float("inf")


def test_spread_states_repeats_in_processes_by_the_range_a_rerun_is_expected_in():
    df = pd.DataFrame({"g": ["a"] * 6, "v": [1.0, 3.0, 10.0, 10.0, 4.0, 6.0], "process": [0, 0, 1, 1, 2, 2]})
    (row,) = reruns.spread(df, "v", ["g"]).to_dict(orient="records")
    # per-process medians 2, 10, 5: on the log scale mean 1.535, sd 0.807, t(2) 4.303, sqrt(2/3)
    half = 4.302653 * np.log([2.0, 10.0, 5.0]).std(ddof=1) * np.sqrt(2 / 3)
    centre = np.log([2.0, 10.0, 5.0]).mean()
    assert row["median"] == 5.0 and row["n"] == 3 and row["over"] == "processes"
    assert row["lo"] == pytest.approx(np.exp(centre - half), rel=1e-5) and row["lo"] < 2.0
    assert row["hi"] == pytest.approx(np.exp(centre + half), rel=1e-5) and row["hi"] > 10.0
    plain = reruns.spread(df.drop(columns="process"), "v")  # one process: median and IQR
    assert plain.iloc[0][["median", "lo", "hi", "n", "over"]].tolist() == [5.0, 3.25, 9.0, 6, "quartiles"]
    with pytest.raises(ValueError, match="by='h'"):
        reruns.spread(df, "v", ["h"])
    with pytest.raises(ValueError, match="process"):
        reruns.spread_of([1.0, 2.0], process=[0])


def test_rerun_range_holds_a_rerun_about_95_percent_where_min_max_holds_60(monkeypatch):
    monkeypatch.setattr(reruns, "_INFLATION", [1.0])  # processes alike: no calibration
    rng = np.random.default_rng(0)
    old, new = np.exp(rng.normal(0, 0.1, (4000, 3))), np.exp(rng.normal(0, 0.1, (4000, 3)))
    ranges = np.array([reruns.rerun_range(row) for row in old])
    rerun = np.median(new, axis=1)
    held = np.mean((ranges[:, 0] <= rerun) & (rerun <= ranges[:, 1]))
    by_min_max = np.mean((old.min(1) <= rerun) & (rerun <= old.max(1)))
    assert 0.93 < held < 0.99 and 0.55 < by_min_max < 0.65


def test_rerun_range_edges(monkeypatch):
    monkeypatch.setattr(reruns, "_INFLATION", [1.0])
    assert reruns.rerun_range([3.0]) == (3.0, 3.0)  # one process: no spread known
    lo, hi = reruns.rerun_range([-1.0, 0.0, 1.0])  # not all positive: the linear scale
    assert lo == pytest.approx(-4.302653 * np.sqrt(2 / 3), rel=1e-5) and hi == pytest.approx(-lo)
    assert reruns.rerun_range([2.0, 2.0, 2.0]) == (2.0, 2.0)


def test_the_rerun_inflation_widens_the_interval_and_is_checked(monkeypatch):
    monkeypatch.setattr(reruns, "_INFLATION", [1.0])
    x = [1.0, 1.1, 1.2]
    lo, hi = reruns.rerun_range(x)
    reruns.set_rerun_inflation(2.0)
    assert reruns.rerun_inflation() == 2.0
    lo2, hi2 = reruns.rerun_range(x)
    centre = np.exp(np.mean(np.log(x)))
    assert np.log(hi2 / centre) == pytest.approx(2 * np.log(hi / centre))
    assert np.log(centre / lo2) == pytest.approx(2 * np.log(centre / lo))
    for bad in (0.5, "2", True, float("nan")):
        with pytest.raises(ValueError, match="factor"):
            reruns.set_rerun_inflation(bad)
