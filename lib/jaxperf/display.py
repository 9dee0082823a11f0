"""How a notebook of the study shows its tables: wrapped at the notebook's width.

JupyterLab and GitHub show a table wider than the notebook column in a box that scrolls
sideways, so a reader sees half of it. Table cells already wrap at spaces (JupyterLab's
``td { white-space: normal }``); what keeps them wide is a long name without a space
(``python_compile_ms``, ``step_without_collective_ms``) and too many columns. So, once
:func:`install` has run in a kernel (``jaxperf.study.start`` calls it):

- a DataFrame is shown with a break opportunity (``<wbr>``) after each ``_`` and ``/`` of
  its headers and text cells, floats to 4 significant digits, and, when it would still be
  wider than :data:`WIDTH_PX`, transposed if that fits (a short, wide table) or else split
  into column groups that each fit, each repeating the row labels;
- a Markdown table (``display(Markdown(...))``) gets the same break opportunities, code
  spans split around them (`` `fix_`<wbr>`unroll` ``).

``<wbr>`` survives the HTML sanitizer of JupyterLab (an untrusted notebook) and is not
copied with the text. Only what is displayed changes: records, summary.md and the
DataFrames themselves are untouched.
"""

from __future__ import annotations

import html
import re
from typing import Any

import pandas as pd

WIDTH_PX = 860  # the output column of a notebook about 900 px wide, less its padding
CHAR_PX = 7.6  # one character of JupyterLab's table font (13 px), with margin
CELL_PAD_PX = 18  # a cell's padding (0.5em each side) and border
BREAK_AFTER = re.compile(r"([_/])(?=[^\s_/])")


def breakable(text: str) -> str:
    """``text`` HTML-escaped, with a ``<wbr>`` after each ``_`` or ``/`` inside a word."""
    return BREAK_AFTER.sub(r"\1<wbr>", html.escape(text, quote=False))


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return "" if value != value else f"{value:.4g}"
    return str(value)


def _longest_piece(text: str) -> int:
    """Characters of the longest unbreakable piece of ``text`` (after the breaks above)."""
    return max((len(p) for p in re.split(r"[\s_/]", text)), default=0)


def _widths(df: pd.DataFrame) -> list[int]:
    """Estimated pixel width of each column (the row labels first) once its cells wrap."""
    labels = [" ".join(str(n) for n in df.index.names if n is not None)] + [
        " ".join(map(str, i)) if isinstance(i, tuple) else str(i) for i in df.index
    ]
    cols = [labels] + [
        [" ".join(map(str, c)) if isinstance(c, tuple) else str(c)] + [_cell(v) for v in df[c]]
        for c in df.columns
    ]
    return [int(CELL_PAD_PX + CHAR_PX * max(max(map(_longest_piece, texts)), 1)) for texts in cols]


KEY_NAMES = {"T", "unroll", "processes", "process_id", "generation", "target", "repeat", "leaves"}


def _with_labels(df: pd.DataFrame) -> pd.DataFrame:
    """The leading columns that name a row (text, or a sweep key such as ``T``; at most four)
    as its labels, so a transposed or split table keeps them as headers."""
    if not isinstance(df.index, pd.RangeIndex):
        return df
    lead = []
    for col in df.columns[:4]:
        text = pd.api.types.is_string_dtype(df[col]) or isinstance(df[col].dtype, pd.CategoricalDtype)
        if not (text or col in KEY_NAMES):
            break
        lead.append(col)
    return df.set_index(lead) if lead and len(lead) < len(df.columns) else df


_TEXT = re.compile(r">([^<]+)<")


def _table(df: pd.DataFrame) -> str:
    """pandas' own HTML of ``df`` (floats to 4 significant digits), breakable in its text."""
    raw = df.to_html(float_format=lambda v: f"{v:.4g}", na_rep="", notebook=True)
    style, _, table = raw.rpartition("</style>")  # the scoped style block stays as pandas wrote it
    table = _TEXT.sub(lambda m: ">" + BREAK_AFTER.sub(r"\1<wbr>", m.group(1)) + "<", table)
    return style + _ + table


def frame_html(df: pd.DataFrame, max_rows: int = 60) -> str:
    """The HTML a notebook shows for ``df``: wrapped, else transposed or split to fit :data:`WIDTH_PX`."""
    note = f"<p>first {max_rows} of {len(df)} rows</p>" if len(df) > max_rows else ""
    shown = df.head(max_rows)
    if sum(_widths(shown)) <= WIDTH_PX or shown.shape[1] <= 1:
        return f"<div>{_table(shown)}{note}</div>"
    shown = _with_labels(shown)
    flipped = shown.T
    if len(shown) <= shown.shape[1] and sum(_widths(flipped)) <= WIDTH_PX:
        return f"<div><p>(transposed to fit: one column per row)</p>{_table(flipped)}{note}</div>"
    widths = _widths(shown)
    groups: list[list[Any]] = []
    current: list[Any] = []
    used = widths[0]
    for col, width in zip(shown.columns, widths[1:]):
        if current and used + width > WIDTH_PX:
            groups.append(current)
            current, used = [], widths[0]
        current.append(col)
        used += width
    groups.append(current)
    parts = [_table(shown[cols]) for cols in groups]
    return f"<div><p>(columns in {len(parts)} groups to fit)</p>{''.join(parts)}{note}</div>"


# Markdown: the parts of a table row where no break may go (code spans are split instead).
_PROTECTED = re.compile(r"(`[^`]+`|<[^>]*>|\]\([^)]*\)|&\w+;)")


def _code_breaks(span: str) -> str:
    pieces = re.split(r"(?<=[_/])(?=[^\s_/])", span[1:-1])
    return "<wbr>".join(f"`{p}`" for p in pieces if p)


def wrap_markdown(text: str) -> str:
    """``text`` with break opportunities in the cells of its tables (rows starting with ``|``):
    ``<wbr>`` after ``_`` (``\\_`` too) and ``/`` inside words, code spans split around them,
    never inside an HTML tag, a link target or an entity."""
    out = []
    for line in text.splitlines():
        if line.lstrip().startswith("|") and not re.fullmatch(r"\s*\|[\s:|-]*\|?\s*", line):
            line = "".join(
                (_code_breaks(p) if p.startswith("`") else p)
                if _PROTECTED.fullmatch(p)
                else re.sub(r"(\\?_|/)(?=[^\s_/|\\])", r"\1<wbr>", p)
                for p in _PROTECTED.split(line)
            )
        out.append(line)
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def install() -> bool:
    """Show DataFrames and Markdown tables wrapped in this IPython kernel; False outside one."""
    try:
        from IPython import get_ipython
        from IPython.display import Markdown
    except ImportError:
        return False
    shell = get_ipython()
    if shell is None or getattr(shell, "kernel", None) is None:
        return False
    formatters = shell.display_formatter.formatters
    formatters["text/html"].for_type(pd.DataFrame, frame_html)
    formatters["text/markdown"].for_type(Markdown, lambda md: wrap_markdown(md.data))
    return True
