"""What makes a figure of the study readable in a notebook, as code.

A notebook shows a figure about :data:`NOTEBOOK_PX` pixels wide; saved at :data:`DPI`, a wider
figure is scaled down, text too: :func:`pt` gives the size that still reads as 8 pt there, and
:func:`plain_log_ticks` labels a log axis with plain numbers. :func:`problems` lists what a reader
would trip over in a drawn figure (the tests run it on every figure function):

- more than :data:`MAX_LINES` data lines (or bar series) in one panel (reference lines,
  marked with :data:`REFERENCE_GID` by ``plots.reference_line``, do not count);
- a legend over the data (a legend's box overlapping any panel's box);
- text smaller than 8 pt at notebook width;
- scientific or minor-log tick labels (``10^{-1}``, ``9x10^-1``);
- panels with the same y label (the same measure) on different y scales;
- a figure wider than :data:`MAX_WIDTH_IN`;
- what :mod:`jaxperf_study.figure_overlaps` measures on the drawn pixels: text cut at the canvas
  edge or over other text (tick labels that collide, rotated ones by their slanted outline),
  a data line hidden under others, an annotation over the data.
"""

from __future__ import annotations

import math
import textwrap
from collections import defaultdict
from typing import Any

import matplotlib.axes
import matplotlib.figure
import matplotlib.text
import matplotlib.ticker
from matplotlib.ticker import LogFormatter

from . import figure_overlaps as _overlaps_of

NOTEBOOK_PX = 900  # the width at which a notebook (JupyterLab, GitHub) shows a figure
DPI = 130  # the study's savefig dpi
MIN_PT = 8.0  # the smallest font a reader should meet, after scaling to NOTEBOOK_PX
MAX_WIDTH_IN = 10.0
MAX_LINES = 6
REFERENCE_GID = "reference"  # the gid of a labelled reference line (a goal, the seed's number)


def scale(fig: matplotlib.figure.Figure | matplotlib.figure.SubFigure) -> float:
    """How much a notebook shrinks ``fig`` (1.0: shown at its own size)."""
    root = fig if isinstance(fig, matplotlib.figure.Figure) else fig.figure  # a SubFigure's figure
    return min(1.0, NOTEBOOK_PX / (root.get_size_inches()[0] * DPI))


def pt(fig: matplotlib.figure.Figure | matplotlib.figure.SubFigure, size: float = MIN_PT) -> float:
    """The font size that reads as ``size`` points once a notebook has scaled ``fig``."""
    return size / scale(fig)


def _plain(value: float, compact: bool = True) -> str:
    """0.05, 2, 500, 5000, then (``compact``) 20k, 3M, 10G, else 65536: never 10^4 or 3x10^1."""
    for from_value, unit, suffix in ((1e9, 1e9, "G"), (1e6, 1e6, "M"), (1e4, 1e3, "k")):
        if compact and value >= from_value:
            return f"{value / unit:.3g}{suffix}"
    return f"{value:.0f}" if value >= 1 else f"{value:.3g}"


class PlainLogLocator(matplotlib.ticker.Locator):
    """Ticks at 1, 2, 5 x 10^k on a log axis spanning up to 2.5 decades, at powers of ten
    (every one, or every other, ...) on a wider one: at most about eight labels."""

    def __call__(self) -> Any:
        if self.axis is None:
            return []
        vmin, vmax = sorted(self.axis.get_view_interval())
        return self.tick_values(vmin, vmax)

    def tick_values(self, vmin: float, vmax: float) -> Any:
        if not (vmin > 0 and vmax > vmin and math.isfinite(vmax)):
            return []
        lo, hi = math.floor(math.log10(vmin)), math.ceil(math.log10(vmax))
        decades = math.log10(vmax / vmin)
        subs = (1.0, 2.0, 3.0, 5.0) if decades <= 1.2 else (1.0, 2.0, 5.0) if decades <= 2.5 else (1.0,)
        stride = max(1, math.ceil((hi - lo) / 8))
        ticks = [s * 10.0**k for k in range(lo, hi + 1, stride) for s in subs]
        return [t for t in ticks if vmin <= t * (1 + 1e-9) and t <= vmax * (1 + 1e-9)] or [vmin, vmax]


def plain_log_ticks(ax: matplotlib.axes.Axes, axis: str = "y", suffix: str = "") -> None:
    """Plain labels on a log axis (0.1, 2, 50, 1000, on y 20k, 3M; ``suffix`` appended, e.g. "x"
    for a ratio), no minor labels."""
    target = ax.yaxis if axis == "y" else ax.xaxis
    (ax.set_yscale if axis == "y" else ax.set_xscale)("log")
    target.set_major_locator(PlainLogLocator())
    compact = axis == "y"  # counts read as 10k, 1M; a swept size on x stays exact (65536)
    target.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, p: _plain(v, compact) + suffix))
    target.set_minor_locator(matplotlib.ticker.LogLocator(base=10, subs=tuple(range(2, 10))))
    target.set_minor_formatter(matplotlib.ticker.NullFormatter())


def fit_for_notebook(fig: matplotlib.figure.Figure) -> None:
    """Make ``fig`` meet the text rules as a notebook shows it, before it is laid out and saved:
    every text that would read below :data:`MIN_PT` at :data:`NOTEBOOK_PX` is raised to read
    as exactly that (larger texts keep their size, so titles stay above labels), and every
    log axis still on matplotlib's default labels gets plain ones (:func:`plain_log_ticks`)."""
    floor = pt(fig)
    for text in drawn_texts(fig):
        if float(text.get_fontsize()) < floor - 0.05:
            text.set_fontsize(floor)
    for ax in fig.axes:
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            if axis.get_scale() == "log" and isinstance(axis.get_major_formatter(), LogFormatter):
                plain_log_ticks(ax, name)
            # Ticks made later (a re-layout) keep the size.
            size = max([floor] + [float(t.get_fontsize()) for t in axis.get_ticklabels()])
            ax.tick_params(axis=name, which="both", labelsize=size)  # type: ignore[arg-type]


def data_lines(ax: matplotlib.axes.Axes) -> list[Any]:
    """The panel's data lines: every visible line but the labelled reference lines."""
    return [ln for ln in ax.get_lines() if ln.get_visible() and ln.get_gid() != REFERENCE_GID]


def _overlaps(a: Any, b: Any) -> bool:
    return a.x0 < b.x1 - 1 and b.x0 < a.x1 - 1 and a.y0 < b.y1 - 1 and b.y0 < a.y1 - 1


def drawn_texts(fig: matplotlib.figure.Figure) -> list[matplotlib.text.Text]:
    """Every text artist ``fig`` draws (not the labels of ticks outside the view, not hidden
    shared-axis labels), each once, with non-empty text."""
    fig.canvas.draw()
    drawn: dict[int, matplotlib.text.Text] = {}
    original = matplotlib.text.Text.draw

    def record(self: matplotlib.text.Text, renderer: Any) -> Any:
        if self.get_visible() and self.get_text():
            drawn.setdefault(id(self), self)
        return original(self, renderer)

    matplotlib.text.Text.draw = record  # type: ignore[method-assign,assignment]
    try:
        fig.canvas.draw()
    finally:
        matplotlib.text.Text.draw = original  # type: ignore[method-assign]
    return list(drawn.values())


def problems(fig: matplotlib.figure.Figure) -> list[str]:
    """What a reader would trip over in ``fig`` as drawn now (after ``plots.save`` laid it out):
    empty when it follows every rule in the module docstring. Measured at the size a notebook
    shows it (a pixel of tolerance is a pixel a reader sees); its dpi is restored after."""
    dpi = fig.dpi
    fig.set_dpi(DPI * scale(fig))
    try:
        return list(dict.fromkeys(_problems(fig)))
    finally:
        fig.set_dpi(dpi)


def _problems(fig: matplotlib.figure.Figure) -> list[str]:
    texts = drawn_texts(fig)  # draws the figure: every position below is as drawn
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    found: list[str] = []
    width, height = fig.get_size_inches()
    if width > MAX_WIDTH_IN + 1e-9:
        found.append(f"{width:.1f} in wide: more than {MAX_WIDTH_IN:g} in")
    panels = [ax for ax in fig.axes if ax.axison and ax.get_label() != "<colorbar>"]
    for ax in panels:
        name = ax.get_title() or ax.get_ylabel() or "a panel"
        series = len(data_lines(ax)) + len(ax.containers)
        if series > MAX_LINES:
            found.append(f"{name!r}: {series} lines or bar series (at most {MAX_LINES})")
        for axis in (ax.xaxis, ax.yaxis):
            minor = [t.get_text() for t in axis.get_ticklabels(minor=True) if t.get_text()]
            if axis.get_scale() == "log" and minor:
                found.append(f"{name!r}: minor log tick labels {minor[:3]}")
    for legend in [ax.get_legend() for ax in fig.axes] + list(fig.legends):  # a legend row's too
        if legend is None or not legend.get_visible():
            continue
        box = legend.get_window_extent(renderer)
        over = [ax.get_title() or "a panel" for ax in panels if _overlaps(box, ax.bbox)]
        if over:
            found.append(f"a legend covers the data of {over}")
    shrink = scale(fig)
    for text in texts:
        label = text.get_text()
        if "10^" in label or "\\times" in label:
            found.append(f"a scientific tick label {label!r}")
        size = float(text.get_fontsize()) * shrink
        if size < MIN_PT - 0.05:
            found.append(f"{label[:40]!r} reads as {size:.1f} pt at {NOTEBOOK_PX} px")
    found += _overlaps_of.text_problems(fig, texts, renderer)
    tight = fig.get_tightbbox(renderer)
    if not any("outside the canvas" in p for p in found) and (
        tight is not None
        and (tight.x0 < -0.01 or tight.y0 < -0.01 or tight.x1 > width + 0.01 or tight.y1 > height + 0.01)
    ):
        found.append(f"something is drawn outside the canvas: {tight.bounds} vs {width:.2f}x{height:.2f} in")
    found += _overlaps_of.line_problems(fig, renderer, data_lines)
    by_label: dict[str, list[matplotlib.axes.Axes]] = defaultdict(list)
    for ax in panels:
        if ax.get_ylabel():
            by_label[ax.get_ylabel()].append(ax)
    for label, group in by_label.items():
        scales = {(ax.get_yscale(), tuple(round(v, 9) for v in ax.get_ylim())) for ax in group}
        if len(scales) > 1:
            found.append(f"panels measuring {label!r} are on different y scales: {sorted(scales)}")
    return found


# ---------------------------------------------------------------- layouts that stay readable
ROW_WIDTH_IN = 8.8  # a panel plus a legend to its right, shown at about notebook width


def stacked(
    n: int, *, width: float = ROW_WIDTH_IN, row_height: float = 2.5, sharey: bool = True
) -> tuple[matplotlib.figure.Figure, list[matplotlib.axes.Axes]]:
    """``n`` panels stacked in rows over one x axis (a notebook column reads down, not across),
    sharing the y scale unless ``sharey=False``: ``(fig, axes)``."""
    fig, rows = grid(max(n, 1), 1, width=width, row_height=row_height, sharey=sharey)
    return fig, [row[0] for row in rows]


def grid(
    rows: int, cols: int, *, width: float = ROW_WIDTH_IN, row_height: float = 2.6, sharey: bool = True
) -> tuple[matplotlib.figure.Figure, list[list[matplotlib.axes.Axes]]]:
    """A ``rows`` x ``cols`` grid of panels sharing x and (unless ``sharey=False``) y."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(
        rows, cols, figsize=(width, 1.2 + row_height * rows), sharex=True, sharey=sharey, squeeze=False
    )
    return fig, [list(row) for row in axes]


def _wrapped(text: str, width_in: float, size: float) -> str:
    """``text`` in lines that fit ``width_in`` inches at ``size`` points (20 characters at least)."""
    return "\n".join(textwrap.wrap(text, max(int(width_in * 72 / (size * 0.55)), 20)))


def title(fig: matplotlib.figure.Figure, text: str) -> None:
    """The figure's claim as its title, wrapped to the figure's width."""
    size = pt(fig, 10.0)
    fig.suptitle(_wrapped(text, fig.get_size_inches()[0], size), fontsize=size)


def panel_title(ax: matplotlib.axes.Axes, text: str) -> None:
    """A panel's claim as its left-aligned title, wrapped to the panel's width."""
    size = pt(ax.figure, 8.5)
    width_in = ax.get_position().width * ax.figure.get_size_inches()[0]  # type: ignore[union-attr]
    ax.set_title(_wrapped(text, width_in + 0.3, size), fontsize=size, loc="left")


def label_end(ax: matplotlib.axes.Axes, xs: Any, ys: Any, text: str, color: Any) -> None:
    """``text`` on the plot above and left of a line's last point (the reporter's numbers, a
    seed's line), so a reader needs no legend to know it."""
    pairs = [(float(x), float(y)) for x, y in zip(xs, ys) if y == y]
    if pairs:
        ax.annotate(
            text,
            pairs[-1],
            (-6, 5),
            textcoords="offset points",
            ha="right",
            va="bottom",
            fontsize=pt(ax.figure),
            color=color,
        )
