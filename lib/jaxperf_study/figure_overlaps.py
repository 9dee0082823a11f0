"""What covers what in a drawn figure, measured where a reader sees it, in display pixels, for
:func:`jaxperf_study.figure_rules.problems`: :func:`text_problems` and :func:`line_problems`. The
pixel checks draw each of a panel's lines and scatter points again, alone, on a private Agg
renderer at the figure's dpi; a pixel shows the last line drawn there (zorder, then insertion). A
line with ``alpha`` at or below 0.5 hides nothing; IQR bands and bars neither hide nor are hidden.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import matplotlib.axes
import matplotlib.collections
import matplotlib.figure
import matplotlib.lines
import matplotlib.path
import matplotlib.text
import numpy as np

MIN_VISIBLE = 0.5  # a line with less than this share of its drawn pixels showing is hidden
MIN_PIXELS = 12  # a line (or an overlap with data) smaller than this many pixels is not judged


# ---------------------------------------------------------------- text boxes as drawn


def text_corners(text: matplotlib.text.Text, renderer: Any) -> np.ndarray:
    """The four corners (display pixels) of ``text``'s drawn rectangle, rotated with the text: the
    centre of the upright box matplotlib reports, the size of the text's extent unrotated."""
    upright = matplotlib.text.Text.get_window_extent(text, renderer)  # an Annotation's arrow left out
    angle = float(text.get_rotation()) % 180
    x0, y0, x1, y1 = upright.x0, upright.y0, upright.x1, upright.y1
    if min(angle % 90, 90 - angle % 90) < 1e-6:
        return np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]])
    rotation = text.get_rotation()
    text.set_rotation(0)
    try:
        flat = matplotlib.text.Text.get_window_extent(text, renderer)
    finally:
        text.set_rotation(rotation)
    half = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]]) * [flat.width / 2, flat.height / 2]
    theta = np.deg2rad(angle)
    turn = np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]])
    return half @ turn.T + [(x0 + x1) / 2, (y0 + y1) / 2]


def corners_overlap(a: np.ndarray, b: np.ndarray, margin: float = 1.0) -> bool:
    """Whether two convex quadrilaterals overlap by more than ``margin`` pixels (separating
    axes: they are apart when their projections on some edge's normal are)."""
    for quad in (a, b):
        for edge in np.diff(np.vstack([quad, quad[:1]]), axis=0):
            normal = np.array([-edge[1], edge[0]]) / (np.hypot(*edge) or 1.0)
            pa, pb = a @ normal, b @ normal
            if np.max(pa) <= np.min(pb) + margin or np.max(pb) <= np.min(pa) + margin:
                return False
    return True


def roles(fig: matplotlib.figure.Figure) -> dict[int, str]:
    """What each text of ``fig`` is, by ``id``: "x tick label", "y label", "legend", ..."""
    found: dict[int, str] = {}
    for ax in fig.axes:
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            found[id(axis.label)] = f"{name} label"
            for tick in axis.get_ticklabels(which="both"):
                found[id(tick)] = f"{name} tick label"
        for text in ax.texts:
            found[id(text)] = "annotation"
    for legend in [ax.get_legend() for ax in fig.axes] + list(fig.legends):
        if legend is not None:
            for text in [*legend.get_texts(), legend.get_title()]:
                found[id(text)] = "legend"
    for text in fig.texts:  # the suptitle, plots.add_footer's footer, any other figure text
        found[id(text)] = "title" if text.get_text() == fig.get_suptitle() else "figure text"
    for owner in [fig, *fig.axes]:  # what is left of their own texts: titles (suptitle, panel titles)
        for child in owner.get_children():
            if isinstance(child, matplotlib.text.Text):
                found.setdefault(id(child), "title")
    return found


def text_problems(
    fig: matplotlib.figure.Figure, texts: list[matplotlib.text.Text], renderer: Any
) -> list[str]:
    """Texts more than a pixel past the canvas edge, and pairs of texts drawn over each other (a
    rotated text judged by its rotated rectangle; tick labels of one axis that collide named so)."""
    found: list[str] = []
    role = roles(fig)
    width, height = _size(fig)
    boxes = [(t, text_corners(t, renderer)) for t in texts]
    for text, quad in boxes:
        past = {
            "left": -quad[:, 0].min(),
            "right": quad[:, 0].max() - width,
            "bottom": -quad[:, 1].min(),
            "top": quad[:, 1].max() - height,
        }
        side, px = max(past.items(), key=lambda kv: kv[1])
        if px > 1.0:
            what = role.get(id(text), "text")
            found.append(f"{what} {text.get_text()[:40]!r} is {px:.0f} px outside the canvas ({side})")
    for i, (a, qa) in enumerate(boxes):
        for b, qb in boxes[i + 1 :]:
            if not _boxes_touch(qa, qb) or not corners_overlap(qa, qb):
                continue
            ra, rb = role.get(id(a), "text"), role.get(id(b), "text")
            if ra == rb and ra.endswith("tick label"):
                found.append(f"{ra}s collide: {a.get_text()[:30]!r} and {b.get_text()[:30]!r}")
            else:
                found.append(f"texts overlap: {a.get_text()[:30]!r} ({ra}) and {b.get_text()[:30]!r} ({rb})")
    return found


def _boxes_touch(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether the upright boxes around two quadrilaterals meet: a cheap first test, since
    most pairs of texts are far apart."""
    return bool(np.all(a.min(axis=0) < b.max(axis=0)) and np.all(b.min(axis=0) < a.max(axis=0)))


# ---------------------------------------------------------------- lines as drawn


def _drawable(ax: matplotlib.axes.Axes) -> list[Any]:
    """The panel's lines and scatter points in drawing order (zorder, then insertion), minus
    the faint ones (alpha <= 0.5), which hide nothing."""
    kinds = (matplotlib.lines.Line2D, matplotlib.collections.PathCollection)
    found = [a for a in ax.get_children() if isinstance(a, kinds) and a.get_visible()]
    found = [a for a in found if (alpha := a.get_alpha()) is None or alpha > 0.5]
    return sorted(found, key=lambda a: a.get_zorder())  # stable: ties keep their order


def _size(fig: matplotlib.figure.Figure) -> tuple[int, int]:
    return round(fig.bbox.width), round(fig.bbox.height)


def _mask(fig: matplotlib.figure.Figure, artist: Any) -> np.ndarray:
    """The pixels ``artist`` covers when drawn alone at the figure's dpi (rows top-down, as
    the buffer holds them): at least half opaque, so an antialiased fringe does not count."""
    from matplotlib.backends.backend_agg import RendererAgg

    width, height = _size(fig)
    renderer = RendererAgg(width, height, fig.dpi)
    artist.draw(renderer)
    return np.asarray(renderer.buffer_rgba())[..., 3] >= 128


def line_problems(
    fig: matplotlib.figure.Figure,
    renderer: Any,
    data: Callable[[matplotlib.axes.Axes], list[matplotlib.lines.Line2D]],
) -> list[str]:
    """Data lines of which less than :data:`MIN_VISIBLE` of their drawn pixels show, and texts
    placed over the data (lines, markers, scatter points), panel by panel; ``data(ax)`` lists a
    panel's data lines (``figure_rules.data_lines``)."""
    found: list[str] = []
    for ax in fig.axes:
        drawn = _drawable(ax)
        if not drawn:
            continue
        name = ax.get_title(loc="left") or ax.get_title() or ax.get_ylabel() or "a panel"
        name = name.splitlines()[0][:50]
        masks = [_mask(fig, artist) for artist in drawn]
        on_top = np.full(masks[0].shape, -1, dtype=np.int32)  # per pixel: the last artist drawn there
        for k, mask in enumerate(masks):
            on_top[mask] = k
        subjects = {k: a for k, a in enumerate(drawn) if any(a is line for line in data(ax))}
        colours = [_colour(a) for a in drawn]
        hue = np.array([colours.index(c) for c in colours] + [-1])  # hue[-1]: no artist on top
        for k, line in subjects.items():
            if masks[k].sum() < MIN_PIXELS:
                continue
            # A pixel shows the line when the line on top there has its colour: its own
            # markers, its own IQR whisker, or a same-coloured artist of the same series.
            tops = on_top[masks[k]]
            seen = hue[tops] == hue[k]
            shows = float(seen.mean())
            if shows < MIN_VISIBLE:
                under, _ = Counter(tops[~seen].tolist()).most_common(1)[0]
                found.append(
                    f"{name!r}: the line {_label(line)!r} is hidden: {shows:.0%} of it shows, "
                    f"under {_label(drawn[under])!r}"
                )
        points = {k: a for k, a in enumerate(drawn) if isinstance(a, matplotlib.collections.PathCollection)}
        found += _annotations_over_data(ax, name, renderer, on_top, subjects | points)
    return found


def _annotations_over_data(
    ax: matplotlib.axes.Axes, name: str, renderer: Any, on_top: np.ndarray, subjects: dict[int, Any]
) -> list[str]:
    """Texts placed in ``ax`` whose drawn box holds at least :data:`MIN_PIXELS` pixels of a
    data line or point on top (``on_top``: per pixel the index of the artist on top,
    ``subjects`` the data by index)."""
    found: list[str] = []
    height, width = on_top.shape
    for text in ax.texts:
        if not (text.get_visible() and text.get_text()):
            continue
        quad = text_corners(text, renderer)
        x0, y0 = (max(int(v), 0) for v in np.floor(quad.min(axis=0)))
        x1, y1 = min(int(np.ceil(quad[:, 0].max())), width), min(int(np.ceil(quad[:, 1].max())), height)
        if x1 <= x0 or y1 <= y0:
            continue
        window = on_top[height - y1 : height - y0, x0:x1]  # buffer rows run top-down, display y up
        cx, cy = np.meshgrid(np.arange(x0, x1) + 0.5, height - np.arange(height - y1, height - y0) - 0.5)
        inside = matplotlib.path.Path(quad).contains_points(np.column_stack([cx.ravel(), cy.ravel()]))
        hit = window[inside.reshape(window.shape) & np.isin(window, list(subjects))]
        if hit.size >= MIN_PIXELS:
            over = [_label(subjects[c]) for c, _ in Counter(hit.tolist()).most_common(3)]
            found.append(f"{name!r}: annotation {text.get_text()[:40]!r} is over the data of {over}")
    return found


def _colour(artist: Any) -> tuple[float, ...]:
    """The colour a reader sees ``artist`` in (a line's stroke, else a collection's face)."""
    from matplotlib.colors import to_rgba

    if isinstance(artist, matplotlib.lines.Line2D):
        return tuple(round(c, 3) for c in to_rgba(artist.get_color()))
    faces = artist.get_facecolor()
    return tuple(round(float(c), 3) for c in (faces[0] if len(faces) else (0, 0, 0, 0)))


def _label(artist: Any) -> str:
    label = str(artist.get_label())
    return label if label and not label.startswith("_") else "an unlabelled series"
