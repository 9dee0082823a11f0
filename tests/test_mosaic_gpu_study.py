"""Notebook 09 (the Mosaic GPU study): its settings refuse bad input by name, a missing compile
environment is "not measured" (never simulated), and one quick run of the notebook writes an
issue-sized summary whose numbers come from the records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from notebook_support import assert_clean_source, run_notebook

from jaxperf import markdown
from jaxperf.compilers.mosaic_gpu import compile as mgpu_compile
from jaxperf.compilers.mosaic_gpu import ir as mgpu_ir
from jaxperf.compilers.mosaic_gpu import toolchain
from jaxperf.mosaic_gpu import MosaicGpuSettings
from jaxperf.paths import PROJECT_ROOT


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (
            dict(compile_variants=("fori u=3",)),
            "unroll=3 is not allowed: expected a divisor of the trip count",
        ),
        (dict(sizes=(200,)), "T=200 is not allowed"),
        (dict(mechanism_sizes=(256, 256)), "mechanism_sizes"),
        (dict(mechanism_sizes=(256, 1024)), r"T among sizes=.*missing \[1024\]"),
        (dict(repeats=9), "repeats=9 is not allowed"),
        (dict(compile_budget_s=0), "compile_budget_s=0 is not allowed"),
        (dict(interpret_variants=("while u=1",)), "variant='while u=1' is not allowed"),
    ],
)
def test_settings_refuse_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        MosaicGpuSettings(**kwargs)


def test_without_the_compile_environment_every_point_is_not_measured(tmp_path, monkeypatch):
    monkeypatch.setenv(toolchain.PYTHON_ENV, str(tmp_path / "no-such-python"))
    assert not toolchain.status().available
    rows = mgpu_compile.compile_points([mgpu_ir.point("fori", 1, 256)], tmp_path)
    assert rows[0]["status"] == "not measured" and "not built" in rows[0]["error"]
    with pytest.raises(ValueError, match="unroll=3 is not allowed"):
        mgpu_ir.point("fori", 3, 256)


def test_notebook_source_is_clean():
    assert_clean_source("09_mosaic_gpu")


def test_notebook_quick_run(tmp_path: Path):
    executed = run_notebook("09_mosaic_gpu", tmp_path, quick=True)
    cells = [c for c in json.loads(executed.read_text())["cells"] if "compile_sweep" in "".join(c["source"])]
    assert any("compile for sm_90a" in str(c.get("outputs")) for c in cells) == toolchain.status().available
    results = tmp_path / "results" / "cpu" / "mosaic_gpu"
    summary = json.loads((results / "summary.json").read_text())
    assert summary["smoke_run"] is True
    assert summary["interpret"]["checked"] == summary["interpret"]["points"] == 2
    lowering = {r["variant"]: r for r in summary["lowering"]}
    assert (
        lowering["fori u=2"]["lowers at T"] == "256, 512"
        and not lowering["scalar_carry u=2"]["does not lower"]
    )
    text = (results / "summary.md").read_text()
    assert markdown.visible_lines(text) <= markdown.MAX_VISIBLE_LINES and "not judged" in text
    assert str(PROJECT_ROOT) not in text  # the toolchain's paths are relative to the project
    if toolchain.status().available:
        assert summary["compiled"] == 4 and summary["mechanism"]["loop_carries"]["fori u=1"] == "f32"
        assert (tmp_path / "figures" / "cpu" / "mosaic_gpu_compile_ms_vs_T.png").exists()
    else:
        assert summary["compiled"] is None and "not measured" in text


def test_the_estimate_line_quotes_the_largest_T_where_both_loops_compiled():
    """The Python loop does not lower at T=65536 (RecursionError): the committed 2026-12-01
    summary read "`fori_loop` issues nanx the Python loop's at T=65536"."""
    from jaxperf.mosaic_gpu import report

    nan = float("nan")
    est = {
        "label": "static estimate",
        "ratios": [
            {"T": 16384, "fori u=1 / python": 7.7, "reporter measured fori / python": 1.23},
            {"T": 32768, "fori u=1 / python": 9.2, "reporter measured fori / python": 1.63},
            {"T": 65536, "fori u=1 / python": nan, "reporter measured fori / python": 2.42},
        ],
        "closest_to_python": [
            {"variant": "hoisted u=1", "ratio": 1.83},
            {"variant": "fori u=4", "ratio": nan},
        ],
    }
    line = report._estimate_line(est)
    assert "nan" not in line
    assert "9.20x the Python loop's at T=32768, the largest T where the Python loop compiled" in line
    assert "1.63x" in line and "fori u=4 n/a" in line


def test_the_recursion_error_becomes_a_bug_report_with_its_numbers():
    from jaxperf.mosaic_gpu import bug_report

    summary = {
        "toolchain": {"jax": "0.12.0.1", "ptxas": "Build cuda_13.5"},
        "python_lower_s": {256: 0.1, 32768: 17.0},
        "lowering_errors": [
            {
                "variant": "fori u=8",
                "T": 256,
                "error_type": "NotImplementedError",
                "error": "unroll",
                "error_site": "",
            },
            {
                "variant": "python",
                "T": 65536,
                "error_type": "RecursionError",
                "error": "maximum recursion depth exceeded",
                "error_site": "layout_inference.py:find_assignments_for (966 of 1000 frames)",
            },
        ],
    }
    text = "\n".join(bug_report.text(summary))
    assert "T=65536 (1024 Python-loop steps)" in text and "layout_inference.py:find_assignments_for" in text
    assert "T=32768 (512 steps): 17.0 s" in text and "jax 0.12.0.1" in text
    repro = bug_report.REPRO.strip().splitlines()
    assert len([line for line in repro if line.strip()]) <= 12 and "range(1024)" in bug_report.REPRO
    assert bug_report.text({"lowering_errors": summary["lowering_errors"][:1]}) == []  # none met: no report


def test_the_compile_figure_keeps_its_text_off_the_data(tmp_path):
    import matplotlib.pyplot as plt
    import pandas as pd

    from jaxperf import figure_rules, plots
    from jaxperf.mosaic_gpu import figures

    compiled = pd.read_csv(PROJECT_ROOT / "results" / "cpu" / "mosaic_gpu" / "compile_points.csv")
    fig, data = figures.compile_vs_T(compiled)
    plots.save(fig, tmp_path, "compile", data, {"backend": "cpu"})
    assert figure_rules.problems(fig) == [] and not fig.axes[0].texts  # no annotation across the data
    assert "RecursionError" in fig.axes[0].get_title(loc="left").replace("\n", " ")
    plt.close(fig)
