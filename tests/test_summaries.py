"""Every committed summary.md is issue-sized (issue 19): at most five answer bullets before
its first folded block, and at most 60 lines a reader sees without opening one."""

from __future__ import annotations

from pathlib import Path

import pytest

from jaxperf_study import pages as markdown

ROOT = Path(__file__).resolve().parents[1]
SUMMARIES = sorted(ROOT.glob("results/*/*/summary.md"))


def test_there_are_summaries_to_check():
    assert SUMMARIES


@pytest.mark.parametrize("path", SUMMARIES, ids=lambda p: p.relative_to(ROOT / "results").parent.as_posix())
def test_a_summary_answers_at_issue_size(path):
    text = path.read_text()
    assert markdown.visible_lines(text) <= markdown.MAX_VISIBLE_LINES, f"{path}: fold more into <details>"
    answer = text.split("<details>")[0]
    bullets = [line for line in answer.splitlines() if line.startswith("- ")]
    assert 1 <= len(bullets) <= markdown.MAX_BULLETS, f"{path}: {len(bullets)} answer bullets"


def test_the_size_check_can_fail():
    long = "## t\n\n" + "\n".join(f"- bullet {i}" for i in range(7)) + "\n"
    assert markdown.visible_lines(long) == 8
    with pytest.raises(ValueError, match="bullets=7"):
        markdown.answer_page("t", [], [f"- b{i}" for i in range(7)], [])
    with pytest.raises(ValueError, match="visible lines"):
        markdown.answer_page("t", ["line"] * 70, ["- b"], [])
