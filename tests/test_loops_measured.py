"""``loops`` measured-first on a device, tried on this CPU with the device's ms per call injected:
the verdict comes from the ms where the loop shows above the per-call floor, the measurement is sized
(a longer scan, then a larger T) until it does, and where it cannot the report says it is below what
the device resolves and prints no verdict, static or measured. The ms below are the TPU v5e's at
2b842c2 (results/tpu/cli/seed.json's run): the seed kernel's fori_loop 10.66 -> 40.67 ms from T=1024
to 4096, the Python loop 2.17 -> 2.28 ms; small kernels 0.036-0.039 ms in every form at both T."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from jaxperf.loops import engine, report_kernel, verdict
from jaxperf.loops import targets as tg
from jaxperf.loops.factory import load

FORMS = ["python", "fori", "fori u=4"]
TPU, UNIT = "mosaic_tpu v5e", "VLIW bundles (cycles)"


def device(ms, seen=None, *, spread=0.002):
    """A stand-in for the device: ``ms(form, T, scan)`` per call, five repeats a little apart."""

    def measure(forms, T, scan):
        if seen is not None:
            seen.append((T, scan))
        rows = [
            dict(
                kernel="k",
                form=f,
                T=T,
                repeat=r,
                ms_per_call=ms(f, T, scan) * (1 + spread * (r - 2)),
                status=tg.OK,
            )
            for r in range(5)
            for f in forms
        ]
        return pd.DataFrame(rows)

    return measure


def seed_like(form, T, scan):  # every form's ms follows its loop (interpolated from the TPU's)
    per_step, rest = {"python": (0.0023, 2.14), "fori": (0.625, 0.66), "fori u=4": (0.159, 0.74)}[form]
    return rest + per_step * T / 64


def at_the_floor(form, T, scan):  # 0.036-0.039 ms whatever the form, T or scan
    return {"python": 0.036, "fori": 0.039, "fori u=4": 0.037}[form] + 1e-7 * T


def host_bound(form, T, scan):  # a timed call's fixed 0.5 ms spread over its scan, and a small loop
    return 0.5 / scan + {"python": 1e-6, "fori": 3e-6, "fori u=4": 2e-6}[form] * T


def _points(per_step):
    """Static counts as the engine reads them: work per program at T=1024 and 4096 (16 and 64 steps)."""
    return pd.DataFrame(
        [
            dict(kernel="k", target=TPU, unit=UNIT, form=f, T=T, status=tg.OK, error="", compile_ms=1.0)
            | dict(work_per_program=100.0 + n * T / 64, steps=T / 64, loops_in_code=1, programs=4096)
            for f, n in per_step.items()
            for T in (1024, 4096)
        ]
    )


STATIC = {"python": 1.5, "fori": 9.45, "fori u=4": 3.0}  # fori 6.30x the Python loop per step: "pays"


def _results(timings):
    checks = pd.DataFrame(columns=["kernel", "form", "T", "against", "same_result", "difference", "error"])
    return engine.Results("k", checks, _points(STATIC), timings, {})


def _timed(ms, Ts=(1024, 4096), budget=300.0, seen=None):
    kernel = load("tests.corpus.kernels.attention_lse:make")
    return engine.time_results(kernel, FORMS, Ts, clock=engine.Progress(budget), measure=device(ms, seen))


def test_a_measurement_that_follows_the_loop_gives_the_verdict_and_needs_no_sizing():
    seen = []
    timings = _timed(seed_like, seen=seen)
    assert seen == [(1024, 16), (4096, 16)]  # the loop showed at once: nothing more measured
    m = verdict.measured(timings)
    assert m["why"] == "resolved" and m["verdict"] == "pays" and m["T"] == 4096
    assert m["ratio"] == pytest.approx(seed_like("fori", 4096, 16) / seed_like("python", 4096, 16))
    assert m["share"]["fori"] > 0.9 > 0.1 > m["share"]["python"]
    text = report_kernel.markdown(_results(timings))
    head = text.splitlines()[2]
    assert head.startswith("`k` **pays** for `fori_loop` on this device (measured): fori_loop 40.660")
    assert "Why, in static counts" in head
    # the static counts explain it without a verdict of their own
    assert re.search(rf"^- {TPU}: fori_loop 9\.4 against the Python loop's 1\.5", text, re.M)
    assert "Which form" not in text  # the measured table says which form is fastest here
    assert report_kernel.summary(_results(timings))["verdict"] == "pays"


def test_at_the_per_call_floor_the_tool_sizes_the_measurement_then_says_it_is_below_what_the_device_resolves():
    seen = []
    timings = _timed(at_the_floor, seen=seen, budget=1e6)
    # as asked; every T with a scan 16 times longer; then the largest T 4 and 16 times larger
    assert seen == [(1024, 16), (4096, 16), (1024, 256), (4096, 256), (16384, 256), (65536, 256)]
    m = verdict.measured(timings)
    assert m["verdict"] == verdict.BELOW and m["why"] == "floor" and m["T"] == 65536
    results = _results(timings)
    text = report_kernel.markdown(results)
    head = text.splitlines()[2]
    assert head.startswith(f"`k`: {verdict.BELOW}, so no measured verdict: timed at T=1024-65536")
    assert "scans of 16 and 256 calls" in head and "0.036-0.039 ms per call at T=1024" in head
    # the static count says 6.30x ("pays"); beside ms that do not move, no verdict is printed at all
    assert "6.30×" in text and not re.search(r"\bpays\b|does not pay|Which form", text), text
    summary = report_kernel.summary(results)
    assert summary["verdict"] == verdict.BELOW and "pays" not in summary["mechanism"]
    assert report_kernel.measured_rows(results).empty  # the study's family gets no row at the floor


def test_a_longer_scan_lifts_a_host_bound_floor_and_stops_there():
    seen = []
    m = verdict.measured(_timed(host_bound, seen=seen, budget=1e6))
    assert seen == [(1024, 16), (4096, 16), (1024, 256), (4096, 256)]
    assert m["why"] == "resolved" and m["scan"] == 256 and m["verdict"] == "pays"  # 3x at T=4096


def test_a_sizing_step_predicted_past_the_budget_is_not_reached_and_said(monkeypatch):
    now, seen = [0.0], []
    monkeypatch.setattr(engine.time, "monotonic", lambda: now[0])
    floor = device(at_the_floor, seen)

    def slow(forms, T, scan):  # 20 s a T (builds, checks, compiles); its timed calls are nothing
        now[0] += 20.0
        return floor(forms, T, scan)

    kernel = load("tests.corpus.kernels.attention_lse:make")
    timings = engine.time_results(kernel, FORMS, [1024, 4096], clock=engine.Progress(100.0), measure=slow)
    assert seen == [(1024, 16), (4096, 16), (1024, 256), (4096, 256)]  # 40 s, then 21 s predicted
    late = timings[timings.status == tg.NOT_REACHED]
    assert set(late["T"]) == {16384} and set(late.form) == set(FORMS)
    (why,) = set(late.error)  # about 20 s x 16 (less the timed calls' part) past the 20 s left
    assert (
        re.fullmatch(r"predicted (\d+) s, 20 s of the budget left", why) and 300 < int(why.split()[1]) <= 320
    )
    assert verdict.measured(timings)["verdict"] == verdict.BELOW
    text = report_kernel.markdown(_results(timings))
    assert f"| python | 16384 | 256 | not reached: {why} |" in text


def test_a_round_is_predicted_from_the_last_one():
    done = pd.DataFrame(dict(form=["fori"] * 2, T=[1024, 4096], scan=16, ms_per_call=[10.0, 40.0]))
    # one timed call of 16 each (a warm-up per 5 repeats added): 0.192 s and 0.768 s timed; the other
    # 9.04 s of the 10 s round split over its 2 T, growing as T squared; the timed calls as T x scan
    assert engine._round_s(done, 10.0, [16384], 16, 5) == pytest.approx(4.52 * 16 + 0.768 * 4)
    longer = engine._round_s(done, 10.0, [1024, 4096], 256, 5)
    assert longer == pytest.approx(4.52 / 16 + 0.768 * 16 / 4 + 4.52 + 0.768 * 16)


def test_without_a_device_the_verdict_is_the_static_counts_labelled_so():
    empty = pd.DataFrame(columns=[*engine.KEYS, "scan", "repeat", "ms_per_call", "status", "error"])
    assert engine.time_results(load("tests.corpus.kernels.attention_lse:make"), FORMS, [1024]).empty  # a CPU
    results = _results(empty)
    assert verdict.measured(empty) == dict(verdict=None, why="not timed", tried="")
    head = report_kernel.markdown(results).splitlines()[2]
    assert head == "`k` **pays** for `fori_loop`, from static counts:"
    assert report_kernel.summary(results)["verdict"] == "pays"


def test_a_ratio_whose_quartiles_judge_apart_is_not_resolved():
    # fori_loop's loop is most of its call; per pair it is 1.8x-2.2x the Python loop's: "pays partly"
    # at the lower quartile, "pays" at the upper
    rows = [
        dict(form=f, T=T, scan=16, repeat=r, ms_per_call=ms)
        for r, ratio in enumerate([1.8, 1.9, 2.0, 2.1, 2.2])
        for T, python in ((1024, 1.0), (4096, 1.0 + r * 1e-3))
        for f, ms in (("python", python), ("fori", python * ratio * T / 4096))
    ]
    m = verdict.measured(pd.DataFrame(rows))
    assert m["why"] == "resolved" and m["verdict"] == "not resolved"
    assert (m["q25"], m["q75"]) == pytest.approx((1.9, 2.1))


def test_timings_from_before_the_scan_was_sized_read_as_one_scan():
    timings = _timed(seed_like).drop(columns="scan")  # a study's records written before this change
    m = verdict.measured(timings)
    assert m["verdict"] == "pays" and m["scan"] == engine.SCAN


def test_a_measured_verdict_stands_where_the_static_count_says_otherwise():
    def even(form, T, scan):  # every form's loop costs the same per step here; the static count 6.30x
        return 0.01 + 0.001 * T / 64

    results = _results(_timed(even))
    assert report_kernel.summary(results)["verdict"] == "does not pay"
    text = report_kernel.markdown(results)
    assert text.splitlines()[2].startswith("`k` **does not pay** for `fori_loop` on this device (measured)")
    assert "6.30×" in text and not re.search(r"\bpays\b", text)  # the count explains, never judges
