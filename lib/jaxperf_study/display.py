"""How a notebook of the study shows its tables: wrapped at the notebook's width.

A table wider than the notebook column scrolls sideways; what keeps one wide is a name without a
space (``python_compile_ms``) and too many columns. Once :func:`install` has run in a kernel
(``study.start`` calls it), DataFrames (:func:`frame_html`) and Markdown tables
(:func:`wrap_markdown`) get ``<wbr>`` break opportunities and are transposed or split to fit.
Only what is displayed changes: records, summary.md and the DataFrames are untouched.
"""

from __future__ import annotations

import html
import itertools
import re
from typing import Any

import pandas as pd

WIDTH_PX = 820  # the output column of a notebook about 900 px wide, less its padding and a margin
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


def _label_columns(df: pd.DataFrame) -> list[list[str]]:
    """The texts of each column of row labels (one per index level; the level's name first):
    a MultiIndex is shown as one column per level, each with its own padding."""
    levels = df.index.nlevels
    names = list(df.index.names)
    return [
        [str(names[k]) if names[k] is not None else ""]
        + [str(i[k]) if isinstance(i, tuple) else str(i) for i in df.index]
        for k in range(levels)
    ]


def _width(texts: list[str]) -> int:
    return int(CELL_PAD_PX + CHAR_PX * max(max(map(_longest_piece, texts), default=0), 1))


def _widths(df: pd.DataFrame) -> tuple[int, list[int]]:
    """Estimated pixel widths once cells wrap: (all row-label columns together, each column)."""
    labels = sum(_width(texts) for texts in _label_columns(df))
    cols = [
        [" ".join(map(str, c)) if isinstance(c, tuple) else str(c)] + [_cell(v) for v in df[c]]
        for c in df.columns
    ]
    return labels, [_width(texts) for texts in cols]


def _groups(names: list[Any], widths: list[int], base: int) -> list[list[Any]]:
    """``names`` in consecutive groups whose widths, each plus ``base``, fit :data:`WIDTH_PX`."""
    groups: list[list[Any]] = []
    current: list[Any] = []
    used = base
    for name, width in zip(names, widths):
        if current and used + width > WIDTH_PX:
            groups.append(current)
            current, used = [], base
        current.append(name)
        used += width
    groups.append(current)
    return groups


KEY_NAMES = {"T", "unroll", "processes", "process_id", "generation", "target", "repeat", "leaves", "devices"}
#: at most this many leading columns name a row (repeated in every group of a split table)
MAX_LABELS = 4


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


def _fits(df: pd.DataFrame) -> bool:
    labels, widths = _widths(df)
    return labels + sum(widths) <= WIDTH_PX


def frame_html(df: pd.DataFrame, max_rows: int = 60) -> str:
    """The HTML a notebook shows for ``df``: wrapped, else transposed or split to fit :data:`WIDTH_PX`."""
    note = f"<p>first {max_rows} of {len(df)} rows</p>" if len(df) > max_rows else ""
    shown = df.head(max_rows)
    if _fits(shown) or shown.shape[1] <= 1:
        return f"<div>{_table(shown)}{note}</div>"
    shown = _with_labels(shown)
    flipped = shown.T
    if len(shown) <= shown.shape[1] and _fits(flipped):
        return f"<div><p>(transposed to fit: one column per row)</p>{_table(flipped)}{note}</div>"
    if _fits(shown):
        return f"<div>{_table(shown)}{note}</div>"
    labels, widths = _widths(shown)
    parts = [_table(shown[cols]) for cols in _groups(list(shown.columns), widths, labels)]
    return f"<div><p>(columns in {len(parts)} groups to fit)</p>{''.join(parts)}{note}</div>"


# Markdown: the parts of a table row where no break may go (code spans are split instead).
_PROTECTED = re.compile(r"(`[^`]+`|<[^>]*>|\]\([^)]*\)|&\w+;)")


def _code_breaks(span: str) -> str:
    pieces = re.split(r"(?<=[_/])(?=[^\s_/])", span[1:-1])
    return "<wbr>".join(f"`{p}`" for p in pieces if p)


_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_RULE = re.compile(r"\s*\|[\s:|-]*\|?\s*")


def _md_cells(line: str) -> list[str]:
    """The cells of one Markdown table row (pipes escaped as ``\\|`` stay in their cell)."""
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return [c.strip() for c in _CELL_SPLIT.split(inner)]


def _visible(cell: str) -> str:
    """What a Markdown cell shows: no code ticks, link targets, tags or escapes."""
    cell = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", cell)
    cell = re.sub(r"<[^>]*>", "", cell).replace("`", "")
    return re.sub(r"\\(.)", r"\1", cell)


def _split_table(rows: list[str]) -> list[list[str]]:
    """A Markdown table (header, rule, body) as one or more tables that each fit :data:`WIDTH_PX`:
    its leading columns that name a row (text, or a sweep key such as ``T`` by its header: at
    most :data:`MAX_LABELS`) repeat in every group, and the table keeps its indent."""
    cells = [_md_cells(r) for r in rows]
    header, rule, body = cells[0], cells[1], cells[2:]
    n = len(header)
    if n < 2 or any(len(r) != n for r in cells):
        return [rows]
    widths = [_width([_visible(r[k]) for r in [header, *body]]) for k in range(n)]
    if sum(widths) <= WIDTH_PX:
        return [rows]
    numeric = re.compile(r"[-+]?[\d.,]+(e[-+]?\d+)?[x×%]?|—|")
    lead = 0
    while lead < min(MAX_LABELS, n - 1) and (
        _visible(header[lead]) in KEY_NAMES or not all(numeric.fullmatch(_visible(r[lead])) for r in body)
    ):
        lead += 1
    base = sum(widths[:lead])
    groups = _groups(list(range(lead, n)), widths[lead:], base)
    if len(groups) == 1:
        return [rows]

    indent = rows[0][: len(rows[0]) - len(rows[0].lstrip())]

    def row(r: list[str], cols: list[int]) -> str:
        return indent + "| " + " | ".join(r[k] for k in [*range(lead), *cols]) + " |"

    return [[row(r, g) for r in [header, rule, *body]] for g in groups]


def _break_row(line: str) -> str:
    return "".join(
        (_code_breaks(p) if p.startswith("`") else p)
        if _PROTECTED.fullmatch(p)
        else re.sub(r"(\\?_|/)(?=[^\s_/|\\])", r"\1<wbr>", p)
        for p in _PROTECTED.split(line)
    )


def wrap_markdown(text: str) -> str:
    """``text`` with its tables fitted to the notebook: a table wider than :data:`WIDTH_PX` split into
    column groups (:func:`_split_table`), and ``<wbr>`` after ``_`` (``\\_`` too) and ``/`` inside the
    cells' words, code spans split around them, never in an HTML tag, a link target or an entity."""
    out: list[str] = []
    for in_table, run in itertools.groupby(text.splitlines(), key=lambda line: line.lstrip().startswith("|")):
        block = list(run)
        if not in_table:
            out += block
            continue
        tables = _split_table(block) if len(block) >= 2 and _RULE.fullmatch(block[1]) else [block]
        if len(tables) > 1:
            indent = block[0][: len(block[0]) - len(block[0].lstrip())]
            if out and out[-1].strip():
                out.append("")  # the note is a paragraph of its own, not the end of the one before
            out.append(f"{indent}(columns in {len(tables)} groups to fit)")
            out.append("")
        for k, table in enumerate(tables):
            if k:
                out.append("")
            out.extend(line if _RULE.fullmatch(line) else _break_row(line) for line in table)
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def kernel_shell() -> Any:
    """The IPython shell of the kernel this process runs (a notebook's), else None."""
    try:
        from IPython import get_ipython
    except ImportError:  # no IPython at all: certainly not a kernel
        return None
    shell = get_ipython()
    return shell if shell is not None and getattr(shell, "kernel", None) is not None else None


def install() -> bool:
    """Show DataFrames and Markdown tables wrapped in this IPython kernel; False outside one."""
    shell = kernel_shell()
    if shell is None:
        return False
    from IPython.display import Markdown

    formatters = shell.display_formatter.formatters
    formatters["text/html"].for_type(pd.DataFrame, frame_html)
    formatters["text/markdown"].for_type(Markdown, lambda md: wrap_markdown(md.data))
    return True
