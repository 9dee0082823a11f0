"""The final-bundle parser and the static estimate, on real (trimmed) libtpu dumps and small
hand-written schedules."""

from __future__ import annotations

from pathlib import Path

import pytest

from jaxperf.compilers.mosaic_tpu import bundles, estimate

FIXTURES = Path(__file__).parent / "fixtures" / "tpu"


def test_nested_loops_from_a_real_v5e_dump():
    schedule = bundles.read(FIXTURES / "v5e_seed_fori_u1_T4096.final_bundles.txt")
    assert schedule.total == 83
    grid, step = schedule.loops
    # The grid loop: 8 x 4096/128 programs + 2 pipeline stages; the fori_loop: 4096/64 steps.
    assert (grid.bundles, grid.trips, grid.depth, grid.parent) == (79, 258, 1, None)
    assert (step.bundles, step.trips, step.depth, step.parent) == (35, 64, 2, 0)


def test_late_unrolled_loop_counts_trips_by_its_counter_step():
    # fori_loop(unroll=4): libtpu steps the counter by 4 up to 64, so 16 trips.
    schedule = bundles.read(FIXTURES / "v5e_seed_fori_u4_T4096.final_bundles.txt")
    assert [(loop.bundles, loop.trips) for loop in schedule.loops] == [(83, 258), (40, 16)]


def test_estimate_of_the_real_dump_is_straight_line_plus_bodies_times_trips():
    schedule = bundles.read(FIXTURES / "v5e_seed_fori_u1_T4096.final_bundles.txt")
    straight = 83 - 79
    per_program = (79 - 35) + 35 * 64
    assert estimate.static_cycles(schedule) == straight + 258 * per_program
    assert estimate.iteration_cycles(schedule, 0) == per_program


def _schedule(inner_bound: int, step: int = 1, outer_bound: int = 3) -> str:
    """A hand-written dump: 1 bundle, an outer loop (3 own bundles) around an inner loop
    (2 bundles), then the exit bundle."""
    return "\n".join(
        [
            "     0   :  { %s1 = smov 0 }",
            "   0x1 LB: > { %s2 = sadd.s32 1, %s9 } /* Start region 10 */",
            f"   0x2 LB: >> {{ %s5 = sadd.s32 {step}, %s4 }} /* Start region 20 */",
            f"   0x3   : >> {{ %p6 = scmp.ge.s32.totalorder %s5, {inner_bound} /* loop exit test */  ;;  "
            "%7 = sbr.rel (!%p6) target = $region20 } /* End region 20 */",
            f"   0x4   : > {{ %p8 = scmp.ge.s32.totalorder %s2, {outer_bound} /* loop exit test */ }}",
            "   0x5   :  { %9 = sbr.rel (!%p8) target = $region10 }",
            "   0x6   :  {} /* exit bundle: %kernel = custom-call(%x) */",
        ]
    )


def test_nested_loop_arithmetic():
    schedule = bundles.parse(_schedule(inner_bound=5))
    outer, inner = schedule.loops
    assert (outer.start, outer.end, outer.trips) == (1, 5, 3)
    assert (inner.start, inner.end, inner.trips, inner.parent) == (2, 3, 5, 0)
    # straight: bundles 0 and 6; outer: 3 trips x (3 own + 5 trips x 2).
    assert estimate.static_cycles(schedule) == 2 + 3 * (3 + 5 * 2)


def test_zero_trips_cost_nothing():
    schedule = bundles.parse(_schedule(inner_bound=0))
    assert schedule.loops[1].trips == 0
    assert estimate.static_cycles(schedule) == 2 + 3 * 3


def test_counter_step_divides_the_bound_rounding_up():
    schedule = bundles.parse(_schedule(inner_bound=10, step=4))
    assert schedule.loops[1].trips == 3


def test_unknown_trip_count_is_an_error_naming_the_loop():
    text = _schedule(inner_bound=5).replace("%s5, 5 /* loop exit test */", "%s5, %s7 /* loop exit test */")
    schedule = bundles.parse(text, name="k")
    assert schedule.loops[1].trips is None
    with pytest.raises(ValueError, match="loop 1 of 'k'"):
        estimate.static_cycles(schedule)


def test_loop_body_without_a_depth_marker_on_its_first_bundle():
    # libtpu leaves a lone vdelay bundle unmarked even when it starts a loop body.
    text = _schedule(inner_bound=5).replace("0x2 LB: >> { %s5", "0x2 LB:  { %s5")
    assert [(loop.start, loop.end, loop.depth) for loop in bundles.parse(text).loops] == [
        (1, 5, 1),
        (2, 3, 2),
    ]


def test_each_bundle_operation_has_its_slot():
    from jaxperf.compilers.mosaic_tpu.estimate import slot

    assert slot("vmatmul.f32.gmra.mxu0") == slot("vmatpush.msra.mxu1") == "matrix"
    assert slot("vadd.xlane.f32.xlu0") == slot("vpop.xlane.xlu0") == "cross-lane"
    assert slot("vpop.eup") == "transcendental" and slot("vld") == slot("dma") == "load/store"
    assert slot("vadd.f32") == "vector" and slot("sadd.s32") == slot("scalar_lea") == "scalar"
    assert slot("sbr.rel") == "control" and slot("vphi") is None
