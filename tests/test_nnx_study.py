"""The NNX study's building blocks (``jaxperf.nnx``): the variants compute the same thing or
are refused, the probe's rows and ratios, the stage timers sum and update as an ordinary call,
Flax's tests and benchmark read back, and the issue text carries the measured numbers."""

from __future__ import annotations

import jax
import numpy as np
import pandas as pd
import pytest

pytest.importorskip("flax.nnx")

from jaxperf.nnx import flax_sdist, graph_overhead, issue, models, probe, stages, variants  # noqa: E402
from jaxperf.timing_config import TimingConfig  # noqa: E402

TINY = TimingConfig(warmup=1, repeats=2, number=2)
NAMES = ("nnx.jit", "jax.jit split", "cached_nnx_jit")


@pytest.fixture(scope="module")
def rows():
    return probe.run([1, 2], steps=("noop",), names=NAMES, config=TINY)


def test_every_variant_computes_what_nnx_jit_does():
    variants.check_same(models.Problem(depth=1), "train", variants.VARIANTS, calls=2)


def test_a_variant_that_computes_otherwise_is_refused(monkeypatch):
    real = variants.build

    def skipping(problem, step, name):
        built = real(problem, step, name)
        if name == "cached_nnx_jit":
            built.call = lambda: (np.float32(0.0), None)  # never updates the model
        return built

    monkeypatch.setattr(variants, "build", skipping)
    with pytest.raises(ValueError, match="variant='cached_nnx_jit'"):
        variants.check_same(models.Problem(depth=1), "train", NAMES, calls=2)


def test_probe_rows_and_ratios(rows):
    assert set(rows["variant"]) == set(NAMES) and set(rows["depth"]) == {1, 2}
    assert (rows.groupby("depth")["variables"].first().diff().dropna() > 0).all()
    ratios = probe.ratios(rows)
    reference = ratios[ratios["variant"] == variants.REFERENCE]
    assert np.allclose(reference["median"], 1.0) and set(ratios["measure"]) == set(probe.MEASURES)


def test_the_issue_text_carries_the_measured_numbers(rows):
    text = issue.render(rows)
    slope = issue.per_variable_us(rows, "noop", "nnx.jit")
    assert f"`nnx.jit` {slope:.2f} us" in text
    assert "vllm-project/tpu-inference#2607" in text and "cached_nnx_jit" in text
    with pytest.raises(ValueError, match="1 model size"):
        issue.per_variable_us(rows[rows["depth"] == 1], "noop", "nnx.jit")


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


def test_stage_rows_and_totals():
    rows = stages.call_breakdown(models.Problem(depth=1), "noop", calls=3)
    staged = rows[rows["call"] == stages.CALLS[0]]
    assert list(staged[staged["round"] == 0]["stage"]) == list(stages.STAGES)
    totals = stages.call_totals(rows)
    assert set(totals) >= {"staged_sum", "nnx.jit", "sums_to_call"} and totals["clock"] == "cpu_ms"
    with pytest.raises(ValueError, match="clock='gpu_ms'"):
        stages.call_totals(rows, "gpu_ms")


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
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "jaxperf.nnx.flax_plugin"]
    proc = subprocess.run([*cmd, str(tmp_path)], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert json.loads(stats.read_text())["hits"] == 1
