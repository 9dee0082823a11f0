"""Registered predictions: written once, never edited, older than the GPU results they predict.

The first test holds this repository to it; the others prove the check can fail, in a
throwaway git repository."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from jaxperf import records
from jaxperf.gpu_model import h200, registry
from jaxperf.paths import PROJECT_ROOT


def _has_history() -> bool:
    git = ["git", "-C", str(PROJECT_ROOT), "rev-parse"]
    shallow = subprocess.run([*git, "--is-shallow-repository"], capture_output=True, text=True)
    return shallow.returncode == 0 and shallow.stdout.strip() == "false"


def test_this_repositorys_predictions_are_registered_and_older_than_its_gpu_results():
    if not _has_history():
        pytest.skip("needs the git history (a shallow or missing clone cannot tell when a file was added)")
    assert registry.check_registered(PROJECT_ROOT) == []
    names = [meta["name"] for meta, _ in registry.registered(PROJECT_ROOT)]
    assert any(name.startswith("h200_") for name in names), "no H200 prediction is registered"
    for meta, rows in registry.registered(PROJECT_ROOT):
        assert meta["label"].startswith("PREDICTED") and not meta["git"]["dirty"]
        assert {"part", "variant", "T", "status", "predicted_ms", "band_low_ms", "band_high_ms"} <= set(rows)


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "config", "user.email", "t@example.com")
    _git(tmp_path, "config", "user.name", "t")
    (tmp_path / "model.py").write_text("# the model\n")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "model")
    return tmp_path


ROWS = pd.DataFrame(
    [
        dict(
            part="harness",
            variant="python",
            T=256,
            status="ok",
            predicted_ms=1.0,
            band_low_ms=0.8,
            band_high_ms=1.5,
        )
    ]
)


def _commit(root: Path, message: str) -> str:
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", message)
    return _git(root, "rev-parse", "HEAD").strip()


def _gpu_result(root: Path, *, stamp: str, tree: str = "") -> None:
    prov = {"timestamp_utc": stamp, "device_run": {"tree_commit": tree}} if tree else {"timestamp_utc": stamp}
    df = pd.DataFrame([dict(variant="python", T=256, ms_per_call_median=1.2)])
    records.write_records(df, root / "results" / "gpu" / "loops" / "harness", prov)


def test_register_writes_a_new_dated_pair_and_never_overwrites(repo):
    first, csv = registry.register(ROWS, {"device": "x"}, device_key="h200", root=repo, date="2026-12-01")
    assert (first.name, csv.name) == ("h200_2026-12-01.json", "h200_2026-12-01.csv")
    meta = json.loads(first.read_text())
    assert meta["git"]["commit"] == _git(repo, "rev-parse", "HEAD").strip() and meta["rows"] == 1
    second, _ = registry.register(ROWS, {}, device_key="h200", root=repo, date="2026-12-01", allow_dirty=True)
    assert second.name == "h200_2026-12-01_2.json"
    assert json.loads(first.read_text()) == meta  # the first pair is untouched
    (repo / "model.py").write_text("# the model, edited and not committed\n")
    with pytest.raises(RuntimeError, match="uncommitted"):
        registry.register(ROWS, {}, device_key="h200", root=repo, date="2026-12-02")
    with pytest.raises(ValueError, match="device_key"):
        registry.register(ROWS, {}, device_key="h 200", root=repo)


def test_the_check_passes_a_prediction_committed_before_its_results(repo):
    registry.register(ROWS, {}, device_key="h200", root=repo, date="2026-12-01")
    added = _commit(repo, "register")
    _gpu_result(repo, stamp="2999-01-01T00:00:00+00:00", tree=added)
    _commit(repo, "gpu results")
    assert registry.check_registered(repo) == []


def test_the_check_fails_an_uncommitted_or_edited_prediction(repo):
    path, _ = registry.register(ROWS, {}, device_key="h200", root=repo, date="2026-12-01")
    assert any("not committed" in p for p in registry.check_registered(repo))
    _commit(repo, "register")
    path.with_suffix(".csv").write_text(path.with_suffix(".csv").read_text().replace("1.0", "1.1"))
    assert any(
        "changed since" in p and p.endswith("(make a new, dated file)")
        for p in registry.check_registered(repo)
    )


def test_the_check_fails_a_prediction_newer_than_the_results(repo):
    _gpu_result(repo, stamp="2000-01-01T00:00:00+00:00")
    _commit(repo, "gpu results first")
    registry.register(ROWS, {}, device_key="h200", root=repo, date="2026-12-01")
    _commit(repo, "register after")
    problems = registry.check_registered(repo)
    assert any("after results/gpu/loops/harness.json was measured" in p for p in problems)
    assert any("was committed before this prediction" in p for p in problems)


def test_the_check_fails_results_from_a_tree_without_the_prediction(repo):
    before = _git(repo, "rev-parse", "HEAD").strip()
    registry.register(ROWS, {}, device_key="h200", root=repo, date="2026-12-01")
    _commit(repo, "register")
    _gpu_result(repo, stamp="2999-01-01T00:00:00+00:00", tree=before)
    _commit(repo, "gpu results")
    assert any("lacks this prediction" in p for p in registry.check_registered(repo))


def test_measurements_go_beside_their_prediction(repo, tmp_path):
    registry.register(ROWS, {}, device_key="h200", root=repo, date="2026-12-01")
    _gpu_result(repo, stamp="2999-01-01T00:00:00+00:00")
    out = h200.beside_measured(repo / "results" / "gpu", root=repo)
    assert len(out) == 1
    row = out.iloc[0]
    assert (row["part"], row["measured_ms"], row["prediction"]) == ("harness", 1.2, "h200_2026-12-01")
    assert row["measured / predicted"] == pytest.approx(1.2) and bool(row["inside band"])
    assert h200.beside_measured(tmp_path / "nothing", root=repo).empty


def test_the_plan_covers_every_point_the_device_run_measures():
    from jaxperf.gpu import predictions
    from jaxperf.gpu.settings import GpuSettings

    s = GpuSettings()
    plan = pd.DataFrame(predictions.plan(s))
    assert set(plan.loc[plan.part == "harness", "variant"]) == set(s.harness_variants)
    assert set(plan["T"]) == set(s.harness_Ts) == set(s.seed_Ts)
    sweep = plan[plan.part == "loops_seed"]
    assert {"python", "fori u=1", "fori u=16", "hand_unrolled u=8", "scalar_carry u=1"} <= set(sweep.variant)
    assert len(sweep) == len(s.seed_Ts) * len(set(sweep.variant))
    assert {p for p, _ in h200.NOT_PREDICTED} == {
        "loops_attention",
        "compile",
        "dispatch",
        "loops_mosaic_gpu",
    }
    from jaxperf.gpu.settings import PARTS

    assert {p for p, _ in h200.NOT_PREDICTED} | set(plan.part) == set(PARTS)  # every part, named once


def test_the_device_report_puts_measurements_beside_the_registered_prediction(tmp_path):
    from jaxperf.gpu import report

    prov = {"backend": "gpu", "device_kind": "NVIDIA H200", "device_count": 1}
    loops = tmp_path / "results" / "gpu" / "loops"
    records.write_records(
        pd.DataFrame([dict(variant="python", T=2048, ms_per_call=1.0)]), loops / "seed_headline", prov
    )
    run_dir = report.write(tmp_path, "gpu", dry=False)
    beside, _ = records.read_records(run_dir / "measured_vs_predicted")
    row = beside[(beside.part == "loops_seed") & (beside.variant == "python")].iloc[0]
    assert row["prediction"].startswith("h200_") and row["measured_ms"] == 1.0
    assert row["measured / predicted"] == pytest.approx(1.0 / row["predicted_ms"])
    assert "Measured beside the registered prediction" in (run_dir / "summary.md").read_text()
