"""Figures a reader can read at notebook width (issues 19 and 32): jaxperf_study.figure_rules' checks
catch each problem on a figure built to have it and pass one built without it, and every
figure function of the study passes them all, drawn and saved (footer and layout included)
from the committed CPU results (tests/fixtures/figures, rebuilt by make.py there: small
subsets, or whole tables where a figure's faults depend on all of its data): at most six
lines per panel, no legend over the data, every text inside the canvas, at least 8 pt at
900 px and clear of other text (tick labels too, rotated ones by their slanted outline), no
scientific or minor-log tick labels, one y scale per measure, no data line hidden under
others, no annotation over the data. Figures drawn by code other sessions own may keep the
problems listed in KNOWN_PROBLEMS until they are fixed."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from jaxperf.paths import PROJECT_ROOT
from jaxperf_study import figure_rules, plots

FIXTURES = Path(__file__).parent / "fixtures" / "figures"
PROV = {"backend": "cpu", "device_count": 8, "device_kind": "cpu", "packages": {}, "git": {"commit": "abc"}}


def _saved(fig: plt.Figure, tmp_path: Path, data: pd.DataFrame | None = None) -> list[str]:
    plots.save(
        fig, tmp_path, "figure", pd.DataFrame({"x": [1]}) if data is None else data, PROV, drawn_by="t.f"
    )
    found = figure_rules.problems(fig)
    plt.close(fig)
    return found


def _drawn(fig: plt.Figure) -> list[str]:
    """The rules' findings on a figure as drawn, before plots.save fits its text for a notebook."""
    fig.tight_layout()
    found = figure_rules.problems(fig)
    plt.close(fig)
    return found


def _drawn_keep(fig: plt.Figure) -> list[str]:
    fig.tight_layout()
    return figure_rules.problems(fig)


def _clean() -> tuple[plt.Figure, plt.Axes]:
    fig, ax = plt.subplots(figsize=(7, 3))
    for k in range(3):
        ax.plot([1, 10, 100], [1 + k, 2 + k, 4 + k], label=f"line {k}")
    plots.legend_outside(ax)
    return fig, ax


# ---------------------------------------------------------------- each rule catches its problem


def test_a_clean_figure_has_no_problem(tmp_path):
    fig, ax = _clean()
    plots.reference_line(ax, 3.0, "goal", fontsize=figure_rules.pt(fig))
    assert _saved(fig, tmp_path) == []


def test_seven_lines_in_a_panel_are_too_many_but_reference_lines_do_not_count(tmp_path):
    fig, ax = _clean()
    for y in (1.0, 2.0, 5.0):
        plots.reference_line(ax, y, f"ref {y}", fontsize=figure_rules.pt(fig))
    assert _saved(fig, tmp_path) == []
    fig, ax = _clean()
    for k in range(4):
        ax.plot([1, 2], [k, k + 1])
    assert any("7 lines" in p for p in _saved(fig, tmp_path))


def test_a_legend_over_the_data_is_caught(tmp_path):
    fig, ax = _clean()
    ax.legend(loc="upper left")
    assert any("legend covers the data" in p for p in _saved(fig, tmp_path))


def test_text_outside_the_canvas_and_small_text_are_caught(tmp_path):
    fig, ax = _clean()
    ax.set_title("a title far too long to fit in this figure's width " * 4, loc="left")
    ax.text(0.5, 0.5, "tiny", fontsize=5, transform=ax.transAxes)
    found = _drawn(fig)
    assert any("outside the canvas" in p for p in found)
    assert any(p.startswith("'tiny' reads as 4.9 pt") for p in found)  # 5 pt on a 7-in figure at 900 px


def test_saving_raises_small_text_and_default_log_labels_to_what_a_notebook_reads(tmp_path):
    fig, ax = plt.subplots(figsize=(9.5, 3))  # shown at 0.73x: its 10 pt ticks would read as 7.3 pt
    for k in range(3):
        ax.plot([1, 10, 100], [1 + k, 20 * 3**k, 400 * 3**k], label=f"line {k}")
    ax.set_yscale("log")
    tiny = ax.text(0.05, 0.9, "tiny", fontsize=5, transform=ax.transAxes)
    big = ax.set_title("a title", fontsize=30)
    plots.legend_outside(ax)
    assert any("reads as" in p for p in _drawn_keep(fig)) and any("scientific" in p for p in _drawn_keep(fig))
    assert _saved(fig, tmp_path) == []
    assert tiny.get_fontsize() == pytest.approx(figure_rules.pt(fig)) and big.get_fontsize() == 30


def test_text_scales_with_the_figure_width():
    wide = plt.figure(figsize=(13.85, 3))  # 1800 px at the study's dpi: shown at half size
    assert figure_rules.scale(wide) == pytest.approx(0.5, abs=1e-3)
    assert figure_rules.pt(wide) == pytest.approx(16.0, abs=0.05)
    assert figure_rules.pt(plt.figure(figsize=(6, 3))) == 8.0
    plt.close("all")


def test_scientific_and_minor_log_tick_labels_are_caught_and_plain_ticks_pass(tmp_path):
    fig, ax = _clean()
    ax.set_yscale("log")
    ax.set_ylim(0.7, 30)  # matplotlib's own labels: 10^0, 10^1 and minor 2x10^0 ...
    found = _drawn(fig)
    assert any("scientific tick label" in p or "minor log tick labels" in p for p in found), found
    fig, ax = _clean()
    figure_rules.plain_log_ticks(ax, "y")
    ax.set_ylim(0.7, 30)
    assert _saved(fig, tmp_path) == []
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert set(labels) >= {"1", "2", "5", "10", "20"}


def test_large_counts_read_with_k_m_g_suffixes():
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot([1, 2], [2e3, 5e10])
    figure_rules.plain_log_ticks(ax, "y")
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert {"1M", "10G"} <= set(labels) and not any("e+" in x or "10^" in x for x in labels), labels
    ax.set_xscale("log")
    figure_rules.plain_log_ticks(ax, "x")
    ax.set_xlim(100, 100000)
    ax.set_xticks([256, 65536])
    fig.canvas.draw()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["256", "65536"]  # sizes stay exact
    plt.close(fig)


def test_the_plain_log_locator_keeps_few_labels_over_many_decades():
    ticks = figure_rules.PlainLogLocator().tick_values(1e-2, 1e9)
    assert 4 <= len(ticks) <= 9 and all(t > 0 for t in ticks)
    assert figure_rules.PlainLogLocator().tick_values(0.9, 1.2) == [1.0]
    assert figure_rules.PlainLogLocator().tick_values(0, 10) == []


def test_panels_of_one_measure_on_different_scales_are_caught(tmp_path):
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(6, 5))
    top.plot([1, 2], [1, 2])
    bottom.plot([1, 2], [10, 20])
    top.set_ylabel("ms")
    bottom.set_ylabel("ms")
    assert any("different y scales" in p for p in _saved(fig, tmp_path))


def test_overlapping_texts_and_a_wide_figure_are_caught(tmp_path):
    fig, ax = plt.subplots(figsize=(11, 3))
    ax.plot([1, 2], [1, 2])
    ax.text(0.5, 0.5, "one label here", transform=ax.transAxes, fontsize=14)
    ax.text(0.5, 0.5, "another label", transform=ax.transAxes, fontsize=14)
    found = _saved(fig, tmp_path)
    assert any(
        "texts overlap: 'one label here' (annotation) and 'another label' (annotation)" in p for p in found
    )
    assert any("11.0 in wide" in p for p in found)


def test_a_text_cut_at_the_canvas_edge_is_named_with_its_role_and_side():
    fig, ax = plt.subplots(figsize=(6, 2.2))
    ax.plot([1, 2], [1, 2])
    ax.set_ylabel("a y label much longer than this short figure is tall")
    fig.text(0.97, 0.5, "runs off the right edge")
    found = _drawn(fig)
    assert any(
        p.startswith("y label 'a y label much") and p.endswith("outside the canvas (top)") for p in found
    )
    assert any(p.startswith("figure text 'runs off the right edge' is") and "(right)" in p for p in found), (
        found
    )
    fig, ax = plt.subplots(figsize=(6, 2.2))
    ax.plot([1, 2], [1, 2])
    ax.set_ylabel("a short y label")
    fig.text(0.5, 0.5, "inside")
    assert not any("outside the canvas" in p for p in _drawn(fig))


def _ticks(labels: list[str], rotation: float, width: float = 6.0) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(width, 3))
    ax.plot(range(len(labels)), range(len(labels)))
    ax.set_xticks(range(len(labels)), labels, rotation=rotation)
    return fig


def test_tick_labels_that_collide_are_caught_upright_and_rotated():
    crowded = [f"label number {k}" for k in range(8)]
    assert any(
        p.startswith("x tick labels collide: 'label number 0' and 'label number 1'")
        for p in _drawn(_ticks(crowded, 0))
    )
    assert any("x tick labels collide" in p for p in _drawn(_ticks(crowded * 3, 45)))
    assert not any("collide" in p for p in _drawn(_ticks([f"L{k}" for k in range(8)], 0)))


def test_rotated_tick_labels_are_judged_by_their_slanted_outline():
    # At 45 degrees these labels' upright boxes overlap their neighbours' while the
    # slanted text itself stays apart: a reader sees no collision.
    labels = [str(10000 + 1111 * k) for k in range(15)]
    fig = _ticks(labels, 45)
    fig.tight_layout()
    fig.canvas.draw()
    ticks = [t for t in fig.axes[0].get_xticklabels() if t.get_text()]
    boxes = [t.get_window_extent() for t in ticks]
    assert any(a.x1 > b.x0 + 1 for a, b in zip(boxes, boxes[1:]))  # the upright boxes overlap
    assert not any("collide" in p or "overlap" in p for p in _drawn(fig))


def test_a_line_hidden_under_another_is_caught_and_the_one_on_top_is_not():
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.plot([1, 2, 3], [1, 3, 2], marker="o", label="subject")
    ax.plot([1, 2, 3], [1, 3, 2], marker="o", label="other")  # drawn after: on top
    found = _drawn(fig)
    assert "'a panel': the line 'subject' is hidden: 0% of it shows, under 'other'" in found, found
    assert not any("'other' is hidden" in p for p in found)
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.plot([1, 2, 3], [1, 3, 2], marker="o", label="subject", zorder=3)  # raised over the other
    ax.plot([1, 2, 3], [1, 3, 2], marker="o", label="other")
    assert [p for p in _drawn(fig) if "hidden" in p] == [
        "'a panel': the line 'other' is hidden: 0% of it shows, under 'subject'"
    ]


def test_lines_apart_faint_lines_and_a_lines_own_parts_hide_nothing():
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.plot([1, 2, 3], [1, 3, 2], label="one")
    ax.plot([1, 2, 3], [2, 4, 3], label="two")
    ax.plot([1, 2, 3], [1, 3, 2], color="k", alpha=0.3, label="faint, on top of 'one'")
    ax.plot([1, 2, 3], [1, 3, 2], "o", color="C0")  # 'one''s markers, drawn as another artist
    assert not any("hidden" in p for p in _drawn(fig))


def test_a_dashed_line_on_top_leaves_only_its_gaps_of_the_line_under_it():
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.plot([1, 3], [1, 2], label="solid", lw=2)
    ax.plot([1, 3], [1, 2], ls=":", lw=2, label="dotted")  # a dot, a gap: about half shows
    ax.plot([1, 3], [2, 3], label="solid 2", lw=2)
    ax.plot([1, 3], [2, 3], ls="--", lw=2, label="dashed")  # long dashes, short gaps: most is covered
    hidden = [p for p in _drawn(fig) if "hidden" in p]
    assert len(hidden) == 1 and "'solid 2' is hidden" in hidden[0], hidden


def test_an_annotation_over_the_data_is_caught_and_one_beside_it_is_not():
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.plot([1, 2, 3], [1, 2, 3], label="data")
    ax.annotate("over the line", (2, 2), ha="center", va="center")
    ax.annotate("in the empty corner", (0.02, 0.95), xycoords="axes fraction", va="top")
    ax.scatter([2.8], [1.3], s=150, label="points")
    ax.annotate("on a point", (2.8, 1.3), ha="center", va="center")
    found = _drawn(fig)
    assert "'a panel': annotation 'over the line' is over the data of ['data']" in found, found
    assert "'a panel': annotation 'on a point' is over the data of ['points']" in found, found
    assert not any("empty corner" in p for p in found)


def test_a_reference_label_crossed_by_a_data_line_is_caught():
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.plot([0, 1], [0, 2], label="rising")
    plots.reference_line(ax, 1.9, "a goal at 1.9", fontsize=figure_rules.pt(fig))
    assert any("annotation 'a goal at 1.9' is over the data of ['rising']" in p for p in _drawn(fig))


# ---------------------------------------------------------------- every study figure passes


def _read(name: str) -> pd.DataFrame:
    return pd.read_csv(FIXTURES / f"{name}.csv")


def _loops(sizes: tuple[int, ...] | None = None) -> list[tuple[str, object]]:
    from jaxperf_study.jax20909 import analysis, figures

    frames = [_read(f"loops__{n}") for n in ("timings", "variants", "headline")]
    timings, variants, head = (f[f["T"].isin(sizes)] if sizes else f for f in frames)
    plans = figures.planned(variants, timings, head, analysis.seed_reproduction(head))
    return [(f"loops_{name}", draw) for name, draw, _ in plans]


def _dispatch() -> list[tuple[str, object]]:
    from jaxperf_study.dispatch import accounting, figures, report

    timings, rows = _read("dispatch__timings"), _read("dispatch__accounting_rounds")
    lines = report.cost_lines(
        timings, ("filter_pmap", "filter_jit", "cached_filter_pmap", "cached_filter_jit")
    )
    notes = pd.DataFrame(columns=["step", "model", "kind", "leaves", "donated", "family", "path", "why"])
    summary = report.headline(
        timings, notes, rows, _read("dispatch__accounting_cprofile"), precision=0.05, quick=True
    )
    return [
        (
            "dispatch_per_leaf",
            lambda: figures.plot_per_leaf(timings, lines, extra=report.PATCHED),
        ),  # as 01 draws it
        ("dispatch_filter_pmap_ratio", lambda: figures.plot_filter_pmap_ratio(timings, analogue=True)),
        ("dispatch_filter_pmap_ratio_tpu", lambda: figures.plot_filter_pmap_ratio(timings, analogue=False)),
        ("dispatch_accounting", lambda: figures.plot_accounting(accounting.table(rows))),
        ("dispatch_fix_ranges", lambda: figures.plot_ranges(summary["ranges"])),
    ]


def _your_step() -> list[tuple[str, object]]:
    from jaxperf.diagnosis import Diagnosis
    from jaxperf_study.dispatch import figures

    timings = _read("your_step__timings")
    names = {v: v for v in timings["variant"].unique()}
    diagnosis = Diagnosis(
        kind="eqx.filter_pmap",
        reader=next(v for v in names if v.endswith("(yours)")),
        leaves=392,
        paths={v: v for v in names if not v.endswith("(yours)")},
        skipped={},
        problems={},
        carry={0: 1, 2: 2},
        batch_at=None,
        donate="none",
        loader=False,
        timings=timings,
        seconds=60.0,
        precision=0.05,
        environment={
            "backend": "cpu",
            "device_count": 8,
            "device_kind": "cpu",
            "packages": {"jax": "0.12.0.1"},
        },
    )
    return [("your_step_diagnosis", lambda: figures.plot_diagnosis(diagnosis))]


def _nnx() -> list[tuple[str, object]]:
    from jaxperf_study.dispatch import figures
    from jaxperf_study.dispatch.nnx import report as nnx_report

    timings = _read("nnx__timings")
    methods = [
        "nnx_jit",
        "nnx_tree",
        "nnx_cached_partial",
        "nnx_jit_partial",
        "nnx_split_jit",
        "cached_nnx_jit",
    ]
    return [
        (
            "nnx_per_variable",
            lambda: figures.plot_per_leaf(
                timings,
                nnx_report.own_lines(timings),
                panels={"each path's own host CPU, no-op step": methods},
                fit_cells=nnx_report.FIT_CELLS,
                own=True,
            ),
        )
    ]


STUDIES = {
    "your_step": _your_step,
    "nnx": _nnx,
    "dispatch": _dispatch,
    "loops": _loops,
    "loops_one_T": lambda: _loops((256,)),  # a smoke run's sizes: one point per line
}

#: What the checks of issue 32 (text over text, hidden lines, annotations over the data) find
#: in figures drawn by code other sessions own, on the fixtures above: study -> figure -> the
#: start of each problem. A problem not listed fails the test; so does a listed one no longer
#: found (the figure was fixed: delete its entry). Loop, Triton, TPU and Mosaic GPU figures
#: are being redrawn (issue 33); dispatch ones have no owner yet.
HIDDEN = "the line '{}' is hidden"
ANY_HIDDEN = "the line '"
KNOWN_PROBLEMS: dict[str, dict[str, list[str]]] = {
    # Where two variants measure the same, one line lies on the other: which ones depends on the
    # run the fixtures were cut from, so these figures list any hidden line (ANY_HIDDEN).
    "dispatch": {"dispatch_per_leaf": [ANY_HIDDEN]},
    "loops": {
        f"loops_{m}_vs_T_{mode}": [ANY_HIDDEN]
        for m in ("ms_per_call", "compile_ms")
        for mode in ("xla", "pallas_interpret")
    },
    "loops_one_T": {
        f"loops_{m}_vs_T_{mode}": [ANY_HIDDEN]
        for m in ("ms_per_call", "compile_ms")
        for mode in ("xla", "pallas_interpret")
    },
}


@pytest.mark.parametrize("study", sorted(STUDIES))
def test_every_figure_of_the_study_follows_the_rules(study, tmp_path):
    drawn = STUDIES[study]()
    assert drawn, f"no figure planned for {study}"
    known = KNOWN_PROBLEMS.get(study, {})
    report, fixed = {}, {}
    for name, draw in drawn:
        fig, data = draw()  # type: ignore[operator]
        assert isinstance(data, pd.DataFrame) and not data.empty, name
        assert plots.who_drew(fig).startswith(("jaxperf.", "jaxperf_study.")), name
        found = _saved(fig, tmp_path, data)
        if unexpected := [p for p in found if not any(k in p for k in known.get(name, []))]:
            report[name] = unexpected
        if gone := [k for k in known.get(name, []) if k != ANY_HIDDEN and not any(k in p for p in found)]:
            fixed[name] = gone
    assert not report, "figures a reader would trip over:\n" + "\n".join(
        f"{k}: {v}" for k, v in report.items()
    )
    assert not fixed, f"fixed: delete these from KNOWN_PROBLEMS[{study!r}]: {fixed}"


def test_the_loop_figures_lead_with_the_key_variants():
    from jaxperf_study.jax20909 import figures

    timings = _read("loops__timings")
    seed = timings[(timings["mode"] == "xla") & (timings.kernel == "seed")]
    assert figures.key_variants(seed) == [
        "python",
        "fori u=1",
        "hand_unrolled u=8",
        "scalar_carry u=1",
    ]
    fig, _ = figures.plot_ms_vs_T(timings, "xla")
    seed_panel = fig.axes[0]
    assert [line.get_label() for line in figure_rules.data_lines(seed_panel)] == figures.key_variants(seed)
    assert seed_panel.get_title(loc="left").startswith("seed kernel: at T=16384: fori u=1 ")
    assert "scalar_carry u=1" in seed_panel.get_title(loc="left")
    plt.close(fig)


def test_ms_per_call_keeps_the_batch_on_its_axis_or_divides_by_it_where_it_changes_with_T():
    """A TPU's batch falls from 512 to 2 across T: its curve is ms per call / B, each T's batch under
    its tick (else the curve dips where only the batch changed); a fixed batch is named on the axis."""
    from jaxperf_study.jax20909 import figures

    tpu = pd.read_csv(PROJECT_ROOT / "results/tpu/loops/timings.csv")
    sizes = pd.read_csv(PROJECT_ROOT / "results/tpu/loops/variants.csv")
    fig, data = figures.plot_ms_vs_T(tpu, "pallas", sizes=sizes)
    ax = fig.axes[-1]
    assert ax.get_ylabel().startswith("ms per kernel call / B")
    assert [t.get_text() for t in ax.get_xticklabels()][:2] == ["256\nB=512", "2048\nB=512"]
    python = data[data.variant == "python"].set_index("T")["median"]
    assert python[16384] > python[8192]  # per batch row it grows with T, where ms per call dipped
    plt.close(fig)
    cpu = _read("loops__timings")
    fig, _ = figures.plot_ms_vs_T(cpu, "xla", sizes=cpu.assign(batch=8))
    assert fig.axes[0].get_ylabel().startswith("ms per kernel call, B=8")
    plt.close(fig)


def test_the_seeds_reference_line_is_labelled_for_the_rules_to_judge():
    """The seed's 8 / 25 it/s is on the ratio figure, labelled, so the every-figure test's check
    for annotations over the data has it to judge."""
    from jaxperf_study.dispatch import figures

    fig, _ = figures.plot_filter_pmap_ratio(_read("dispatch__timings"), analogue=True)
    labels = [line.get_label() for ax in fig.axes for line in ax.get_lines()]
    plt.close(fig)
    assert any(label.startswith("the seed's 8 / 25 it/s") for label in labels)


def test_a_part_of_jit_cases_alone_draws_the_filter_pmap_figure_empty():
    """Notebook 01's part train_jit has no pmap case: its figure is drawn empty, and the whole study's
    render (the parts merged) draws the cases."""
    from jaxperf_study.dispatch import figures

    timings = _read("dispatch__timings")
    fig, data = figures.plot_filter_pmap_ratio(timings[timings["family"] == "jit"], analogue=True)
    plt.close(fig)
    assert data.empty and {"measure", "leaves", "median", "lo", "hi"} <= set(data.columns)
    fig, whole = figures.plot_filter_pmap_ratio(timings, analogue=True)
    plt.close(fig)
    assert not whole.empty
