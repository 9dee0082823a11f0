"""Notebook 99 reads what the studies published, never their code, and labels each source."""

from __future__ import annotations

import json
import shutil

import matplotlib.pyplot as plt
import pytest
from notebook_support import assert_clean_source, run_notebook

from jaxperf.answers import figures, report, sources
from jaxperf.answers.settings import AnswersSettings
from jaxperf.paths import PROJECT_ROOT


def _publish(root, study: str) -> None:
    src = PROJECT_ROOT / "results" / "cpu" / study
    shutil.copytree(src, root / "results" / "cpu" / study)


def test_only_what_was_published_is_shown(tmp_path):
    frame, read = sources.seed_ratios(tmp_path)  # nothing published: the reporter's numbers only
    assert set(frame["source"]) == {"reporter A6000"}
    assert {r.path for r in read if r.commit is None} >= {"results/cpu/loops/summary.json"}
    _publish(tmp_path, "loops")
    frame, read = sources.seed_ratios(tmp_path)
    assert {"XLA:CPU", "reporter A6000"} <= set(frame["source"])
    loops = next(r for r in read if r.path == "results/cpu/loops/summary.json")
    assert loops.commit is not None
    xla = frame[frame["source"] == "XLA:CPU"]
    summary = json.loads((tmp_path / "results/cpu/loops/summary.json").read_text())
    # read, not recomputed: the per-pair median the loop study quotes (one value per quantity)
    expected = {r["T"]: r["ratio_pair"]["median"] for r in summary["seed_reproduction"] if r["mode"] == "xla"}
    assert dict(zip(xla["T"], xla["ratio"])) == pytest.approx(expected)
    spread = {r["T"]: r["ratio_pair"]["q25"] for r in summary["seed_reproduction"] if r["mode"] == "xla"}
    assert dict(zip(xla["T"], xla["q25"])) == pytest.approx(spread)


def test_the_retired_time_model_is_no_source(tmp_path):
    """The GPU time model (notebook 08) is retired: neither its predictions nor its summary are read."""
    (tmp_path / "results" / "cpu" / "gpu_model").mkdir(parents=True)  # an old run's summary left behind
    (tmp_path / "results" / "cpu" / "gpu_model" / "summary.json").write_text('{"reporter_table": []}')
    frame, read = sources.seed_ratios(tmp_path)
    assert not any("predict" in kind for kind in sources.KINDS.values())
    assert not any("gpu_model" in r.path or "predictions" in r.path for r in read)
    assert set(frame["source"]) == {"reporter A6000"}


def test_the_headline_figure_draws_measured_ms_ratios_only_each_labelled():
    frame, _ = sources.seed_ratios(PROJECT_ROOT)
    assert {"Triton sm_86", "Mosaic TPU"} <= set(frame["source"])  # in the table
    fig, data = figures.plot_seed_ratio(frame)
    ax = fig.axes[0]
    drawn = [line for line in ax.get_lines() if not line.get_label().startswith("_")]
    assert 1 <= len(drawn) <= sources.MAX_LINES
    assert set(data["source"]) <= set(sources.MEASURED)  # no static estimate, no prediction on this axis
    assert all("(" in line.get_label() for line in drawn)  # "who (what kind of number)"
    assert "measured" in ax.get_ylabel()
    title = ax.get_title(loc="left").replace("\n", " ")
    assert "no GPU ran here" in title or "H200" in set(data["source"])
    interp = data[data["source"] == "Pallas interpret"].sort_values("T").iloc[-1]
    assert f"Pallas interpret {interp.ratio:.2f}x" in title  # the title quotes the plotted (per-pair) value
    assert ax.collections, "the per-pair spread is drawn"
    plt.close(fig)


def test_the_static_estimates_keep_their_own_units():
    counts = sources.static_counts(PROJECT_ROOT)
    assert set(counts["unit"]) == {"SASS instructions per call", "bundles (cycles) per call"}
    fig, data = figures.plot_static(counts)
    labels = [ax.get_ylabel() for ax in fig.axes]
    assert any("SASS instructions" in label for label in labels) and any(
        "bundles" in label for label in labels
    )
    for ax in fig.axes:  # every panel ticks every T, and says which its compiler did not reach
        assert [t.get_text() for t in ax.get_xticklabels()] == [f"{t:g}" for t in sorted(set(counts["T"]))]
    triton = next(ax for ax in fig.axes if ax.get_title(loc="left").startswith("Triton"))
    assert "not compiled at T=1024, 4096" in triton.get_title(loc="left").replace("\n", " ")
    plt.close(fig)


def test_each_column_names_its_unit_and_no_number_is_na():
    frame, read = sources.seed_ratios(PROJECT_ROOT)
    data, text = report.summary(frame, read)
    assert "ratio of ms per call" in data["columns"]["XLA:CPU"]
    assert "ratio of instructions per call" in data["columns"]["Triton sm_86"]
    assert text.count("\n- ") <= 5
    assert "n/a" not in text and "predict" not in text


def test_bad_settings_are_clear_errors():
    with pytest.raises(ValueError, match="sources_backend='tpu'"):
        AnswersSettings(sources_backend="tpu")


def test_source_notebook_is_clean():
    assert_clean_source("99_answers")


@pytest.mark.notebook
def test_the_notebook_runs_and_records_what_it_read(tmp_path):
    run_notebook("99_answers", tmp_path, quick=True)
    summary = json.loads((tmp_path / "results/cpu/answers/summary.json").read_text())
    assert {r["path"] for r in summary["read"]} >= {"results/cpu/loops/summary.json"}
    assert (tmp_path / "figures/cpu/answers_seed_ratio_vs_T.png").stat().st_size > 0
