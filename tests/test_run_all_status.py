"""./run_all.sh makes the whole study (issue 32): the environments the selected notebooks need
are built before any runs, or the run stops with the command that builds them; a notebook that
skipped part of its work (``jaxperf_study.study``'s ``skip``) ends "partial", never "ok". Fake notebooks and a fake
environment (``JAXPERF_NOTEBOOKS_DIR``, ``JAXPERF_ENVIRONMENTS``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

import jaxperf_study.study
from jaxperf.paths import ENV_VAR, PROJECT_ROOT

sys.path.insert(0, str(PROJECT_ROOT / "tools"))

from runall import envs, status  # noqa: E402

RUN_ALL = str(PROJECT_ROOT / "run_all.sh")

BODY = """\
import json, os
from pathlib import Path
root = Path(os.environ["JAXPERF_OUTPUT_ROOT"])
res = root / "results" / backend / "alpha"
res.mkdir(parents=True, exist_ok=True)
skip = os.environ.get("JAXPERF_TEST_SKIP")
parts = [{"part": "the compile", "reason": skip}] if skip else []
(res / "summary.json").write_text(json.dumps({"study": "alpha", "skipped": parts}))
"""

STATUS_MODULE = """\
import os
from pathlib import Path
from types import SimpleNamespace

def status():
    built = Path(os.environ["JAXPERF_TEST_MARKER"]).exists()
    return SimpleNamespace(available=built, reason="" if built else "the fake toolchain is not built")
"""


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """One fake notebook (01) and one fake environment it needs, built by touching a marker."""
    base = tmp_path_factory.mktemp("status")
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell('backend = "auto"\nquick = False\noutput_root = ""\nhost_devices = 8')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell(BODY)]
    nb.metadata["kernelspec"] = {"name": "jaxperf", "display_name": "jaxperf", "language": "python"}
    (base / "nbs").mkdir()
    nbformat.write(nb, base / "nbs" / "01_alpha.ipynb")
    (base / "mods").mkdir()
    (base / "mods" / "fake_toolchain.py").write_text(STATUS_MODULE)
    return base


def env_table(base: Path, build: list[str]) -> dict[str, str]:
    table = base / f"envs-{len(build)}.json"
    item = {
        "name": "the fake toolchain",
        "notebooks": ["01"],
        "status": "fake_toolchain:status",
        "build": build,
    }
    table.write_text(json.dumps([item]))
    return {
        **os.environ,
        "JAXPERF_NOTEBOOKS_DIR": str(base / "nbs"),
        "JAXPERF_ENVIRONMENTS": str(table),
        "JAXPERF_TEST_MARKER": str(base / "marker"),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(base / "mods"), os.environ.get("PYTHONPATH")])),
    }


def run_all(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [RUN_ALL, "--backend", "cpu", *args], capture_output=True, text=True, env=env, timeout=180
    )


def test_a_missing_environment_that_cannot_be_built_stops_the_run_before_any_notebook(setup, tmp_path):
    proc = run_all(
        ["--output-root", str(tmp_path / "out")], env_table(setup, ["sh", "-c", "echo no network; exit 1"])
    )
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "[build] no network" in proc.stdout  # the builder's own output, as it works
    assert "notebook 01 needs the fake toolchain" in proc.stderr
    assert "build it with: sh -c echo no network; exit 1" in proc.stderr and "--allow-partial" in proc.stderr
    assert "=== 01_alpha" not in proc.stdout
    assert not (tmp_path / "out" / "results" / "cpu").exists()


def test_a_built_environment_and_a_skipped_part_make_the_notebook_partial(setup, tmp_path):
    (setup / "marker").unlink(missing_ok=True)
    env = env_table(setup, ["sh", "-c", f"touch '{setup / 'marker'}' && echo built"])
    proc = run_all(
        ["--output-root", str(tmp_path / "out")], {**env, "JAXPERF_TEST_SKIP": "not built: make it"}
    )
    assert "[build] built" in proc.stdout and "the fake toolchain: ready" in proc.stdout
    assert proc.returncode == 6, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "01_alpha                         partial" in proc.stdout
    assert "skipped: cpu/alpha: the compile: not built: make it" in proc.stdout


def test_allow_partial_runs_without_a_missing_environment_then_the_rerun_check(setup, tmp_path):
    (setup / "marker").unlink(missing_ok=True)
    out, committed = tmp_path / "out", tmp_path / "committed"
    (committed / "results" / "cpu").mkdir(parents=True)
    args = ["--output-root", str(out), "--allow-partial", "--compare-to", str(committed / "results" / "cpu")]
    proc = run_all(args, env_table(setup, ["false"]))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    # the rerun check ran after the notebooks: nothing of the README's was rerun by this fake study
    assert "=== rerun check: passed" in proc.stdout and " 0 not rerun." not in proc.stdout
    assert (out / "results" / "rerun_check.md").read_text().startswith("# Rerun check")
    assert "01_alpha                         partial" in proc.stdout
    assert (
        "skipped: ran without the fake toolchain: the build failed (false exited with status 1)"
        in proc.stdout
    )


@pytest.mark.filterwarnings("ignore:os.fork")  # the builder is started with a preexec_fn; JAX is loaded here
def test_an_environment_is_built_once(setup, monkeypatch):
    """Built when missing, then found ready: no second build; a failed build names its command."""
    (setup / "marker").unlink(missing_ok=True)
    for name, value in env_table(setup, ["sh", "-c", f"touch '{setup / 'marker'}'"]).items():
        monkeypatch.setenv(name, value)
    said: list[str] = []
    assert envs.ensure(sys.executable, PROJECT_ROOT, ["01", "02"], False, said.append) == {}
    assert any(line.startswith("run_all.sh: building the fake toolchain for notebook 01") for line in said)
    said.clear()
    assert envs.ensure(sys.executable, PROJECT_ROOT, ["01"], False, said.append) == {}
    assert said == []
    assert envs.ensure(sys.executable, PROJECT_ROOT, ["02"], False, said.append) == {}  # not needed
    (setup / "marker").unlink()
    monkeypatch.setenv("JAXPERF_ENVIRONMENTS", env_table(setup, ["false"])["JAXPERF_ENVIRONMENTS"])
    with pytest.raises(envs.EnvironmentMissing, match="build it with: false"):
        envs.ensure(sys.executable, PROJECT_ROOT, ["01"], False, said.append)
    without = envs.ensure(sys.executable, PROJECT_ROOT, ["01"], True, said.append)
    assert list(without) == ["01"] and "the fake toolchain is not built" in without["01"][0]


def test_needed_environments_follow_the_notebooks():
    # notebook 02 compiles for Triton, Mosaic GPU and Mosaic TPU; no other notebook needs a compiler
    assert {e.status.split(".")[2] for e in envs.needed(["02"])} == {"triton", "mosaic_gpu", "mosaic_tpu"}
    assert envs.needed(["01", "07", "10", "11"]) == []
    assert [e.build for e in envs.needed(["02"]) if e.build] == [("bash", "tools/make_mosaic_gpu_env.sh")]
    assert (PROJECT_ROOT / "tools" / "make_mosaic_gpu_env.sh").is_file()


def test_status_reads_the_skipped_parts_of_published_summaries(tmp_path):
    files = [
        "results/cpu/a/summary.json",
        "results/cpu/b/summary.json",
        "results/cpu/a/x.csv",
        "figures/cpu/a.png",
    ]
    for rel, data in zip(
        files[:2], [{"skipped": [{"part": "p", "reason": "r"}]}, {"skipped": []}], strict=True
    ):
        (tmp_path / rel).parent.mkdir(parents=True)
        (tmp_path / rel).write_text(json.dumps(data))
    assert status.studies(files) == {"cpu/a", "cpu/b"}
    assert status.skipped(tmp_path, files) == ["cpu/a: p: r"]
    (tmp_path / files[1]).write_text("{cut")
    assert status.skipped(tmp_path, files)[1].startswith("cpu/b: its summary.json cannot be read")


def test_a_study_records_what_it_skipped(monkeypatch, tmp_path):
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    study = jaxperf_study.study.start("demo", {"repeats": 1}, backend="cpu", host_devices=8)
    study.skip(
        "compile for sm_90a", "the Mosaic GPU environment is not built: bash tools/make_mosaic_gpu_env.sh"
    )
    jaxperf_study.study.skip(
        "compile for sm_90a", "the Mosaic GPU environment is not built: bash tools/make_mosaic_gpu_env.sh"
    )
    jaxperf_study.study.skip("estimate", "budget spent")  # library code, without the study object
    with pytest.raises(ValueError, match="reason"):
        study.skip("estimate", "  ")
    study.summary({"answer": 1}, "# demo")
    written = json.loads((tmp_path / "results" / "cpu" / "demo" / "summary.json").read_text())
    assert [s["part"] for s in written["skipped"]] == ["compile for sm_90a", "estimate"]
    monkeypatch.setattr(jaxperf_study.study, "_current", None)
    with pytest.raises(RuntimeError, match="no study started"):
        jaxperf_study.study.skip("x", "y")
