"""The prepared device run (issue 15), tested on a CPU as far as a CPU allows.

The dry run (``tools/device/run_gpu.sh --dry-run``) runs the parts at tiny sizes on
the CPU with Pallas in interpret mode, into a temporary folder, with the modules the
GPU machine lacks hidden; it must produce the layout a GPU run produces, under
``results/cpu``, every record naming its backend, device and versions, and never
claim a GPU number. It runs in the stand-in for the GPU machine's image (the ``alt_python``
fixture: jax/jaxlib 0.11.2 and triton 3.6.0, as that image has), so the device run's code
is checked against the JAX and Triton it will meet there.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tarfile
from pathlib import Path

import pandas as pd
import pytest

from jaxperf_study import records
from jaxperf_study.gpu import report
from jaxperf_study.gpu.settings import PARTS, GpuSettings
from jaxperf_study.jax20909 import vocab

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tools" / "device" / "run_gpu.sh"


def dry_run(out: Path, only: str, python: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("JAXPERF_OUTPUT_ROOT", "OUT")}
    env["TMPDIR"] = str(out.parent)
    return subprocess.run(
        ["bash", str(SCRIPT), "--dry-run", "--only", only, "--out", str(out), "--python", str(python)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def summary_of(where: Path, part: str) -> dict:
    """What ``part`` returned, from its run JSON."""
    return json.loads((where / "results" / "cpu" / "run" / f"{part}.json").read_text())["summary"]


def unpacked(out: Path) -> Path:
    where = out / "unpacked"
    with tarfile.open(out / "jaxperf_gpu_results.tar.gz") as tar:
        tar.extractall(where, filter="data")
    return where


def check_layout(where: Path, parts: list[str]) -> None:
    """results/cpu only (never results/gpu), each part's JSON, every record's provenance."""
    assert sorted(p.name for p in (where / "results").iterdir()) == ["cpu"]
    assert not (where / "figures" / "gpu").exists()
    run_dir = where / "results" / "cpu" / "run"
    for part in parts:
        info = json.loads((run_dir / f"{part}.json").read_text())
        assert info["status"] == "ok", info
        assert info["dry_run"] is True
    csvs = sorted((where / "results" / "cpu").rglob("*.csv"))
    assert csvs
    for csv in csvs:
        _, prov = records.read_records(csv)  # checks the CSV against its sidecar
        assert prov["backend"] == "cpu" and prov["device_kind"] == "cpu", csv
        assert prov["packages"]["jax"] and prov["packages"]["jaxlib"], csv
        assert "differ_from_pins" in prov["versions_vs_pins"], csv
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["dry_run"] is True and summary["backend"] == "cpu"
    text = (run_dir / "summary.md").read_text()
    assert "it measured no GPU" in text and "Measured on" not in text


@pytest.fixture(scope="module")
def every_part_run(tmp_path_factory: pytest.TempPathFactory, alt_python: Path) -> Path:
    """One dry run of every part, shared by the tests below (each dry run takes minutes)."""
    out = tmp_path_factory.mktemp("device") / "out"
    proc = dry_run(out, ",".join(PARTS), alt_python)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out


def test_dry_run_of_the_harness_part_writes_the_gpu_layout_under_cpu(every_part_run: Path) -> None:
    where = unpacked(every_part_run)
    check_layout(where, ["harness"])
    table = pd.read_csv(where / "results" / "cpu" / "loops" / "seed_table.csv")
    assert list(table["T"]) == [128]
    assert not any("GPU" in c for c in table.columns)  # "this run", whatever ran it
    log = (every_part_run / "run_gpu.log").read_text()
    assert "dry=1" in log and "=== harness: exit 0" in log
    parts = {
        p["part"]: p["status"]
        for p in json.loads((where / "results/cpu/run/summary.json").read_text())["parts"]
    }
    assert parts == dict.fromkeys(PARTS, "ok")  # a part left out reads "did not run": see the merge test


def test_unpack_refuses_a_dry_run(every_part_run: Path, tmp_path: Path) -> None:
    env = {**os.environ, "JAXPERF_UNPACK_ROOT": str(tmp_path)}
    proc = subprocess.run(
        ["bash", str(ROOT / "tools/device/unpack.sh"), str(every_part_run)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 1 and "refusing" in proc.stderr
    assert not (tmp_path / "results").exists()


def test_unpack_refuses_a_long_foreign_listing_with_exit_1_even_if_its_reader_quits(
    tmp_path: Path,
) -> None:
    """CI once saw exit 141: the refusal piped the listing into ``head``, and under
    ``pipefail`` a ``head`` that quit first made the writer's SIGPIPE the exit code. A
    ``head`` that exits without reading, past a full pipe, makes that race certain."""
    src = tmp_path / "src"
    (src / "results" / "cpu").mkdir(parents=True)
    for i in range(400):  # a listing past a pipe's 64 KiB, so a writer must meet the quit reader
        (src / "results" / "cpu" / f"{i:03d}{'x' * 200}.json").touch()
    with tarfile.open(tmp_path / "jaxperf_gpu_results.tar.gz", "w:gz") as tar:
        tar.add(src / "results", arcname="results")
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "head").write_text("#!/bin/sh\nexit 0\n")
    (shim / "head").chmod(0o755)
    env = {
        **os.environ,
        "JAXPERF_UNPACK_ROOT": str(tmp_path / "root"),
        "PATH": f"{shim}:{os.environ['PATH']}",
    }
    proc = subprocess.run(
        ["bash", str(ROOT / "tools/device/unpack.sh"), str(tmp_path)], capture_output=True, text=True, env=env
    )
    assert (proc.returncode, "refusing" in proc.stderr) == (1, True), proc.stderr
    assert not (tmp_path / "root").exists()


def test_unpack_puts_a_gpu_run_into_results_gpu(tmp_path: Path) -> None:
    src = tmp_path / "src"
    run_dir = src / "results" / "gpu" / "run"
    run_dir.mkdir(parents=True)
    (src / "figures" / "gpu").mkdir(parents=True)
    summary = {"dry_run": False, "backend": "gpu", "device": "1 x NVIDIA H200 (gpu)", "parts": []}
    (run_dir / "summary.json").write_text(json.dumps(summary))
    back = tmp_path / "back"
    back.mkdir()
    with tarfile.open(back / "jaxperf_gpu_results.tar.gz", "w:gz") as tar:
        tar.add(src / "results", "results")
        tar.add(src / "figures", "figures")
    (back / "run_gpu.log").write_text("log\n")
    dest = tmp_path / "project"
    env = {**os.environ, "JAXPERF_UNPACK_ROOT": str(dest)}
    cmd = ["bash", str(ROOT / "tools/device/unpack.sh"), str(back)]
    assert subprocess.run(cmd, capture_output=True, text=True, env=env).returncode == 0
    assert [p.read_text() for p in (dest / "results/gpu/run").glob("run_gpu.*.log")] == ["log\n"]
    again = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert again.returncode == 1 and "--force" in again.stderr
    (run_dir / "parts.tsv").write_text("dispatch\t0\t40\n")  # a rerun of one part, laid over the first
    with tarfile.open(back / "jaxperf_gpu_results.tar.gz", "w:gz") as tar:
        tar.add(src / "results", "results")
    merged = subprocess.run([*cmd, "--merge"], capture_output=True, text=True, env=env)
    assert merged.returncode == 0, merged.stderr
    assert "dispatch\t0\t40" in (dest / "results/gpu/run/parts.tsv").read_text()
    assert (dest / "results/gpu/run/summary.md").read_text().count("| dispatch | did not run | 0 |") == 1


def test_dry_run_of_every_part(every_part_run: Path) -> None:
    out = every_part_run
    where = unpacked(out)
    check_layout(where, list(PARTS))
    assert (where / "figures" / "cpu" / "loops_seed_ms_vs_T.png").exists()
    # It ran with the image's JAX and Triton (the stand-in), and says so in every record.
    _, prov = records.read_records(where / "results" / "cpu" / "loops" / "harness.csv")
    assert prov["packages"]["jax"] == "0.11.2" and prov["packages"]["triton"] == "3.6.0", prov["packages"]
    # The scalar carry (the XLA:CPU fix) is timed and compiled beside the reporter's loops.
    summary = json.loads((where / "results/cpu/run/summary.json").read_text())
    fix = "scalar_carry u=1"
    assert fix in {r["variant"] for r in summary["compile_compare"] if r["run_harness_compile_ms"]}
    assert "scalar carry compile / exec (this run)" in summary["seed_table"][0]
    # The dispatch part runs one diagnosis of the seed's step (jaxperf.diagnosis.diagnose, as notebook 10 runs it)
    diagnosis = summary_of(where, "dispatch")["diagnosis"]
    assert diagnosis["measured"] is True and diagnosis["kind"] == "eqx.filter_pmap", diagnosis.get("reason")
    head = pd.read_csv(where / "results/cpu/loops/seed_headline.csv", comment="#")
    assert fix in set(head.variant) and "scalar_carry u=2" not in set(head.variant)
    text = (where / "results/cpu/run/summary.md").read_text()
    assert (
        "| scalar\\_carry u=1 |" in text and "scalar\\_carry u=1 |\n|---" in text
    )  # a table row and a column
    # The reporter's kernel written for Mosaic GPU ran (in Mosaic GPU's interpreter, with jax 0.11.2)
    # and the report puts it beside the Triton kernel.
    mosaic = pd.read_csv(where / "results/cpu/loops/mosaic_gpu_variants.csv", comment="#")
    assert list(mosaic.variant)[:2] == ["python", "fori u=1"] and set(mosaic.status) == {"timed"}
    assert set(mosaic.lowering) == {"mosaic_gpu"} and (mosaic.error_vs_tolerance <= 1).all()
    both = {r["variant"]: r for r in summary["triton_vs_mosaic_gpu"]}
    assert both["fori u=1"]["Mosaic GPU ms per call"] > 0 and both["fori u=1"]["Triton ms per call"] > 0


def test_a_real_run_without_a_gpu_fails_and_writes_nothing(tmp_path: Path, alt_python: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("JAX_PLATFORMS", "JAXPERF_OUTPUT_ROOT")}
    env["PYTHONPATH"] = str(ROOT / "lib")
    cmd = [str(alt_python), "-m", "jaxperf_study.gpu.run", "harness", "--output-root", str(tmp_path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 1 and "no CUDA GPU here" in proc.stdout
    assert not any(tmp_path.iterdir())


def test_settings_budgets_fit_one_device_call() -> None:
    full = GpuSettings.from_parameters({})
    assert full.backend == "gpu" and full.mode == "pallas"
    assert {"batch": full.batch, "D": full.D, "dtype": full.dtype} == vocab.SEED_SIZES
    # run_gpu.sh caps the whole run at JAXPERF_DEVICE_TOTAL_S (450 s, under the 8
    # minutes), keeps `reserve` seconds for the report and shrinks the last parts' limits to
    # fit; the budgets plus ~10 s of start-up per part (Python, JAX, the GPU) and the reserve
    # fit inside it, so no part is cut short by the ones before it using their whole budget.
    script = SCRIPT.read_text()
    assert 'total="${JAXPERF_DEVICE_TOTAL_S:-450}"' in script
    reserve = int(re.search(r"^reserve=(\d+)", script, re.M).group(1))
    assert full.total_budget_s() + 10 * len(PARTS) + reserve <= 450
    assert full.budgets["dispatch"] == 50  # the dispatch part's budget is another issue's to change
    dry = GpuSettings.from_parameters({"quick": True})
    assert dry.backend == "cpu" and dry.mode == "pallas_interpret"
    with pytest.raises(ValueError, match="budgets"):
        GpuSettings(budgets={"harness": 10})
    with pytest.raises(ValueError, match="dispatch_seconds_per_cell=0"):
        GpuSettings(dispatch_seconds_per_cell=0)


def test_report_joins_the_compile_records(tmp_path: Path) -> None:
    prov = {"backend": "gpu", "device_kind": "NVIDIA H200", "device_count": 1}
    loops = tmp_path / "results" / "gpu" / "loops"
    rows = [("scalar_carry u=1", 1.1), ("python", 1.0), ("fori u=1", 3.0)]
    records.write_records(
        pd.DataFrame(
            [dict(variant=v, T=2048, status="timed", lower_ms=10.0, compile_ms=90.0) for v, _ in rows]
        ),
        loops / "seed_variants",
        prov,
    )
    records.write_records(
        pd.DataFrame([dict(variant=v, T=2048, ms_per_call=ms) for v, ms in rows]),
        loops / "seed_headline",
        prov,
    )
    compiles = report.compile_table(tmp_path / "results" / "gpu")
    assert list(compiles["run_lower_plus_compile_ms"]) == [100.0, 100.0, 100.0]
    assert list(compiles["variant"]) == ["python", "fori u=1", "scalar_carry u=1"]  # the study's order
    run_dir = report.write(tmp_path, "gpu", dry=False)
    text = (run_dir / "summary.md").read_text()
    assert "did not run" in text  # no part wrote its JSON here
    assert "| 2048 | 1 | 3 | 1.1 |" in text  # the sweep's ms per call: python, fori u=1, scalar_carry u=1


def test_the_gpu_run_measures_the_scalar_carry_beside_the_reporters_loops() -> None:
    from jaxperf_study.gpu.loop_parts import seed_format, sweep_config

    full = GpuSettings()
    fix = ("scalar_carry", 1)
    seed = sweep_config(full, "seed").variants("seed", 65536)
    # the reporter's two loops lead every T's group; the fix at unroll 1 only (the others at every unroll)
    assert seed[:2] == [("python", 1), ("fori", 1)] and fix in seed
    assert [v for v in seed if v[0] == "scalar_carry"] == [fix]
    assert len([v for v in seed if v[0] == "hoisted"]) == len(full.unrolls)
    assert "scalar_carry" not in {f for f, _ in sweep_config(full, "attention").variants("attention", 256)}
    assert full.harness_variants[:3] == ("python", "fori u=1", "scalar_carry u=1")
    # a budget cut loses a middle T: every part measures the extremes first
    for Ts in (full.seed_Ts, full.harness_Ts):
        assert set(Ts[:2]) == {min(Ts), max(Ts)}
    dry = GpuSettings.from_parameters({"quick": True})
    assert (
        fix in sweep_config(dry, "seed").variants("seed", 128) and "scalar_carry u=1" in dry.harness_variants
    )
    # Mosaic GPU: the reporter's two loops first, the fix and the best portable form beside them, the
    # Python loop only where its lowering fits the part (128 steps), the other forms at every T.
    from jaxperf_study.gpu.loop_parts import mosaic_gpu_config

    mosaic = mosaic_gpu_config(full)
    assert mosaic.lowering == "mosaic_gpu" and mosaic.Ts == full.seed_Ts
    assert mosaic.variants("seed", 8192) == [("python", 1), ("fori", 1), fix, ("hoisted", 1)]
    assert mosaic.variants("seed", 16384) == [("fori", 1), fix, ("hoisted", 1)]
    assert "python" in set(mosaic.skipped().variant)
    with pytest.raises(ValueError, match="unroll=3 is not allowed"):
        GpuSettings(mosaic_gpu_variants=("fori u=3",))
    rows = pd.DataFrame(
        [
            dict(T=2048, variant=v, compile_ms=c, ms_per_call=ms)
            for v, c, ms in (
                ("python", 200.0, 2.0),
                ("fori u=1", 190.0, 4.0),
                ("scalar_carry u=1", 195.0, 1.0),
            )
        ]
    )
    table = seed_format(rows).iloc[0]
    assert table["scalar carry compile / exec (this run)"] == "195 ms / 1.000 ms"
    assert table["fori/Python (this run)"] == 2.0 and table["scalar carry/Python (this run)"] == 0.5
    assert "scalar carry compile / exec (this run)" not in seed_format(
        rows[rows.variant != "scalar_carry u=1"]
    )
