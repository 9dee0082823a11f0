"""The runs-ahead verdict (:mod:`jaxperf.runs_ahead`, used by notebooks 01 and 11 and by the
diagnosis) on synthetic timings: the rule, its refusals, and its steadiness under drift that
hits both loops of a pair. No test asserts a timing."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from jaxperf import runs_ahead as verdict

# ---------------------------------------------------------------- the verdict rule


@pytest.mark.parametrize(
    "ratios, expected",
    [
        ([0.01, 0.02, 0.05, 0.3], verdict.RUNS_AHEAD),
        ([0.9, 1.0, 1.1, 0.4], verdict.WAITS),  # one low pair does not move the lower quartile past 0.5
        ([0.2, 0.4, 0.6, 0.9], verdict.UNCLEAR),
    ],
)
def test_the_rule_reads_the_quartiles_against_one_boundary(ratios, expected):
    label, margin = verdict.judge(ratios, reference_q75=0.05)
    assert label == expected
    q25, _, q75 = verdict.quartiles(ratios)
    if expected == verdict.RUNS_AHEAD:
        assert margin == pytest.approx(verdict.BOUNDARY - q75)
    elif expected == verdict.WAITS:
        assert margin == pytest.approx(q25 - verdict.BOUNDARY)
    else:
        assert np.isnan(margin)


def test_a_step_too_light_for_the_reference_is_not_judged():
    assert verdict.judge([1.0, 1.0, 1.0], reference_q75=0.3)[0] == verdict.NOT_JUDGED
    assert verdict.judge([1.0, 1.0, 1.0], reference_q75=float("nan"))[0] == verdict.NOT_JUDGED
    assert verdict.judge([1.0, 1.0, 1.0], reference_q75=0.2)[0] == verdict.WAITS


def test_the_rule_rejects_what_is_not_a_ratio_of_durations():
    with pytest.raises(ValueError, match="ratios="):
        verdict.judge([])
    with pytest.raises(ValueError, match="ratios="):
        verdict.judge([0.1, -0.2])
    with pytest.raises(ValueError, match="df="):
        verdict.verdicts(pd.DataFrame({"wall_s_per_call": [1.0]}), "jax.jit")


def _timings(
    ratios: dict[str, list[float]], wall: float = 0.02, drift: list[float] | None = None
) -> pd.DataFrame:
    rows = []
    for name, values in ratios.items():
        for repeat, r in enumerate(values):
            scale = drift[repeat] if drift else 1.0  # a shared machine slows both loops of a pair alike
            rows.append(
                dict(
                    variant=name,
                    repeat=repeat,
                    wall_s_per_call=wall * scale,
                    dispatch_s_per_call=r * wall * scale,
                )
            )
    return pd.DataFrame(rows)


def test_verdicts_per_variant_and_the_same_under_drift_that_hits_both_loops_of_a_pair():
    ratios = {"jax.jit": [0.01, 0.02, 0.01, 0.03], "eqx.filter_jit": [1.0, 0.97, 1.02, 0.99]}
    calm = verdict.verdicts(_timings(ratios), reference="jax.jit")
    noisy = verdict.verdicts(_timings(ratios, drift=[1.0, 1.4, 0.7, 1.9]), reference="jax.jit")
    for table in (calm, noisy):
        got = dict(zip(table["variant"], table["verdict"]))
        assert got == {"jax.jit": verdict.RUNS_AHEAD, "eqx.filter_jit": verdict.WAITS}
    assert calm["ratio_median"].round(6).tolist() == noisy["ratio_median"].round(6).tolist()
    alone = verdict.verdicts(_timings({"eqx.filter_jit": [1.0, 1.0]}), reference="jax.jit")
    assert alone["verdict"].tolist() == [verdict.NOT_JUDGED]  # no reference in its group
