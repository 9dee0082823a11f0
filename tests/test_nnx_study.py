"""The NNX study (``jaxperf_study.dispatch.nnx``, notebook 11): its cells go through the diagnosis engine
(every path proved, then timed), the stage timers sum and update as an ordinary call, Flax's
tests and benchmark read back, and the summary and issue text carry the measured numbers."""

from __future__ import annotations

import jax
import numpy as np
import pandas as pd
import pytest

pytest.importorskip("flax.nnx")

from jaxperf_study.dispatch.nnx import cost, flax_sdist, graph_overhead, models, report, stages  # noqa: E402


@pytest.fixture(scope="module")
def swept():
    """Two depths of the no-op step and a tiny heavy case, through the diagnosis engine."""
    from jaxperf_study.dispatch.cost import sweep

    return sweep(
        cost.cells((1, 2), ("noop",), heavy_width=16),
        precision=0.5,
        max_seconds=1,
        min_rounds=2,
        loop_calls=4,
        loop_seconds=0.02,
    )


def test_every_nnx_path_is_proved_and_timed(swept):
    timings, notes = swept
    assert notes.empty
    assert set(timings["method"]) == {*report.PATHS, report.BASELINE}
    assert set(timings["family"]) == {"nnx"} and set(timings["kind"]) == {"mlp", "wide mlp"}
    assert (
        timings.groupby("leaves")["method"].nunique().min() == len(report.PATHS) + 1
    )  # every path at every size


def test_the_summary_and_the_issue_text_carry_the_measured_numbers(swept):
    from types import SimpleNamespace

    timings, notes = swept
    stage_rows = stages.call_breakdown(models.Problem(depth=1), "noop", calls=3)
    overhead = pd.DataFrame([{"mode": "nnx", "depth": 10, "us_per_step": 5.0, "source": "this machine"}])
    summary = report.headline(timings, notes, stage_rows, overhead, None, precision=0.5, quick=False)
    line = summary["per_variable"]["nnx_jit"]
    text = report.render(summary, SimpleNamespace(backend="cpu", device_count=8, device_kind="cpu"))
    own = summary["own_per_variable"]["nnx_jit"]
    assert f"graph mode {own['b_us_per_leaf']:.0f} [{own['b_us_per_leaf_lo']:.0f}," in text
    assert line["processes"] == 1 and "cached_nnx_jit" in text
    assert summary["goals"] and set(summary["waits"][0]) >= {"method", "verdict"}
    acc = pd.DataFrame(summary["accounting"])
    assert set(acc["part"]) == {*report.PARTS, "unexplained", "gap"}  # every part, once per cell
    assert acc[["cpu_ms", "cpu_ms_q25", "cpu_ms_q75"]].notna().all().all()
    assert (acc["cpu_ms_q25"] <= acc["cpu_ms"]).all() and (acc["cpu_ms"] <= acc["cpu_ms_q75"]).all()


def test_the_summary_says_which_host_measure_and_how_many_runs(swept):
    """Its opening sentence names the host measure, the runs and the rerun inflation (it read "not
    measured" for each, as the NNX summary had none of them), and the per-Variable line is host time
    in that measure, not "the thread's CPU" whatever the clock."""
    from types import SimpleNamespace

    from jaxperf import timing

    timings, notes = swept
    stage_rows = stages.call_breakdown(models.Problem(depth=1), "noop", calls=3)
    summary = report.headline(timings, notes, stage_rows, pd.DataFrame(), None, precision=0.5, quick=False)
    assert summary["clock"]["host"] == timing.host_measure(timings) and summary["runs"] == "1"
    text = report.render(summary, SimpleNamespace(backend="cpu", device_count=8, device_kind="cpu"))
    intro = text[: text.index("- **The cost")]
    assert "not measured" not in intro and summary["clock"]["host"] in intro and "in 1 run(s)" in intro
    assert "thread's CPU on this machine" not in text and summary["accounting_clock"] in text


def test_a_staged_call_updates_the_model_as_an_ordinary_call():
    from flax import nnx

    problem = models.Problem(depth=2)
    staged, plain = problem.build(), problem.build()
    fn = models.step_function("train")
    before = [np.asarray(x) for x in jax.tree.leaves(nnx.state(staged[:2]))]
    stages.staged_call(nnx.jit(fn), staged)
    nnx.jit(fn)(*plain)
    left = [np.asarray(x) for x in jax.tree.leaves(nnx.state(staged[:2]))]
    right = [np.asarray(x) for x in jax.tree.leaves(nnx.state(plain[:2]))]
    assert all(np.allclose(a, b) for a, b in zip(left, right)) and len(left) == len(right)
    assert not all(np.allclose(a, b) for a, b in zip(left, before))  # it did update


def test_stage_rows_cover_every_stage_of_every_case():
    rows = stages.breakdowns((1,), ("noop", "train"), rounds=3)
    staged = rows[rows["call"] == stages.CALLS[0]]
    assert list(staged[(staged["round"] == 0) & (staged["step"] == "noop")]["stage"]) == list(stages.STAGES)
    assert set(rows["step"]) == {"noop", "train"} and set(rows["round"]) == {0, 1, 2}


def test_flax_tests_side_by_side(tmp_path):
    report = tmp_path / "r.xml"
    report.write_text(
        "<testsuites><testsuite>"
        '<testcase classname="tests.nnx.a_test.T" name="t1"/>'
        '<testcase classname="tests.nnx.a_test.T" name="t2"><failure/></testcase>'
        '<testcase classname="tests.nnx.a_test.T" name="t3"><skipped/></testcase>'
        "</testsuite></testsuites>"
    )
    shipped = flax_sdist._outcomes(report).assign(mode="nnx.jit")
    dropin = shipped.assign(mode="cached_nnx_jit", outcome=["failed", "failed", "skipped"])
    counts, only = flax_sdist.side_by_side(pd.concat([shipped, dropin]))
    assert only == ["tests.nnx.a_test.T::t1"]
    assert counts.set_index("mode").loc["cached_nnx_jit", "failed"] == 2
    with pytest.raises(ValueError, match="mode='tree'"):
        flax_sdist.run_tests("tree")


def test_graph_overhead_table(monkeypatch):
    with monkeypatch.context() as patch:
        patch.setattr(graph_overhead, "run_script", lambda mode, depth, total_steps: float(depth))
        table = graph_overhead.table([5])
    assert set(table["source"]) == {"this machine", "Flax PR #4399 (published)"}
    with pytest.raises(ValueError, match="mode='all'"):
        graph_overhead.run_script("all", 5)
    with pytest.raises(ValueError, match="depth"):
        graph_overhead.run_script("nnx", 2)


@pytest.mark.parametrize("offline", ["PIP_NO_INDEX", "a pip that fails"])
def test_without_a_network_flax_s_suite_is_a_row_that_says_its_sources_are_not_carried(
    tmp_path, monkeypatch, offline
):
    """On a device with no network (the GPU image: no sdist carried for its Flax), notebook 11's
    table of Flax's benchmark says why it has no numbers instead of failing the notebook."""
    monkeypatch.setattr(flax_sdist, "SDIST_ROOT", tmp_path / "flax-sdist")
    monkeypatch.setattr(flax_sdist, "PROJECT_ROOT", tmp_path)  # no .whl-*/ carried here
    if offline == "PIP_NO_INDEX":
        monkeypatch.setenv("PIP_NO_INDEX", "1")
    else:
        fake = tmp_path / "python"
        fake.write_text("#!/bin/sh\necho 'ERROR: No matching distribution found (no network)' >&2\nexit 1\n")
        fake.chmod(0o755)
        monkeypatch.setattr(flax_sdist.sys, "executable", str(fake))
    with pytest.raises(flax_sdist.SourcesNotCarried, match="flax==0.12.10 .*fetch_wheels.sh --flax 0.12.10"):
        flax_sdist.sdist("0.12.10")
    monkeypatch.setattr(graph_overhead, "run_script", lambda *a, **k: pytest.fail("the script ran"))
    table = graph_overhead.table([10])
    mine = table[table["source"] != "Flax PR #4399 (published)"]
    assert (
        list(mine["source"])
        == ["Flax's suite not run: its sources are not carried"]
        == [graph_overhead.NOT_CARRIED]
    )
    assert mine["us_per_step"].isna().all() and len(table) == 1 + len(graph_overhead.PUBLISHED)
    carried = tmp_path / ".whl-gpu" / f"flax-{__import__('flax').__version__}.tar.gz"
    carried.parent.mkdir()
    with __import__("tarfile").open(carried, "w:gz") as tar:  # a carried sdist of the Flax that runs
        (tmp_path / "src" / "tests" / "nnx").mkdir(parents=True)
        tar.add(tmp_path / "src", arcname=carried.name.removesuffix(".tar.gz"))
    assert (flax_sdist.sdist() / "tests" / "nnx").is_dir()


def test_the_plugin_puts_the_drop_in_under_nnx_jits_name(tmp_path):
    import json
    import os
    import subprocess
    import sys

    (tmp_path / "test_flax_like.py").write_text(
        "import jax.numpy as jnp\n"
        "from flax import nnx\n\n"
        "def test_one():\n"
        "    m = nnx.Dict(w=nnx.Param(jnp.ones(2)))\n"
        "    f = nnx.jit(lambda m: m.w[...] * 2)\n"
        "    assert type(f).__name__ == 'CachedNnxJit'\n"
        "    f(m)\n"
        "    f(m)\n"
    )
    stats = tmp_path / "stats.json"
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "JAXPERF_NNX_STATS": str(stats)}
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "jaxperf_study.dispatch.nnx.flax_plugin",
    ]
    proc = subprocess.run([*cmd, str(tmp_path)], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert json.loads(stats.read_text())["hits"] == 1


def test_source_notebook_is_clean():
    from notebook_support import assert_clean_source

    assert_clean_source("11_flax_nnx")


@pytest.mark.notebook
def test_quick_notebook_run_writes_its_outputs(tmp_path):
    import json

    from notebook_support import run_notebook

    run_notebook("11_flax_nnx", tmp_path, quick=True)
    study = tmp_path / "results" / "cpu" / "nnx"
    summary = json.loads((study / "summary.json").read_text())
    assert summary["quick"] is True and summary["goals"] == {}
    assert {"nnx_jit", "cached_nnx_jit"} <= set(summary["per_variable"])
    assert (tmp_path / "figures" / "cpu" / "nnx_per_variable.png").stat().st_size > 0
    assert "Flax NNX" in (study / "summary.md").read_text()


def test_the_flax_suite_runner_takes_no_argument_and_runs_nothing_for_one(capsys, monkeypatch):
    from jaxperf_study.dispatch.nnx import flax_sdist

    monkeypatch.setattr(flax_sdist, "compare", lambda: pytest.fail("the suite ran"))
    assert flax_sdist.main(["--help"]) == 0 and "Flax's ``nnx.jit`` tests" in capsys.readouterr().out
    assert flax_sdist.main(["--quick"]) == 2 and "'--quick'" in capsys.readouterr().out
