"""Figures a reader can read at notebook width (issue 19): jaxperf.figure_rules' checks catch
each problem on a figure built to have it, and every figure function of the loop, Triton,
TPU and multi-process studies passes them all, drawn and saved (footer and layout included)
from small subsets of the committed CPU results (tests/fixtures/figures, rebuilt by make.py
there): at most six lines per panel, no legend over the data, every text inside the canvas
and at least 8 pt at 900 px, no scientific or minor-log tick labels, one y scale per measure,
no text over text."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from jaxperf import figure_rules, plots

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
        ax.plot([1, 10, 100], [1 + k, 20 + k, 400 + k], label=f"line {k}")
    ax.set_yscale("log")
    tiny = ax.text(0.5, 0.5, "tiny", fontsize=5, transform=ax.transAxes)
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
    assert any("texts overlap: 'one label here' and 'another label'" in p for p in found)
    assert any("11.0 in wide" in p for p in found)


def test_unroll_shades_stay_the_forms_colour_and_tell_unrolls_apart():
    from matplotlib.colors import to_rgb

    base = plots.color("hoisted")
    shades = [figure_rules.unroll_shade(base, u, [1, 2, 8]) for u in (1, 2, 8)]
    assert len(set(shades)) == 3 and shades[-1] == to_rgb(base)
    assert figure_rules.unroll_shade(base, 4, [4]) == base


# ---------------------------------------------------------------- every study figure passes


def _read(name: str) -> pd.DataFrame:
    return pd.read_csv(FIXTURES / f"{name}.csv")


def _loops(sizes: tuple[int, ...] | None = None) -> list[tuple[str, object]]:
    from jaxperf.loops import analysis, figures

    frames = [_read(f"loops__{n}") for n in ("timings", "variants", "headline", "lowering_matrix")]
    timings, variants, head, matrix = (f[f["T"].isin(sizes)] if sizes else f for f in frames)
    plans = figures.planned(matrix, variants, timings, head, analysis.seed_reproduction(head))
    return [(f"loops_{name}", draw) for name, draw, _ in plans]


def _triton() -> list[tuple[str, object]]:
    from jaxperf.triton import figures

    compiles, estimates = _read("triton_compile__compile_records"), _read("triton_compile__estimate_records")
    plots_of = {
        figures.compile_vs_T: compiles,
        figures.compile_unrolls_vs_T: compiles,
        figures.sass_vs_T: compiles,
        figures.sass_unrolls_vs_T: compiles,
        figures.stage_breakdown: compiles,
        figures.python_stages_vs_T: compiles,
        figures.estimate_vs_T: estimates,
        figures.estimate_instructions_vs_T: estimates,
    }
    return [(f"triton_{fn.__name__}", lambda fn=fn, df=df: fn(df)) for fn, df in plots_of.items()]


def _tpu() -> list[tuple[str, object]]:
    from jaxperf.tpu import figures

    records, points = _read("tpu_compile__compile_records"), _read("tpu_compile__compile_points")
    return [
        ("tpu_compile_vs_T", lambda: figures.plot_compile_vs_T(records)),
        ("tpu_static_vs_T", lambda: figures.plot_static_vs_T(points)),
        ("tpu_static_unrolls_vs_T", lambda: figures.plot_static_unrolls_vs_T(points, "v6e")),
        ("tpu_bundles_vs_T", lambda: figures.plot_bundles_vs_T(points, "v6e")),
    ]


def _multiprocess() -> list[tuple[str, object]]:
    from jaxperf.multiprocess import analysis, figures

    timings = _read("multiprocess__timings")
    split = analysis.collective_split(analysis.medians(timings))
    return [
        ("multiprocess_scaling", lambda: figures.plot_scaling(timings)),
        ("multiprocess_scaling_host_cpu", lambda: figures.plot_scaling(timings, "cpu_ms_per_call")),
        ("multiprocess_scaling_more", lambda: figures.plot_scaling_more(timings)),
        ("multiprocess_split", lambda: figures.plot_split(split)),
    ]


def _dispatch() -> list[tuple[str, object]]:
    from jaxperf.dispatch import figures, inner_call, report

    timings, ladder = _read("dispatch__timings"), _read("dispatch__inner_call_ladder")
    stage_ms, totals = (
        report.stage_table(_read("dispatch__breakdown_stages")),
        _read("dispatch__breakdown_totals"),
    )
    return [
        ("dispatch_it_per_s", lambda: figures.plot_it_per_s(timings)),
        ("dispatch_methods", lambda: figures.plot_methods(timings)),
        ("dispatch_donation", lambda: figures.plot_donation(timings)),
        ("dispatch_host_overhead", lambda: figures.plot_host_overhead(timings)),
        ("dispatch_breakdown", lambda: figures.plot_breakdown(stage_ms, totals)),
        ("dispatch_inner_call", lambda: figures.plot_inner_call(ladder, inner_call.explain(ladder))),
    ]


def _answers() -> list[tuple[str, object]]:
    from jaxperf.answers import figures, sources

    frame, _ = sources.seed_ratios(FIXTURES.parents[2])  # the committed results' summaries
    return [("answers_seed_ratio", lambda: figures.plot_seed_ratio(frame))]


STUDIES = {
    "answers": _answers,
    "dispatch": _dispatch,
    "loops": _loops,
    "loops_one_T": lambda: _loops((256,)),  # a smoke run's sizes: one point per line
    "triton": _triton,
    "tpu": _tpu,
    "multiprocess": _multiprocess,
}


@pytest.mark.parametrize("study", sorted(STUDIES))
def test_every_figure_of_the_study_follows_the_rules(study, tmp_path):
    drawn = STUDIES[study]()
    assert drawn, f"no figure planned for {study}"
    report = {}
    for name, draw in drawn:
        fig, data = draw()  # type: ignore[operator]
        assert isinstance(data, pd.DataFrame) and not data.empty, name
        assert plots.who_drew(fig).startswith("jaxperf."), name
        found = _saved(fig, tmp_path, data)
        if found:
            report[name] = found
    assert not report, "figures a reader would trip over:\n" + "\n".join(
        f"{k}: {v}" for k, v in report.items()
    )


def test_the_loop_figures_lead_with_the_key_variants():
    from jaxperf.loops import figures

    timings = _read("loops__timings")
    seed = timings[(timings["mode"] == "xla") & (timings.kernel == "seed")]
    assert figures.key_variants(seed) == [
        "python",
        "fori u=1",
        "hand_unrolled u=16",
        "hoisted u=1",
        "scalar_carry u=1",
    ]
    fig, _ = figures.plot_ms_vs_T(timings, "xla")
    seed_panel = fig.axes[0]
    assert [line.get_label() for line in figure_rules.data_lines(seed_panel)] == figures.key_variants(seed)
    assert seed_panel.get_title(loc="left").startswith("seed kernel: at T=16384: fori u=1 ")
    assert "scalar_carry u=1" in seed_panel.get_title(loc="left")
    plt.close(fig)


def _crossings(fig: plt.Figure, tmp_path: Path) -> list[str]:
    """Reference-line labels ("#192 on a TPU ...") whose box a data line (or its IQR band's
    median line) passes through, after the figure is saved as a notebook shows it."""
    import numpy as np

    plots.save(fig, tmp_path, "figure", pd.DataFrame({"x": [1]}), PROV, drawn_by="t.f")
    renderer = fig.canvas.get_renderer()
    found = []
    for ax in fig.axes:
        lines = figure_rules.data_lines(ax)
        for text in ax.texts:
            if not text.get_text().startswith("#192"):
                continue
            box = text.get_window_extent(renderer)
            for line in lines:
                xy = ax.transData.transform(np.column_stack(line.get_data()))
                # sample each segment densely: a line crosses the box if any sample falls in it
                for (x0, y0), (x1, y1) in zip(xy, xy[1:]):
                    t = np.linspace(0, 1, 200)
                    xs, ys = x0 + t * (x1 - x0), y0 + t * (y1 - y0)
                    inside = (xs > box.x0) & (xs < box.x1) & (ys > box.y0) & (ys < box.y1)
                    if inside.any():
                        found.append(f"{text.get_text()!r} crossed by {line.get_label()!r}")
                        break
    plt.close(fig)
    return found


def test_the_seeds_reference_labels_are_clear_of_the_data_lines(tmp_path):
    from jaxperf.dispatch import figures

    fig, _ = figures.plot_it_per_s(_read("dispatch__timings"))
    labels = [t.get_text() for ax in fig.axes for t in ax.texts if t.get_text().startswith("#192")]
    assert len(labels) == 4  # 8 and 25 it/s, in each of the two panels
    assert _crossings(fig, tmp_path) == []
