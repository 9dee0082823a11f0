"""Figures: seaborn, median line with an interquartile band, log axes where a sweep spans decades,
a footer naming backend, device and versions; each saved as PNG + SVG with a CSV of the plotted
data. Never chooses matplotlib's backend (forcing Agg would make every figure vanish from the
notebooks; a headless script gets Agg by default).
"""

from __future__ import annotations

import functools
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import matplotlib
import matplotlib.axes
import matplotlib.figure
import matplotlib.pyplot as plt
import matplotlib.ticker
import numpy as np
import pandas as pd
import seaborn as sns

from jaxperf.errors import bad_value

from . import figure_rules as _rules
from . import provenance as _prov
from . import reruns
from .display import kernel_shell
from .palette import LOOP_FORM_COLORS as LOOP_FORM_COLORS  # the one palette, re-exported
from .palette import METHOD_COLORS as METHOD_COLORS
from .palette import NNX_METHOD_COLORS as NNX_METHOD_COLORS
from .palette import SOURCE_COLORS as SOURCE_COLORS
from .palette import color as color
from .palette import colors_for as colors_for
from .palette import unroll_style as unroll_style
from .records import atomic_write

sns.set_theme(context="notebook", style="whitegrid")


def ratio_axis(ax: matplotlib.axes.Axes, axis: str = "y") -> None:
    """Plain ratio tick labels (0.5x, 1x, 2x) on a log or linear ratio axis, never 9x10^-1."""
    target = ax.yaxis if axis == "y" else ax.xaxis
    if (ax.get_yscale() if axis == "y" else ax.get_xscale()) == "log":
        _rules.plain_log_ticks(ax, axis, suffix="x")
        return
    target.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}x"))
    target.set_minor_formatter(matplotlib.ticker.NullFormatter())


def reference_line(
    ax: matplotlib.axes.Axes, y: float, label: str, *, color: str = "0.35", ls: str = ":", **text: Any
) -> None:
    """A horizontal reference (a goal, the seed's number) labelled at its right end, above the line
    (``va="top"``: under it; ``text`` styles the label), marked as no data line for figure_rules."""
    ax.axhline(y, color=color, ls=ls, lw=1.1, zorder=1, gid=_rules.REFERENCE_GID)
    text = {"ha": "right", "va": "bottom", "fontsize": 7.5, "color": color, **text}
    offset = (-3, -2 if text["va"] == "top" else 2)
    ax.annotate(label, (1.0, y), offset, ("axes fraction", "data"), "offset points", **text)


def legend_outside(ax: matplotlib.axes.Axes, **kwargs: Any) -> None:
    """The axes' legend to the right of the data, never over it."""
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        kwargs.setdefault("fontsize", _rules.pt(ax.figure))
        ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0), **kwargs)


def spans_decades(values: Any, decades: float = 1.5) -> bool:
    arr = np.asarray(values, dtype=float)
    arr = arr[np.isfinite(arr) & (arr > 0)]
    return arr.size > 1 and np.log10(arr.max() / arr.min()) >= decades


def median_iqr_lines(
    ax: matplotlib.axes.Axes,
    data: pd.DataFrame,
    x: str,
    y: str,
    hue: str,
    *,
    hue_order: Sequence[str] | None = None,
    logx: bool | None = None,
    logy: bool | None = None,
) -> pd.DataFrame:
    """Median of ``y`` per (hue, x) as a line, its spread (:func:`reruns.spread`) as a band, each hue
    in its palette colour and unroll line style; log axes where the data spans 1.5 decades or more.
    Returns the plotted statistics (hue, x, median, lo, hi, n, over)."""
    stats = reruns.spread(data, y, [hue, x])
    order = list(hue_order) if hue_order is not None else list(dict.fromkeys(data[hue]))
    palette = colors_for([str(name) for name in order])
    for name in order:
        part = stats[stats[hue] == name].sort_values(x)
        if part.empty:
            continue
        c = palette[str(name)]
        ax.plot(part[x], part["median"], marker="o", ms=4, label=str(name), color=c, ls=unroll_style(name))
        ax.fill_between(part[x], part["lo"], part["hi"], alpha=0.2, color=c, linewidth=0)
    if logx if logx is not None else spans_decades(stats[x]):
        _rules.plain_log_ticks(ax, "x")  # plain labels: log minor labels (3x10^1, ...) collide
        swept = sorted(stats[x].unique())
        if len(swept) <= 10:  # tick the swept values themselves
            ax.set_xticks(swept)
    if logy if logy is not None else spans_decades(stats["median"]):
        _rules.plain_log_ticks(ax, "y")
    return stats


# Characters of a 7-pt footer line per inch of figure width (measured on DejaVu Sans, with margin).
_FOOTER_CHARS_PER_INCH = 17


def footer_lines(fig: matplotlib.figure.Figure, text: str) -> list[str]:
    """``text`` wrapped to the figure's width, so that no footer line runs off the canvas."""
    width = max(int(fig.get_size_inches()[0] * _FOOTER_CHARS_PER_INCH * 7 / _rules.pt(fig)), 40)
    lines: list[str] = []
    for line in text.splitlines():
        lines += textwrap.wrap(line, width=width, break_on_hyphens=False) or [""]
    return lines


def add_footer(fig: matplotlib.figure.Figure, prov: dict[str, Any], extra: str = "") -> int:
    """The provenance footer (backend, device, versions, commit, plus ``extra``) inside the
    canvas, wrapped to its width; returns its number of lines."""
    lines = footer_lines(fig, _prov.footer(prov) + (f"\n{extra}" if extra else ""))
    fig.text(0.01, 0.005, "\n".join(lines), fontsize=_rules.pt(fig), color="0.35", ha="left", va="bottom")
    return len(lines)


P = ParamSpec("P")
R = TypeVar("R")
_DRAWN_BY = "_jaxperf_drawn_by"


def function_name(fn: Callable[..., Any]) -> str:
    """``module.qualname`` of a function: how a figure names the code that drew it."""
    return f"{fn.__module__}.{fn.__qualname__}"


def draws(fn: Callable[P, R]) -> Callable[P, R]:
    """Mark ``fn`` as a plotting function: every Figure it returns (alone or inside a
    returned tuple) is tagged with ``fn``'s name, which :func:`who_drew` reads back."""
    name = function_name(fn)

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        out = fn(*args, **kwargs)
        for item in out if isinstance(out, tuple) else (out,):
            if isinstance(item, matplotlib.figure.Figure):
                setattr(item, _DRAWN_BY, name)
        return out

    return wrapper


def who_drew(fig: matplotlib.figure.Figure, given: str | Callable[..., Any] | None = None) -> str:
    """Who drew ``fig``: the function passed as ``given``, else the tag :func:`draws` left on
    the figure, else a name typed as a string (``"dispatch.report.plot_x"``, read as a
    ``jaxperf_study`` module). Raises ValueError when none of them says."""
    if callable(given):
        return function_name(given)
    if isinstance(given, str) and given:
        return given if given.startswith(("jaxperf.", "jaxperf_study.")) else f"jaxperf_study.{given}"
    tagged = getattr(fig, _DRAWN_BY, None)
    if given is None and tagged:
        return str(tagged)
    raise bad_value(
        "drawn_by",
        given,
        "the plotting function itself (or its name), unless it was drawn by a function marked @plots.draws",
    )


@dataclass(frozen=True)
class SavedFigure:
    """The three files of one figure and the function that drew it."""

    name: str
    png: Path
    svg: Path
    csv: Path
    drawn_by: str

    def files(self) -> tuple[Path, Path, Path]:
        return self.png, self.svg, self.csv


#: savefig metadata without a date (the SVG's dc:date), so a redraw writes the same bytes
_METADATA: dict[str, dict[str, Any]] = {"png": {"Software": "matplotlib"}, "svg": {"Date": None}}


def save(
    fig: matplotlib.figure.Figure,
    figures_dir: Path,
    name: str,
    data: pd.DataFrame,
    prov: dict[str, Any],
    *,
    drawn_by: str | Callable[..., Any] | None = None,
    note: str = "",
) -> SavedFigure:
    """Save ``name``.png/.svg plus ``name``.csv (the plotted data) under ``figures_dir``, each
    written whole (a temporary name, renamed), the footer naming the function that drew it
    (:func:`who_drew`) and the data file. The figure stays open."""
    author = who_drew(fig, drawn_by)
    _rules.fit_for_notebook(fig)  # no text below 8 pt, no 10^k labels, as a notebook shows it
    n_lines = add_footer(
        fig, prov, extra=f"drawn by {author}; data: {name}.csv" + (f"; {note}" if note else "")
    )
    # Room at the bottom for the footer, at the top for a figure-level legend (tight_layout
    # ignores both).
    height = fig.get_size_inches()[1]
    bottom = (0.12 + n_lines * _rules.pt(fig) * 1.25 / 72) / height
    fig.tight_layout(rect=(0, bottom, 1, 1 - 0.8 / height if fig.legends else 1))
    figures_dir = Path(figures_dir)
    figures_dir.mkdir(parents=True, exist_ok=True)
    images = {}
    for ext in ("png", "svg"):
        path = figures_dir / f"{name}.{ext}"
        tmp = figures_dir / f".{name}.tmp.{ext}"
        with matplotlib.rc_context({"svg.hashsalt": "jaxperf"}):  # the same bytes on every run
            fig.savefig(tmp, dpi=_rules.DPI, format=ext, metadata=_METADATA[ext])
        tmp.replace(path)
        images[ext] = path
    csv = atomic_write(figures_dir / f"{name}.csv", data.to_csv(index=False).encode())
    return SavedFigure(name=name, png=images["png"], svg=images["svg"], csv=csv, drawn_by=author)


def show(fig: matplotlib.figure.Figure, png: Path | None = None) -> None:
    """Show ``fig`` once where the notebook cell draws it (in order, in papermill's copy too), then
    close it so the inline backend does not show it again; a kernel that cannot draw inline
    (``MPLBACKEND=Agg``) shows the saved ``png``. Outside a kernel the figure is only closed."""
    if kernel_shell() is not None:
        from IPython.display import Image, display

        if "inline" in matplotlib.get_backend() or png is None:
            display(fig)
        else:
            display(Image(filename=str(png)))
    plt.close(fig)
