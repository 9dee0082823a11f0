"""plots: saving (PNG + SVG + CSV, atomically), who drew a figure, and that the
module leaves matplotlib's backend alone (so notebook figures show inline)."""

from __future__ import annotations

import subprocess
import sys

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from jaxperf import plots

PROV = {"backend": "cpu", "device_count": 8, "device_kind": "cpu", "packages": {}, "git": {"commit": "abc"}}


@plots.draws
def _draw_tagged(values: list[float]) -> tuple[plt.Figure, pd.DataFrame]:
    fig, ax = plt.subplots(figsize=(4, 3))
    data = pd.DataFrame({"x": range(len(values)), "y": values})
    ax.plot(data["x"], data["y"])
    return fig, data


def _draw_plain() -> plt.Figure:
    fig, _ = plt.subplots(figsize=(4, 3))
    return fig


def test_save_writes_png_svg_csv_and_names_the_function(tmp_path):
    fig, data = _draw_tagged([1.0, 2.0, 4.0])
    saved = plots.save(fig, tmp_path / "figs", "demo", data, PROV)
    assert saved.png.read_bytes().startswith(b"\x89PNG")
    assert b"<svg" in saved.svg.read_bytes()[:500]
    assert pd.read_csv(saved.csv).equals(data)
    assert saved.drawn_by == "test_plots._draw_tagged"
    footer = "\n".join(t.get_text() for t in fig.texts)
    assert "drawn by test_plots._draw_tagged; data: demo.csv" in footer
    assert sorted(p.name for p in (tmp_path / "figs").iterdir()) == ["demo.csv", "demo.png", "demo.svg"]
    plt.close(fig)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (_draw_plain, "test_plots._draw_plain"),
        ("dispatch.report.plot_it_per_s", "jaxperf.dispatch.report.plot_it_per_s"),
        ("jaxperf.loops.figures.plot", "jaxperf.loops.figures.plot"),
    ],
)
def test_who_drew_takes_the_function_or_its_name(given, expected):
    fig = _draw_plain()
    assert plots.who_drew(fig, given) == expected
    plt.close(fig)


def test_who_drew_an_untagged_figure_is_a_clear_error():
    fig = _draw_plain()
    with pytest.raises(ValueError, match="drawn_by=None"):
        plots.who_drew(fig)
    with pytest.raises(ValueError, match="drawn_by=''"):
        plots.who_drew(fig, "")
    plt.close(fig)


def test_an_explicit_drawn_by_wins_over_the_tag():
    fig, _ = _draw_tagged([1.0])
    assert plots.who_drew(fig, _draw_plain) == "test_plots._draw_plain"
    plt.close(fig)


def test_show_closes_the_figure_outside_a_kernel():
    fig = _draw_plain()
    plots.show(fig)
    assert not plt.fignum_exists(fig.number)


def test_importing_plots_leaves_the_backend_alone():
    # A notebook kernel selects the inline backend before our import; forcing Agg
    # (as plots.py once did) would make every figure vanish from the notebook.
    code = (
        "import matplotlib; matplotlib.use('svg'); import jaxperf.plots, jaxperf.study; "
        "print(matplotlib.get_backend())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "svg"


def test_median_iqr_lines_returns_the_plotted_statistics():
    data = pd.DataFrame({"variant": ["a"] * 6, "T": [1, 1, 1, 100, 100, 100], "ms": [1, 2, 3, 10, 20, 30]})
    fig, ax = plt.subplots()
    stats = plots.median_iqr_lines(ax, data, "T", "ms", "variant")
    assert stats["median"].tolist() == [2.0, 20.0]
    assert stats["q25"].tolist() == [1.5, 15.0]
    assert ax.get_xscale() == "log"
    plt.close(fig)
