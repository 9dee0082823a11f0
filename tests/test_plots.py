"""plots: saving (PNG + SVG + CSV, atomically), who drew a figure, and that the
module leaves matplotlib's backend alone (so notebook figures show inline)."""

from __future__ import annotations

import subprocess
import sys

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from jaxperf_study import plots, reruns

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
        ("dispatch.report.plot_it_per_s", "jaxperf_study.dispatch.report.plot_it_per_s"),
        ("jaxperf_study.jax20909.figures.plot", "jaxperf_study.jax20909.figures.plot"),
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
        "import matplotlib; matplotlib.use('svg'); import jaxperf_study.plots, jaxperf_study.study; "
        "print(matplotlib.get_backend())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "svg"


def test_median_iqr_lines_returns_the_plotted_statistics():
    data = pd.DataFrame({"variant": ["a"] * 6, "T": [1, 1, 1, 100, 100, 100], "ms": [1, 2, 3, 10, 20, 30]})
    fig, ax = plt.subplots()
    stats = plots.median_iqr_lines(ax, data, "T", "ms", "variant")
    assert stats["median"].tolist() == [2.0, 20.0]
    assert stats["lo"].tolist() == [1.5, 15.0]
    assert set(stats["over"]) == {"quartiles"}
    repeats = data.assign(process=[0, 1, 2, 0, 1, 2])  # one value per process: a rerun's range
    stats = plots.median_iqr_lines(ax, repeats, "T", "ms", "variant")
    expected = [*reruns.rerun_range([1, 2, 3]), *reruns.rerun_range([10, 20, 30])]
    assert stats[["lo", "hi"]].values.ravel().tolist() == pytest.approx(expected)
    assert stats["lo"].iloc[0] < 1.0 and stats["hi"].iloc[1] > 30.0
    assert ax.get_xscale() == "log"
    plt.close(fig)


# ---------------------------------------------------------------- the one palette


def test_every_method_and_loop_form_has_its_own_colour():
    from jaxperf_study.dispatch import predict
    from jaxperf_study.dispatch.nnx.report import PATHS as NNX_METHODS
    from jaxperf_study.jax20909.vocab import LOOP_FORMS

    METHODS = [m for family in ("pmap", "jit") for m in predict.methods(family)]  # what notebook 01 times

    for group, names in (
        (plots.METHOD_COLORS, METHODS),
        (plots.NNX_METHOD_COLORS, NNX_METHODS),
        (plots.LOOP_FORM_COLORS, LOOP_FORMS),
    ):
        assert set(names) <= set(group), f"no colour for {set(names) - set(group)}"
        assert len(set(group.values())) == len(group), f"two names share a colour in {group}"
    assert len(set(plots.SOURCE_COLORS.values())) == len(plots.SOURCE_COLORS)


@pytest.mark.parametrize(
    ("name", "same_as"),
    [
        ("fori u=4", "fori"),
        ("hoisted u=16", "hoisted"),
        ("python", "python"),
        ("filter_pmap+donate", "filter_pmap"),
    ],
)
def test_a_variant_takes_its_forms_colour(name, same_as):
    assert plots.color(name) == plots.color(same_as)


def test_an_unknown_name_is_a_clear_error():
    with pytest.raises(ValueError, match="name='not a method'"):
        plots.color("not a method")


def test_unroll_styles_differ_per_unroll_and_python_is_solid():
    styles = [plots.unroll_style(f"fori u={u}") for u in (1, 2, 4, 8, 16)]
    assert len({str(s) for s in styles}) == 5
    assert plots.unroll_style("python") == "-" == plots.unroll_style("fori u=1")


def test_ratio_ticks_are_plain(tmp_path):
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot([1, 2, 3], [0.5, 1.0, 2.0])
    ax.set_yscale("log")
    plots.ratio_axis(ax)
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert labels and all(
        label.endswith("x") and "10^" not in label and "times" not in label for label in labels
    )
    assert "1x" in labels
    plt.close(fig)


def test_the_footer_stays_inside_a_narrow_canvas(tmp_path):
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot([1, 2], [1, 2])
    note = "a long note " * 20
    plots.save(fig, tmp_path, "narrow", pd.DataFrame({"x": [1]}), PROV, drawn_by="x.y", note=note)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    canvas = fig.bbox
    for text in fig.texts:
        box = text.get_window_extent(renderer)
        assert box.x0 >= canvas.x0 - 1 and box.x1 <= canvas.x1 + 1 and box.y0 >= canvas.y0 - 1
    plt.close(fig)


def test_figure_modules_take_colours_from_the_palette():
    """No figure module builds its own palette for methods or loop forms."""
    from pathlib import Path

    lib = Path(plots.__file__).parent
    offenders = [
        p.relative_to(lib).as_posix()
        for p in lib.rglob("*.py")
        if p.name != "plots.py" and 'color_palette("tab10"' in p.read_text()
    ]
    assert offenders == []


def test_the_family_figure_claims_only_what_its_counts_show():
    """On the TPU the reporter's kernel had a measured verdict ("pays") and no static count: its
    column says "no count" and the title, over static counts, does not judge it (nor names a GPU)."""
    from jaxperf_study.jax20909.figures import plot_family_per_step

    static = dict(
        source="mosaic_tpu v5e", kind="static, compiled on a CPU", unit="VLIW bundles (cycles) per loop step"
    )
    frame = pd.DataFrame(
        [
            dict(kernel="seed", source="this device", kind="measured", unit="ms per call", T="65536",
                 fori=159.5, python=1.68, ratio=95.2, q25=95.1, q75=95.3, cause=None),
            dict(kernel="seed", **static, T="n/a", fori=None, python=None, ratio=None, q25=None, q75=None,
                 cause="not read (no two T with a count)"),
            dict(kernel="streaming", **static, T="4096-16384", fori=37.1, python=7.65, ratio=4.85, q25=None,
                 q75=None, cause="fori_loop issues 12.0 more slot operations per step"),
        ]
    )  # fmt: skip
    fig, data = plot_family_per_step(frame)
    title = " ".join(fig._suptitle.get_text().split())  # wrapped to the canvas
    assert "streaming pays" in title and "seed" not in title and "GPU" not in title
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.texts] == ["no count"]
    assert set(data.kernel) == {"seed", "streaming"} and set(data.kind) == {"static, compiled on a CPU"}
    plt.close(fig)
