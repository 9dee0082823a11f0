"""Markdown for summaries that are pasted into GitHub issues: one number format,
escaping that survives GitHub's renderer, and the smoke-run notice.

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
from typing import Any, cast

import pandas as pd

# CommonMark lets any ASCII punctuation be backslash-escaped; these are the ones that
# start emphasis, code, links, HTML, entities or strikethrough, or split a table cell.
_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&])")

SMOKE_NOTICE = (
    "**Smoke run** (quick mode: small sizes and few repeats). These numbers show that the "
    "study runs end to end; they measure nothing, and **the goals are not judged**."
)
NOT_JUDGED = "not judged (smoke run)"


def fmt_stat(stats: Mapping[str, Any] | None, digits: int = 2) -> str:
    """``median [q25, q75]`` with ``digits`` decimals; ``n/a`` when ``stats`` is None or
    its median is missing or NaN; the median alone when a quartile is missing.

    ``stats`` is any mapping (dict, pandas row) with ``median``, ``q25`` and ``q75``.
    """
    if stats is None:
        return "n/a"
    median = _number(stats.get("median"))
    if median is None:
        return "n/a"
    q25, q75 = _number(stats.get("q25")), _number(stats.get("q75"))
    if q25 is None or q75 is None:
        return f"{median:.{digits}f}"
    return f"{median:.{digits}f} [{q25:.{digits}f}, {q75:.{digits}f}]"


def _number(value: Any) -> float | None:
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
    """A GitHub-flavoured Markdown table of ``df``, every header and cell escaped."""
    header = "| " + " | ".join(cell(str(c)) for c in df.columns) + " |"
    rule = "|" + "|".join("---" for _ in df.columns) + "|"
    body = ["| " + " | ".join(cell(v, floatfmt) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([header, rule, *body])


def smoke_notice(quick: bool) -> str:
    """The paragraph a summary starts with in a smoke run ("" in a full run)."""
    return SMOKE_NOTICE if quick else ""


def verdict(met: bool | None, quick: bool, *, met_text: str = "met", missed_text: str = "not met") -> str:
    """A goal's verdict: never judged in a smoke run, ``n/a`` when nothing was measured."""
    if quick:
        return NOT_JUDGED
    if met is None:
        return "n/a (not measured)"
    return met_text if met else missed_text


def versus(
    ratio: Mapping[str, Any] | None,
    *,
    tie: str = "ties with",
    faster: str = "is faster than",
    slower: str = "is slower than",
) -> str:
    """How a per-pair ratio reads in a sentence: a tie when its interquartile range holds 1
    (so a rerun cannot flip the stated answer), else faster or slower. ``n/a`` when missing."""
    if ratio is None or _number(ratio.get("median")) is None:
        return "n/a"
    q25, q75 = _number(ratio.get("q25")), _number(ratio.get("q75"))
    lo = q25 if q25 is not None else ratio["median"]
    hi = q75 if q75 is not None else ratio["median"]
    if lo <= 1.0 <= hi:
        return tie
    return faster if lo > 1.0 else slower


def ratio(stats: Mapping[str, Any] | None, digits: int = 2) -> str:
    """A ratio as ``0.44× [0.43, 0.48]`` (median [interquartile range])."""
    if stats is None or _number(stats.get("median")) is None:
        return "n/a"
    q25, q75 = _number(stats.get("q25")), _number(stats.get("q75"))
    spread = f" [{q25:.{digits}f}, {q75:.{digits}f}]" if q25 is not None and q75 is not None else ""
    return f"{stats['median']:.{digits}f}×{spread}"


MAX_BULLETS = 5
MAX_VISIBLE_LINES = 60


def details(title: str, body: list[str] | str) -> list[str]:
    """A folded block (GitHub and Jupyter render Markdown inside it): closed until clicked."""
    lines = body.splitlines() if isinstance(body, str) else list(body)
    return [f"<details><summary>{escape_html(title)}</summary>", "", *lines, "", "</details>", ""]


def escape_html(text: str) -> str:
    import html

    return html.escape(text, quote=False)


def visible_lines(text: str) -> int:
    """Non-blank lines a reader sees before opening any ``<details>`` block."""
    return sum(
        1 for line in re.sub(r"<details>.*?</details>", "", text, flags=re.S).splitlines() if line.strip()
    )


def answer_page(title: str, intro: list[str], bullets: list[str], folded: list[str]) -> str:
    """An issue-sized summary: a title, a few lines of set-up, at most :data:`MAX_BULLETS`
    answer bullets, then everything else folded (``folded``: lines already inside
    :func:`details` blocks). Raises ValueError when the answer would not fit the issue's
    size (more bullets, or more than :data:`MAX_VISIBLE_LINES` visible lines)."""
    bullets = [b for b in bullets if b]
    if len(bullets) > MAX_BULLETS:
        raise ValueError(
            f"bullets={len(bullets)} is not allowed: expected at most {MAX_BULLETS} answer bullets"
        )
    text = "\n".join([f"## {title}", "", *intro, "", *bullets, "", *folded]).rstrip() + "\n"
    if visible_lines(text) > MAX_VISIBLE_LINES:
        raise ValueError(
            f"summary has {visible_lines(text)} visible lines: expected at most {MAX_VISIBLE_LINES}; fold more"
        )
    return text


def fold_sections(lines: list[str]) -> list[str]:
    """Lines with ``## heading`` sections, each section turned into a :func:`details` block
    titled by its heading (text before the first heading is folded under "More")."""
    out: list[str] = []
    title, body = "More", cast(list[str], [])
    for line in lines:
        if line.startswith("## "):
            if any(b.strip() for b in body):
                out += details(title, body)
            title, body = line[3:].strip().strip("`").replace("`", ""), []
        else:
            body.append(line)
    if any(b.strip() for b in body):
        out += details(title, body)
    return out


#: a placeholder of a Markdown template: ``{{path:format}}``, as tools/readme.py reads them
PLACEHOLDER = re.compile(r"\{\{\s*(?P<path>[^:}]+?)\s*(?::(?P<fmt>[^}]*))?\}\}")


def lookup(data: Any, path: str) -> Any:
    """``a.b[k=v].c`` in ``data``: dotted keys (list indices too), ``[k=v,...]`` picking the one
    list element whose fields match; ValueError naming the path when nothing, or more than one
    element, is there."""
    node = data
    for part in re.findall(r"[^.\[]+(?:\[[^\]]*\])?", path):
        key, _, sel = part.partition("[")
        node = node[int(key)] if isinstance(node, list) else (node or {}).get(key)
        if node is None:
            raise ValueError(f"template path {path!r}: nothing at {key!r}")
        if sel:
            pairs = [kv.split("=", 1) for kv in sel.rstrip("]").split(",") if kv]
            hits = [x for x in node if all(str(x.get(k)) == v for k, v in pairs)]
            if len(hits) != 1:
                raise ValueError(f"template path {path!r}: [{sel} matches {len(hits)} elements, not one")
            node = hits[0]
    return node


def fill(template: str, data: Any, missing: str = "not measured") -> str:
    """A Markdown template with every ``{{path:format}}`` filled from ``data`` (:func:`lookup`),
    so the prose lives in a template file and Python computes only the numbers. A path with
    nothing there (a path this run did not time) reads ``missing``."""

    def one(m: re.Match[str]) -> str:
        try:
            value = lookup(data, m["path"])
        except (ValueError, KeyError, IndexError, TypeError):
            return missing
        out = format(value, m["fmt"]) if m["fmt"] else str(value)
        return out[1:] if re.fullmatch(r"-0(\.0*)?%?", out) else out  # a value that rounds to 0 has no sign

    return PLACEHOLDER.sub(one, template)


def template(package: str, name: str) -> str:
    """The text of template ``name`` that ships beside ``package`` (``jaxperf.dispatch``)."""
    from importlib import resources

    return resources.files(package).joinpath("templates", name).read_text()
