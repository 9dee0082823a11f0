"""The TPU study's reporting: the sweep times itself (the notebook only calls library code), and
every table goes through the escaped Markdown helper, with the smoke-run notice in quick mode."""

from __future__ import annotations

import json
import re
from pathlib import Path

from markdown_it import MarkdownIt

from jaxperf import markdown
from jaxperf.compilers.mosaic_tpu import topology
from jaxperf.jax20909 import vocab
from jaxperf.tpu import report, sweep
from jaxperf.tpu.settings import TpuSettings

NOTEBOOK = Path(__file__).parents[1] / "notebooks" / "05_tpu_compile.ipynb"
RENDER = MarkdownIt("commonmark", {"html": True}).enable("table")


def test_the_notebook_formats_tables_with_the_escaped_helper_and_times_nothing_itself():
    code = "".join(
        "".join(c["source"]) for c in json.loads(NOTEBOOK.read_text())["cells"] if c["cell_type"] == "code"
    )
    assert "markdown_table" not in code and "markdown.table(" in code
    assert "perf_counter" not in code and "import time" not in code


class _Clock:
    """A clock that moves 100 s per reading: every point starts after the budget is spent."""

    def __init__(self) -> None:
        self.readings: list[float] = []

    def __call__(self) -> float:
        self.readings.append(100.0 * len(self.readings))
        return self.readings[-1]


def test_the_sweep_reports_its_own_wall_time(monkeypatch):
    monkeypatch.setattr(topology, "device_kind", lambda name: "TPU v5 lite")
    settings = TpuSettings(
        generations=("v5e",), kernels=("seed",), unrolls=(1,), sizes=(256,), max_total_s=50
    )
    clock = _Clock()
    swept = sweep.run_settings(settings, clock=clock)
    assert set(swept.records.status) == {sweep.OVER_BUDGET}  # nothing compiled
    assert len(swept.points) == len(vocab.LOOP_FORMS) == 6
    # The wall time spans the whole sweep: the first reading of the clock to the last.
    assert len(clock.readings) > 2 and swept.run_s == clock.readings[-1] - clock.readings[0]
    assert swept.describe() == f"6 points in {swept.run_s:.0f} s"


def _summary(quick: bool) -> dict:
    verdict = [
        {
            "generation": "v5e",
            "T": 4096,
            "best portable fix": "hand_unrolled u=8",
            "note": "a | b <x>",
            "fori / python": 13.4,
            "fix / python": 1.35,
            "fix closes the gap": False,
        }
    ]
    return dict(
        libtpu="0.0",
        compiled=1,
        points=2,
        run_s=1.0,
        settings={"quick": quick},
        seed_tables={},
        reporter_dtype=[],
        mechanism=[],
        fix_verdict=verdict,
        clocks=[],
        dispatch_verdict="",
        dispatch=[],
        dispatch_same_program=[],
    )


def test_summary_tables_render_literally_and_a_smoke_run_says_so():
    text = report.summary_markdown(_summary(quick=False))
    html = RENDER.render(text)
    assert re.findall(r"<td>(.*?)</td>", html)[:4] == ["v5e", "4096", "hand_unrolled u=8", "a | b &lt;x&gt;"]
    answer = text[: text.index("<details>")]
    assert "TPU v5e T=4096: `fori_loop` 13.4×, best portable fix `hand_unrolled u=8` 1.35×" in answer
    assert "closes it on no generation" in answer and "not executed" in answer
    assert markdown.visible_lines(text) <= markdown.MAX_VISIBLE_LINES
    assert markdown.SMOKE_NOTICE not in text
    assert markdown.SMOKE_NOTICE in report.summary_markdown(_summary(quick=True))
