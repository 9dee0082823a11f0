"""The study's Markdown pages: the smoke-run notice, issue-sized answer pages with the rest
folded into ``<details>``, and templates whose ``{{path:format}}`` placeholders are filled from
a summary (as ``tools/README.template.md`` is). Re-exports :mod:`jaxperf.markdown`, so a study
module imports this one alone (``from .. import pages as md``)."""

from __future__ import annotations

import html
import re
from typing import Any

from jaxperf.markdown import Raw as Raw
from jaxperf.markdown import cell as cell
from jaxperf.markdown import code as code
from jaxperf.markdown import escape as escape
from jaxperf.markdown import fmt_stat as fmt_stat
from jaxperf.markdown import table as table
from jaxperf.markdown import verdict as verdict

from . import reruns

SMOKE_NOTICE = (
    "**Smoke run** (quick mode: small sizes and few repeats). These numbers show that the "
    "study runs end to end; they measure nothing, and **the goals are not judged**."
)


def smoke_notice(quick: bool) -> str:
    """The paragraph a summary starts with in a smoke run ("" in a full run)."""
    return SMOKE_NOTICE if quick else ""


MAX_BULLETS = 5
MAX_VISIBLE_LINES = 60


def details(title: str, body: list[str] | str) -> list[str]:
    """A folded block (GitHub and Jupyter render Markdown inside it): closed until clicked."""
    lines = body.splitlines() if isinstance(body, str) else list(body)
    summary = html.escape(title, quote=False)
    return [f"<details><summary>{summary}</summary>", "", *lines, "", "</details>", ""]


def visible_lines(text: str) -> int:
    """Non-blank lines a reader sees before opening any ``<details>`` block."""
    return sum(
        1 for line in re.sub(r"<details>.*?</details>", "", text, flags=re.S).splitlines() if line.strip()
    )


def answer_page(title: str, intro: list[str], bullets: list[str], folded: list[str]) -> str:
    """An issue-sized summary: a title, a few lines of set-up, at most :data:`MAX_BULLETS` answer
    bullets, then ``folded`` (lines inside :func:`details` blocks); ValueError for more bullets or
    more than :data:`MAX_VISIBLE_LINES` visible lines."""
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


def ranged(data: Any, path: str, value: Any) -> Any:
    """The {median, lo, hi} a ranged placeholder quotes: ``value`` itself, or for a number its
    siblings ``<field>_lo`` and ``<field>_hi`` (``b_us_per_leaf`` beside ``b_us_per_leaf_lo``)."""
    if isinstance(value, dict) or "." not in path:
        return value
    parent, field = path.rsplit(".", 1)
    found = lookup(data, parent)
    return {"median": value, "lo": found.get(f"{field}_lo"), "hi": found.get(f"{field}_hi")}


def fill(template: str, data: Any, missing: str = "not measured") -> str:
    """A Markdown template with every ``{{path:format}}`` filled from ``data`` (:func:`lookup`),
    so the prose lives in a template file and Python computes only the numbers. A path with
    nothing there (a path this run did not time) reads ``missing``."""

    def one(m: re.Match[str]) -> str:
        try:
            value = lookup(data, m["path"])
        except (ValueError, KeyError, IndexError, TypeError):
            return missing
        if m["fmt"] and reruns.RANGED.match(m["fmt"]):  # a number with its rerun range
            return reruns.quote(ranged(data, m["path"], value), m["fmt"])
        out = format(value, m["fmt"]) if m["fmt"] else str(value)
        return out[1:] if re.fullmatch(r"-0(\.0*)?%?", out) else out  # a value that rounds to 0 has no sign

    return PLACEHOLDER.sub(one, template)


def template(package: str, name: str) -> str:
    """The text of template ``name`` that ships beside ``package`` (``jaxperf_study.dispatch``)."""
    from importlib import resources

    return resources.files(package).joinpath("templates", name).read_text()
