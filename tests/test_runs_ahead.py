"""The runs-ahead verdict (:mod:`jaxperf.runs_ahead`, used by notebooks 01 and 11 and by the
diagnosis) on injected timings: the rule, its refusals, its steadiness under drift that hits both
loops of a pair, and the timings of a TPU v5e (2b842c2) it has to get right. No test asserts a
timing."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from jaxperf import runs_ahead as verdict

# ---------------------------------------------------------------- the verdict rule


@pytest.mark.parametrize(
    "ratios, after, expected",
    [
        ([0.01, 0.02, 0.05, 0.3], 1.0, verdict.RUNS_AHEAD),
        ([0.9, 1.0, 1.1, 0.4], 0.1, verdict.WAITS),  # one low pair does not move the lower quartile past 0.5
        ([0.2, 0.4, 0.6, 0.9], 0.1, verdict.UNCLEAR),
        # enqueue most of the call, yet the device's work not done on return: host-bound, not judged
        ([0.8, 0.85, 0.9, 0.8], 0.6, verdict.NOT_JUDGED),
    ],
)
def test_the_rule_reads_the_quartiles_and_the_time_after_enqueuing(ratios, after, expected):
    assert verdict.judge(ratios, reference_q75=0.3, after=after) == expected


def test_the_reference_must_show_more_device_than_host_time():
    """Judged where the reference (runs ahead) enqueues in under half its blocked time in three
    rounds of four: 0.45 is judged (the rule before needed below 0.25), 0.5 and NaN are not."""
    assert verdict.judge([1.0, 1.0, 1.0], reference_q75=0.45) == verdict.WAITS
    assert verdict.judge([1.0, 1.0, 1.0], reference_q75=0.5) == verdict.NOT_JUDGED
    assert verdict.judge([1.0, 1.0, 1.0], reference_q75=float("nan")) == verdict.NOT_JUDGED


def test_the_rule_rejects_what_is_not_a_ratio_of_durations():
    with pytest.raises(ValueError, match="ratios="):
        verdict.judge([])
    with pytest.raises(ValueError, match="ratios="):
        verdict.judge([0.1, -0.2])
    with pytest.raises(ValueError, match="df="):
        verdict.verdicts(pd.DataFrame({"wall_s_per_call": [1.0]}), "jax.jit")


def _rounds(
    paths: dict[str, tuple[float, float]], rounds: int = 12, drift: list[float] | None = None, seed=0
):
    """Rounds of ``{path: (host ms, device ms)}``, timed as :func:`jaxperf.timing.compare` times
    them: a path with device ms runs ahead (enqueues in its host time, blocks in host + device +
    collecting), one with a negative device ms waits for it (enqueues in host + device); 5% noise,
    and ``drift`` slowing every path of a round alike."""
    rng = np.random.default_rng(seed)
    rows = []
    for repeat in range(rounds):
        scale = drift[repeat % len(drift)] if drift else 1.0
        for name, (host, device) in paths.items():
            waits, device, collect = device < 0, abs(device), 0.05
            noise = rng.normal(1.0, 0.05, 2)
            blocked = (host + device + collect) * noise[0] * scale
            enqueue = (host + device if waits else host) * noise[1] * scale
            rows.append(
                dict(
                    variant=name,
                    repeat=repeat,
                    wall_s_per_call=1e-3 * blocked,
                    dispatch_s_per_call=1e-3 * enqueue,
                )
            )
    return pd.DataFrame(rows)


def _got(table: pd.DataFrame) -> dict[str, str]:
    return dict(zip(table["variant"], table["verdict"]))


def test_a_device_bound_step_on_a_tpu_is_judged_and_a_path_that_waits_told_from_one_that_runs_ahead():
    """A wide train step as on a TPU v5e: 6 ms of device time, under 1 ms of host time on every path
    but Equinox's. eqx.filter_jit waits (since Equinox 0.11.8 each call blocks), jax.jit does not."""
    device = 6.0
    steps = {
        "jax.jit": (0.5, device),
        "eqx.filter_jit": (1.2, -device),
        "jaxperf.cached_filter_jit": (0.6, device),
    }
    got = _got(verdict.verdicts(_rounds(steps), reference="jax.jit"))
    assert got == {
        "jax.jit": verdict.RUNS_AHEAD,
        "eqx.filter_jit": verdict.WAITS,
        "jaxperf.cached_filter_jit": verdict.RUNS_AHEAD,
    }
    # a step whose device time only just exceeds its host time (the rule before: not judged)
    close = {"jax.jit": (0.8, 1.2), "eqx.filter_jit": (1.0, -1.2)}
    table = verdict.verdicts(_rounds(close), reference="jax.jit")
    assert 0.25 < table["reference_ratio_q75"].iloc[0] < 0.5
    assert _got(table) == {"jax.jit": verdict.RUNS_AHEAD, "eqx.filter_jit": verdict.WAITS}


def test_a_host_bound_step_is_not_judged():
    """More host than device time on the reference: any path's enqueue fills most of its call."""
    steps = {"jax.jit": (2.0, 0.3), "eqx.filter_jit": (5.0, -0.3), "eqx.filter_pmap": (5.0, 0.3)}
    table = verdict.verdicts(_rounds(steps), reference="jax.jit")
    assert set(table["verdict"]) == {verdict.NOT_JUDGED} and (table["reference_ratio_q75"] > 0.5).all()


def test_a_path_with_more_host_than_device_time_is_not_called_waiting():
    """eqx.filter_pmap at 104 leaves on a TPU (4.7 ms of host time, a 2.1 ms step): its enqueue is
    most of its call though it runs ahead; its calls return before the device is done."""
    steps = {"jax.pmap": (1.1, 2.1), "eqx.filter_pmap": (4.7, 2.1), "eqx.filter_jit": (1.0, -2.1)}
    got = _got(verdict.verdicts(_rounds(steps), reference="jax.pmap"))
    assert got == {
        "jax.pmap": verdict.RUNS_AHEAD,
        "eqx.filter_pmap": verdict.NOT_JUDGED,
        "eqx.filter_jit": verdict.WAITS,
    }


def test_verdicts_per_variant_and_the_same_under_drift_that_hits_both_loops_of_a_pair():
    steps = {"jax.jit": (0.3, 10.0), "eqx.filter_jit": (0.5, -10.0)}
    calm = verdict.verdicts(_rounds(steps), reference="jax.jit")
    noisy = verdict.verdicts(_rounds(steps, drift=[1.0, 1.4, 0.7, 1.9]), reference="jax.jit")
    for table in (calm, noisy):
        assert _got(table) == {"jax.jit": verdict.RUNS_AHEAD, "eqx.filter_jit": verdict.WAITS}
    assert calm["ratio_median"].round(6).tolist() == noisy["ratio_median"].round(6).tolist()
    alone = verdict.verdicts(_rounds({"eqx.filter_jit": (0.5, -10.0)}), reference="jax.jit")
    assert alone["verdict"].tolist() == [verdict.NOT_JUDGED]  # no reference in its group


# ------------------------------------------------ what a TPU v5e measured (2b842c2, notebook 01)

#: medians per path on the train step of mlp_depth16_x128, three processes pooled: enqueue and
#: blocked ms per call, and the quartiles of their ratio (results of /work/shared/tpu-runs/2b842c2)
TPU = {
    "jit_params": (0.969, 3.179, 0.299, 0.325),
    "cached_filter_jit": (0.885, 3.026, 0.288, 0.310),
    "packed_jit": (0.165, 1.984, 0.079, 0.087),
    "filter_jit": (3.111, 3.896, 0.782, 0.814),
    "filter_jit_recipe": (2.463, 3.210, 0.751, 0.788),
    "filter_pmap": (4.666, 5.932, 0.769, 0.808),
}


def test_the_tpu_s_timings_get_every_verdict_right():
    """Rounds with the TPU's medians and ratio quartiles: the rule before judged none of them."""
    rows = []
    for name, (enqueue, blocked, q25, q75) in TPU.items():
        for repeat, ratio in enumerate(np.linspace(q25 - (q75 - q25) / 2, q75 + (q75 - q25) / 2, 5)):
            after = blocked - enqueue
            wall = after / (1 - ratio)  # this round's ratio, with the path's time after enqueuing
            rows.append(
                dict(
                    method=name,
                    repeat=repeat,
                    wall_s_per_call=1e-3 * wall,
                    dispatch_s_per_call=1e-3 * ratio * wall,
                )
            )
    got = dict(verdict.verdicts(pd.DataFrame(rows), "jit_params", key="method")[["method", "verdict"]].values)
    waiting = {"filter_jit", "filter_jit_recipe"}  # eqx.filter_jit blocks each call since Equinox 0.11.8
    assert {k for k, v in got.items() if v == verdict.WAITS} == waiting
    assert got["filter_pmap"] == verdict.NOT_JUDGED  # runs ahead, with more host than device time
    assert {k for k, v in got.items() if v == verdict.RUNS_AHEAD} == set(TPU) - waiting - {"filter_pmap"}
