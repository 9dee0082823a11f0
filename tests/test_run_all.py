"""run_all.sh: its engine's pieces (tools/runall) and a failing notebook that
neither stops the others nor touches results. The hostile cases are in
test_reliability.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from jaxperf.paths import PROJECT_ROOT

sys.path.insert(0, str(PROJECT_ROOT / "tools"))

from runall import fresh, lab, notebooks, publish, pyenv  # noqa: E402
from runall.options import UsageError, parse, resolve_root  # noqa: E402
from test_reliability import fake_notebooks  # noqa: E402

RUN_ALL = str(PROJECT_ROOT / "run_all.sh")


def test_help_lists_every_option():
    proc = subprocess.run([RUN_ALL, "--help"], capture_output=True, text=True)
    assert proc.returncode == 0
    for option in (
        "--backend",
        "--quick",
        "--only",
        "--output-root",
        "--python",
        "--wait",
        "--compare-to",
        "--allow-partial",
        "--all",
        "compare COMMITTED RERUN",
        "-p",
    ):
        assert option in proc.stdout


def test_defaults_and_roots(tmp_path):
    opts = parse([])
    assert (opts.backend, opts.quick, opts.only, opts.timeout, opts.host_devices) == (
        "auto",
        False,
        None,
        7200,
        8,
    )
    assert resolve_root(opts, PROJECT_ROOT) == PROJECT_ROOT
    assert resolve_root(parse(["--quick"]), PROJECT_ROOT) == PROJECT_ROOT / ".quick"
    assert parse(["--timeout=60"]).timeout == 60
    assert parse([], env={"JAXPERF_PYTHON": "/x/python"}).python == "/x/python"


def test_only_selects_exactly_what_it_names(tmp_path):
    nbs = notebooks.discover(fake_notebooks(tmp_path))
    assert [nb.name for nb in notebooks.select(nbs, parse([]))] == ["01_alpha", "02_beta", "03_gamma"]
    assert [nb.name for nb in notebooks.select(nbs, parse(["--only", "03,01"]))] == ["01_alpha", "03_gamma"]
    for bad in ("", "01,99", "01,01", " , "):
        with pytest.raises(UsageError, match="--only"):
            notebooks.select(nbs, parse(["--only", bad]))


def test_params_forwarded_only_where_declared(tmp_path):
    nbs = {nb.number: nb for nb in notebooks.discover(fake_notebooks(tmp_path))}
    opts = parse(["-p", "unroll", "4", "-p", "repeats", "9", "--quick"])
    notebooks.check_params(list(nbs.values()), opts)
    assert notebooks.parameters(nbs["02"], opts, "cpu") == {
        "backend": "cpu",
        "quick": True,
        "host_devices": 8,
        "unroll": 4,
        "repeats": 9,
    }
    assert "unroll" not in notebooks.parameters(nbs["01"], opts, "cpu")


def test_lab_options():
    args = lab.lab_args(["--port", "9999"], PROJECT_ROOT, is_root=True)
    assert args[:2] == ["--port", "9999"]
    assert "--no-browser" in args and "--allow-root" in args
    assert f"--ServerApp.root_dir={PROJECT_ROOT}" in args
    assert "--allow-root" not in lab.lab_args([], PROJECT_ROOT, is_root=False)
    own = lab.lab_args(["--ServerApp.root_dir=/srv"], PROJECT_ROOT, is_root=False)
    assert [a for a in own if "root_dir" in a] == ["--ServerApp.root_dir=/srv"]


def test_version_specifiers():
    assert pyenv.satisfies("0.12.0.1", "==0.12.0.1")
    assert not pyenv.satisfies("0.11.2", "==0.12.0.1")
    assert pyenv.satisfies("2.2.3", ">=2.2") and not pyenv.satisfies("2.1", ">=2.2")
    assert pyenv.pin_report(sys.executable, PROJECT_ROOT) == []  # .venv holds the pins


def test_publish_replaces_the_notebooks_old_set_only(tmp_path):
    root, stage = tmp_path / "root", tmp_path / "root" / ".staging" / "run-1" / "nb"
    for rel in [
        "results/cpu/triton/old.csv",
        "results/cpu/triton_compile/keep.csv",
        "figures/cpu/triton_gone.png",
        "figures/cpu/triton_compile_keep.png",
        "results/cpu/04_t.ipynb",
    ]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("old")
    for rel in ["results/cpu/triton/new.csv", "figures/cpu/triton_new.png", "results/cpu/04_t.ipynb"]:
        (stage / rel).parent.mkdir(parents=True, exist_ok=True)
        (stage / rel).write_text("new")
    publish.publish(root, stage, "04_t", "results/cpu/04_t.ipynb")
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    assert files == [
        "figures/cpu/triton_compile_keep.png",
        "figures/cpu/triton_new.png",
        "results/cpu/04_t.ipynb",
        "results/cpu/triton/new.csv",
        "results/cpu/triton_compile/keep.csv",
    ]
    assert not stage.exists()


def test_python_option_runs_in_another_jax(tmp_path, alt_python):
    python = alt_python
    nbs, out = fake_notebooks(tmp_path / "nbs"), tmp_path / "out"
    env = {**os.environ, "JAXPERF_NOTEBOOKS_DIR": str(nbs)}
    cmd = [RUN_ALL, "--python", str(python), "--backend", "cpu", "--output-root", str(out), "--only", "01"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    if proc.returncode == 3 and "adding dependencies failed" in proc.stderr:
        pytest.skip(f"{python} lacks run dependencies and PyPI is not reachable")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert f"python={python}" in proc.stdout
    assert "differs from the pins" in proc.stdout and "jax 0.11.2 (pinned ==0.12.0.1)" in proc.stdout
    probe = "import jax, triton; print(jax.__version__, triton.__version__)"
    kept = subprocess.run([str(python), "-c", probe], capture_output=True, text=True)
    assert kept.stdout.split() == ["0.11.2", "3.6.0"]  # never touched


def test_lab_serves_the_project_and_prints_its_url():
    import re
    import signal
    import socket
    import time
    import urllib.request

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        [RUN_ALL, "lab", f"--port={port}", "--ServerApp.ip=127.0.0.1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        url = None
        deadline = time.monotonic() + 90
        while url is None and time.monotonic() < deadline:
            line = proc.stdout.readline()
            url = (re.search(r"open (http://\S+)", line) or [None, None])[1] if line else None
        assert url, "no URL printed"
        api = url.replace("/lab?", "/api/contents/results?")
        with urllib.request.urlopen(api, timeout=30) as resp:  # results/ is reachable
            assert resp.status == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 128 + signal.SIGTERM


def test_preflight_builds_each_notebooks_settings_before_any_work():
    check = {
        "name": "01_x",
        "source": 'backend = "auto"\nhost_devices = 8',
        "injected": {"host_devices": 0},
        "imports": ["from jaxperf_study.settings import StudySettings"],
        "cls": "StudySettings",
    }
    with pytest.raises(UsageError, match="01_x: host_devices=0 is not allowed"):
        pyenv.preflight(sys.executable, [check])
    pyenv.preflight(sys.executable, [{**check, "injected": {"host_devices": 2}}])


def _project_with_a_result(tmp_path):
    """A git project whose notebook 01 starts study 'alpha', with a result published from a
    clean commit of it: (project, notebook, the summary's path)."""
    project = tmp_path / "project"
    (project / "lib").mkdir(parents=True)
    (project / "notebooks").mkdir()
    (project / "lib" / "alpha.py").write_text("X = 1\n")
    notebook = project / "notebooks" / "01_alpha.ipynb"
    notebook.write_text('{"cells": [{"source": ["study.start(\\"alpha\\")"]}]}')

    def git(*args):
        subprocess.run(["git", *args], cwd=project, check=True, capture_output=True)

    git("init", "-q")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first")
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=project, capture_output=True, text=True).stdout
    summary = project / "results" / "cpu" / "alpha" / "summary.json"
    summary.parent.mkdir(parents=True)
    (project / "results" / "cpu" / "01_alpha.ipynb").write_text("{}")
    prov = {
        "git": {"commit": commit.strip(), "dirty": False},
        "code": ["lib/alpha.py"],
        "parameters": {"backend": "cpu", "quick": False, "repeats": 3},
        "packages": {"jax": "0.12.0.1"},
        "timestamp_utc": "2026-12-01T00:00:00+00:00",
    }
    summary.write_text(json.dumps({"study": "alpha", "provenance": prov}))
    return project, notebook, summary


def test_a_result_holds_until_its_code_notebook_parameters_versions_or_inputs_change(tmp_path):
    project, notebook, summary = _project_with_a_result(tmp_path)
    params, versions = {"backend": "cpu", "quick": False, "repeats": 3}, {"jax": "0.12.0.1", "numpy": "2"}

    def why(p=params, v=versions):
        return fresh.why_stale(project, project, "cpu", notebook, p, v)

    assert why() is None
    assert "repeats=3 -> 5" in why({**params, "repeats": 5})
    assert "jax 0.12.0.1 -> 0.13.0" in why(v={"jax": "0.13.0"})
    (project / "lib" / "alpha.py").write_text("X = 2\n")  # not committed: still a change
    assert "lib/alpha.py" in why()
    (project / "lib" / "alpha.py").write_text("X = 1\n")
    assert why() is None
    notebook.write_text(notebook.read_text().replace('alpha\\")', 'alpha\\", 2)'))
    assert "notebooks/01_alpha.ipynb" in why()


def test_a_result_whose_input_was_made_again_or_that_came_from_a_dirty_tree_does_not_hold(tmp_path):
    project, notebook, summary = _project_with_a_result(tmp_path)
    doc = json.loads(summary.read_text())
    other = project / "results" / "cpu" / "beta" / "summary.json"
    other.parent.mkdir(parents=True)
    made = {"git": {"commit": "abc", "dirty": False}, "timestamp_utc": "2026-11-30T00:00:00+00:00"}
    other.write_text(json.dumps({"provenance": made}))
    doc["read"] = [{"path": "results/cpu/beta/summary.json", "commit": "abc", "dirty": False}]
    summary.write_text(json.dumps(doc))
    assert fresh.why_stale(project, project, "cpu", notebook, {}, None) is None
    other.write_text(json.dumps({"provenance": {**made, "timestamp_utc": "2026-12-02T00:00:00+00:00"}}))
    assert "beta/summary.json was made again" in fresh.why_stale(project, project, "cpu", notebook, {}, None)
    other.unlink()
    assert "is gone" in fresh.why_stale(project, project, "cpu", notebook, {}, None)
    doc["provenance"]["git"]["dirty"] = True
    summary.write_text(json.dumps(doc))
    assert "dirty tree" in fresh.why_stale(project, project, "cpu", notebook, {}, None)
    (project / "results" / "cpu" / "01_alpha.ipynb").unlink()
    assert fresh.why_stale(project, project, "cpu", notebook, {}, None) == "no published run of it"


def test_all_and_only_are_not_given_together():
    with pytest.raises(UsageError, match="--all with --only"):
        parse(["--all", "--only", "01"])
    assert parse(["--all"]).all and not parse([]).all


def test_a_full_run_reads_the_installed_versions_it_compares_with_a_results_provenance(tmp_path):
    """run_all's freshness check compares the versions a result names with the installed ones: they
    are read in the run's Python (a reader that fails is an error, never an empty mapping, which
    would let a result measured under an older JAX read as current)."""
    import jax
    from runall import main

    versions = main._versions(sys.executable)
    assert versions["jax"] == jax.__version__ and "equinox" in versions
    broken = tmp_path / "python"
    broken.write_text("#!/bin/sh\nexit 3\n")
    broken.chmod(0o755)
    with pytest.raises(RuntimeError, match="package versions"):
        main._versions(str(broken))
