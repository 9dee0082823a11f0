"""Markdown for what the tools print and the summaries pasted into GitHub issues: one number
format, and escaping that survives GitHub's renderer (the study's pages: :mod:`jaxperf_study.pages`).

GitHub renders Markdown as CommonMark plus tables (GFM), and drops HTML tags it
does not know. So a cProfile row such as ``Module.__getattribute__`` turns
bold and ``<generated_flatten_Linear>`` vanishes unless escaped: every cell of
:func:`table` goes through :func:`escape`, and ``tests/test_markdown.py``
checks the result through markdown-it-py, a CommonMark renderer.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import pandas as pd

# CommonMark lets any ASCII punctuation be backslash-escaped; these are the ones that
# start emphasis, code, links, HTML, entities or strikethrough, or split a table cell.
_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&])")

NOT_JUDGED = "not judged (smoke run)"


def fmt_stat(stats: Mapping[str, Any] | None, digits: int = 2) -> str:
    """``median [q25, q75]`` of a mapping (dict, pandas row) with ``digits`` decimals; ``n/a`` when
    ``stats`` is None or its median is missing or NaN; the median alone when a quartile is missing."""
    if stats is None:
        return "n/a"
    median = number(stats.get("median"))
    if median is None:
        return "n/a"
    q25, q75 = number(stats.get("q25")), number(stats.get("q75"))
    if q25 is None or q75 is None:
        return f"{median:.{digits}f}"
    return f"{median:.{digits}f} [{q25:.{digits}f}, {q75:.{digits}f}]"


def number(value: Any) -> float | None:
    """``value`` as a float; None when it is missing, a bool, not a number, or NaN."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def escape(text: Any) -> str:
    """``text`` as literal Markdown: emphasis, code, link, HTML and table characters are
    backslash-escaped, and line breaks become spaces (a table cell is one line)."""
    flat = " ".join(str(text).splitlines())
    return _SPECIAL.sub(r"\\\1", flat)


class Raw(str):
    """A cell that already is Markdown (a code span, a link): :func:`table` keeps it,
    escaping only its pipes (which would split the cell, even inside a code span)."""


def code(text: Any) -> Raw:
    """``text`` as an inline code span (usable as a table cell)."""
    body = " ".join(str(text).splitlines())
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if body.startswith("`") or body.endswith("`") else ""
    return Raw(f"{fence}{pad}{body}{pad}{fence}")


def cell(value: Any, floatfmt: str = "{:.3g}") -> str:
    """One table cell: floats formatted (NaN as ``n/a``), Raw kept, everything else escaped."""
    if isinstance(value, Raw):
        return " ".join(value.splitlines()).replace("|", "\\|")
    if isinstance(value, float):
        return "n/a" if math.isnan(value) else floatfmt.format(value)
    return escape(value)


def table(df: pd.DataFrame, floatfmt: str = "{:.3g}") -> str:
    """A GitHub-flavoured Markdown table of ``df``, cells escaped; "not resolved (why)" shows its words."""
    header = "| " + " | ".join(cell(str(c)) for c in df.columns) + " |"
    rule = "|" + "|".join("---" for _ in df.columns) + "|"

    def one(v: Any) -> str:
        return cell("not resolved" if str(v).startswith("not resolved (") else v, floatfmt)

    body = ["| " + " | ".join(map(one, row)) + " |" for row in df.itertuples(index=False)]
    return "\n".join([header, rule, *body])


def verdict(met: bool | None, quick: bool, *, met_text: str = "met", missed_text: str = "not met") -> str:
    """A goal's verdict: never judged in a smoke run, ``n/a`` when nothing was measured."""
    if quick:
        return NOT_JUDGED
    if met is None:
        return "n/a (not measured)"
    return met_text if met else missed_text
