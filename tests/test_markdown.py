"""markdown: one number format, and tables that render on GitHub as written.

Rendered through markdown-it-py (CommonMark, plus GFM tables as GitHub renders
them), with HTML allowed as GitHub allows it: what the reader sees is checked,
not the source text."""

from __future__ import annotations

import math
import re

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from jaxperf import markdown
from jaxperf_study import pages

RENDER = MarkdownIt("commonmark", {"html": True}).enable("table")


def cells(html: str) -> list[str]:
    return re.findall(r"<td>(.*?)</td>", html, flags=re.S)


def test_fmt_stat_median_and_iqr():
    assert markdown.fmt_stat({"median": 1.2345, "q25": 1.0, "q75": 1.5}) == "1.23 [1.00, 1.50]"
    assert markdown.fmt_stat(pd.Series({"median": 10, "q25": 9, "q75": 12}), 1) == "10.0 [9.0, 12.0]"
    assert markdown.fmt_stat({"median": float("nan"), "q25": 1, "q75": 2}) == "n/a"
    assert markdown.fmt_stat({"median": None}) == "n/a"
    assert markdown.fmt_stat(None) == "n/a"
    assert markdown.fmt_stat({"median": 2.0}) == "2.00"


def test_cprofile_names_render_literally_in_a_table():
    # The rows that rendered wrongly in summary.md (issue 9): bold, and a vanished tag.
    df = pd.DataFrame(
        {
            "function": ["Module.__getattribute__", "<generated_flatten_Linear>", "a|b", "*star* `tick`"],
            "ms": [1.5, float("nan"), 2.0, 3.0],
        }
    )
    html = RENDER.render(markdown.table(df))
    assert "<strong>" not in html and "<em>" not in html and "<code>" not in html
    assert cells(html) == [
        "Module.__getattribute__",
        "1.5",
        "&lt;generated_flatten_Linear&gt;",
        "n/a",
        "a|b",
        "2",
        "*star* `tick`",
        "3",
    ]


def test_raw_cells_and_code_spans_keep_their_markdown():
    df = pd.DataFrame({"form": [markdown.Raw("`fori_loop`"), markdown.code("x | y")]})
    assert cells(RENDER.render(markdown.table(df))) == ["<code>fori_loop</code>", "<code>x | y</code>"]


@given(st.text(alphabet=st.characters(codec="ascii", exclude_categories=("Cc",)), max_size=40))
def test_escape_round_trips_any_printable_ascii(text):
    rendered = RENDER.render(markdown.table(pd.DataFrame({"c": [text]})))
    [cell] = cells(rendered)
    expected = (
        text.strip().replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    )
    assert cell == expected


def test_escape_flattens_line_breaks():
    assert markdown.escape("a\nb") == "a b"


def test_smoke_notice_and_verdicts():
    assert pages.smoke_notice(False) == ""
    notice = pages.smoke_notice(True)
    assert "Smoke run" in notice and "goals are not judged" in notice
    assert markdown.verdict(False, quick=True) == "not judged (smoke run)"
    assert markdown.verdict(True, quick=False) == "met"
    assert markdown.verdict(False, quick=False) == "not met"
    assert markdown.verdict(None, quick=False).startswith("n/a")


@pytest.mark.parametrize("value", [math.inf, -0.5, 12345.678])
def test_table_formats_floats(value):
    out = markdown.table(pd.DataFrame({"v": [value]}), floatfmt="{:.2f}")
    assert out.splitlines()[-1] == f"| {value:.2f} |"


def test_a_template_is_filled_from_its_data_and_says_what_is_missing():
    data = {"a": {"b": [{"k": "x", "v": 0.123}, {"k": "y", "v": -0.0004}]}, "n": 1234.5}
    text = "x {{a.b[k=x].v:.2f}}, y {{a.b[k=y].v:.1f}}, n {{n:,.0f}}, gone {{a.c:.1f}}"
    assert pages.fill(text, data) == "x 0.12, y 0.0, n 1,234, gone not measured"
    with pytest.raises(ValueError, match=r"matches 2 elements"):
        pages.lookup({"a": [{"k": 1}, {"k": 1}]}, "a[k=1]")


def test_a_table_cell_not_resolved_shows_its_words_and_the_page_its_why():
    why = "not resolved (its processes disagree: their range is wider than 3× its median)"
    df = pd.DataFrame({"path": ["a", "b"], "it/s": [why, "41 [23, 82]"], "n": [3, 1234]})
    rows = markdown.table(df).splitlines()[2:]
    assert rows == ["| a | not resolved | 3 |", "| b | 41 \\[23, 82\\] | 1234 |"]
    assert "disagree" in markdown.escape(why)  # outside a table the reason stays
