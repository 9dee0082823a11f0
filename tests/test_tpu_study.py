"""The TPU study's inputs, its not-installed path, and one real compile for a TPU on this CPU."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pandas as pd
import pytest
from notebook_support import assert_clean_source, run_notebook

from jaxperf.compilers.mosaic_tpu import topology
from jaxperf.tpu import dispatch_step, report
from jaxperf.tpu.settings import TpuSettings


@pytest.mark.parametrize("name", ["TPU v3", "v5litepod-8", "v7", "v3:4x4"])
def test_unknown_generation_lists_the_accepted_names(name):
    with pytest.raises(ValueError, match=r"generation=.*expected one of 'v3', 'v4', 'v5e', 'v6e', 'v3:2x2'"):
        topology.resolve(name)
    with pytest.raises(ValueError, match="generation"):
        TpuSettings(generations=("v5e", name))


def test_generations_map_to_the_topologies_libtpu_accepts():
    assert [topology.resolve(g)[1] for g in ("v3", "v4", "v5e", "v6e")] == [
        "v3:2x2",
        "v4:2x2x1",
        "v5e:2x2",
        "v6e:2x2",
    ]
    assert topology.resolve("v5e:1x1") == ("v5e", "v5e:1x1")


def test_settings_check_their_fields_and_show_the_quick_preset():
    with pytest.raises(ValueError, match="sizes"):
        TpuSettings(sizes=(100,))
    with pytest.raises(ValueError, match="kernels"):
        TpuSettings(kernels=("flash",))
    quick = TpuSettings.from_parameters({"quick": True})
    assert quick.generations == ("v5e",) and quick.sizes == (256, 1024)
    assert set(TpuSettings.presets()["parameter"]) == set(TpuSettings.QUICK)


def test_not_installed_path(monkeypatch):
    monkeypatch.setenv(topology.HIDE_ENV, "1")
    status = topology.status()
    assert not status.available and status.reason.startswith("not measured: libtpu not installed")
    summary, markdown = report.not_measured_summary(status)
    assert summary["measured"] is False and "not measured: libtpu not installed" in markdown


def test_hlo_comparison_ignores_names_and_metadata():
    a = '%add.1 = f32[8]{0} add(%p.0, %p.1), metadata={op_name="x"}\nROOT %t = (f32[8]{0}) tuple(%add.1)'
    b = '%add.7 = f32[8]{0} add(%q.3, %q.4), metadata={op_name="y"}\nROOT %u = (f32[8]{0}) tuple(%add.7)'
    c = "%c = f32[1]{0} constant({0})\n" + b
    programs = {name: dispatch_step.instructions(t) for name, t in (("pmap_params", a), ("x", b), ("y", c))}
    table = dispatch_step.compare(programs).set_index("method")
    assert table.loc["x", "same_program"] and not table.loc["y", "same_program"]
    assert table.loc["y", "differences"] == "only y: constant f32[1]"
    assert dispatch_step.fingerprint(programs["x"]) == dispatch_step.fingerprint(programs["pmap_params"])


def test_seed_table_says_why_a_point_has_no_number():
    points = pd.DataFrame(
        [
            dict(
                generation="v3",
                kernel="seed",
                loop_form="python",
                unroll=1,
                T=256,
                status="ok",
                error="",
                compile_ms=120.0,
                us_seed_batch=50.0,
            ),
            dict(
                generation="v3",
                kernel="seed",
                loop_form="fori",
                unroll=1,
                T=256,
                status="error",
                error="JaxRuntimeError: RESOURCE_EXHAUSTED: Ran out of memory in memory space vmem",
                compile_ms=None,
                us_seed_batch=None,
            ),
        ]
    )
    row = report.seed_format_table(points, "v3").iloc[0]
    assert row["Python loop compile / static"] == "120 ms / 0.050 ms"
    assert row["fori_loop compile / static"] == "does not fit VMEM"
    assert row["A6000 (reporter) Python / fori exec"] == "0.317 ms / 0.318 ms"


REAL_COMPILE = textwrap.dedent(
    """
    import json, sys, tempfile
    from jaxperf.compilers.mosaic_tpu import topology
    topology.prepare(tempfile.mkdtemp(), vmem_limit_kib=None)
    import jax
    jax.config.update("jax_platforms", "cpu")
    from jaxperf.tpu import sweep
    point = sweep.Point("v5e:1x1", "seed", "fori", 1, 256)
    rows = sweep.run([point], batch=1, D=64, dtype="bfloat16", repeats=1, repeat_below_s=1,
                     max_compile_s=60, max_total_s=600)
    print(json.dumps(rows.iloc[0].to_dict(), default=str))
    """
)


def test_one_real_compile_for_a_tpu_on_this_cpu():
    if not topology.status().available:
        pytest.skip(topology.status().reason)
    # A fresh process: libtpu reads its dump flags once, when it starts.
    proc = subprocess.run([sys.executable, "-c", REAL_COMPILE], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    row = json.loads(proc.stdout.strip().splitlines()[-1])
    assert row["status"] == "ok" and row["device_kind"] == "TPU v5 lite"
    assert float(row["compile_ms"]) > 0 and int(row["code_bytes"]) > 0
    # T=256: 4 steps of the reporter's loop inside a grid loop of 256/128 programs (+2 stages).
    assert row["loop_bodies"].endswith("x4") and row["inner_trips"] == 4
    assert int(row["cycles"]) > 0 and float(row["us_seed_batch"]) > 0


def test_source_notebook_is_clean():
    assert_clean_source("05_tpu_compile")


@pytest.mark.notebook
def test_notebook_without_libtpu_says_not_measured(tmp_path, monkeypatch):
    monkeypatch.setenv(topology.HIDE_ENV, "1")
    run_notebook("05_tpu_compile", tmp_path, quick=True)
    summary = json.loads((tmp_path / "results" / "cpu" / report.STUDY / "summary.json").read_text())
    assert summary["measured"] is False
    assert summary["reason"].startswith("not measured: libtpu not installed")


def test_dispatch_verdict_names_the_loss_only_difference():
    same_program = pd.DataFrame(
        [
            dict(
                step="noop",
                method="filter_pmap",
                same_program=False,
                differences="only filter_pmap: ROOT tuple tuple of 3 arrays; only pmap_params: constant f32[1]; "
                "only pmap_params: copy f32[1]; only pmap_params: ROOT tuple tuple of 4 arrays",
            ),
            dict(step="train", method="filter_pmap", same_program=True, differences=""),
        ]
    )
    dispatch = pd.DataFrame(
        [dict(step="train", method="cached_filter_pmap", error="NotImplementedError: no .lower")]
    )
    verdict = report.dispatch_verdict(dispatch, same_program)
    assert "noop: filter_pmap differs only in the loss output" in verdict
    assert "train: filter_pmap compile to the same TPU program as pmap_params" in verdict
    assert "cached_filter_pmap did not compile (NotImplementedError: no .lower)" in verdict


def test_plan_compiles_the_reporters_loops_and_the_fixes_first():
    from jaxperf.tpu import sweep

    points = sweep.plan(
        ["v3", "v5e"],
        ["seed"],
        ["python", "fori", "pl_loop", "hand_unrolled", "hoisted"],
        [1, 2],
        [256, 1024],
    )
    order = list(dict.fromkeys(p.variant for p in points))
    assert order == [
        "python",
        "fori u=1",
        "hoisted u=1",
        "hoisted u=2",
        "hand_unrolled u=1",
        "hand_unrolled u=2",
        "fori u=2",
        "pl_loop u=1",
        "pl_loop u=2",
    ]
    # Within a variant and generation, T ascends (the budget rule predicts each T from the last).
    assert [(p.generation, p.T) for p in points[:4]] == [
        ("v3", 256),
        ("v3", 1024),
        ("v5e", 256),
        ("v5e", 1024),
    ]
