"""./run_all.sh refuses every bad option before it touches anything (issue 20): no output root,
no ``.staging/run.lock``, no ``.venv``. Each case runs the real notebooks' checks in a fresh
copy of the project (no ``.venv``; its ``tools/setup_env.sh`` is a stub that records that it
ran), with the base interpreter as the runner's Python, as on a fresh clone. No notebook runs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from jaxperf import backend
from jaxperf.paths import PROJECT_ROOT

sys.path.insert(0, str(PROJECT_ROOT / "tools"))

from runall import check  # noqa: E402
from runall.options import LIMITS, UsageError  # noqa: E402

STUB_SETUP = """#!/usr/bin/env bash
# the test's stand-in for the environment set-up: it records that it ran, and fails
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$root/.venv" && echo ran > "$root/.venv/SETUP_RAN"
exit 1
"""


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """The project as a fresh clone would have it (no .venv, results or figures)."""
    dst = tmp_path_factory.mktemp("clone") / "jaxperf"
    dst.mkdir()
    for name in ("lib", "notebooks"):  # read only: linked
        (dst / name).symlink_to(PROJECT_ROOT / name)
    # copied: the engine finds the project from its own path, and set-up is replaced by a stub
    shutil.copytree(PROJECT_ROOT / "tools", dst / "tools", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("run_all.sh", "pyproject.toml"):
        shutil.copy2(PROJECT_ROOT / name, dst / name)
    (dst / "tools" / "setup_env.sh").write_text(STUB_SETUP)
    return dst


def _run(clone: Path, args: list[str], out: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("JAXPERF_PYTHON", "JAXPERF_NOTEBOOKS_DIR")}
    env["PYTHON"] = getattr(sys, "_base_executable", sys.executable)  # not the .venv's
    return subprocess.run(
        [str(clone / "run_all.sh"), "--output-root", str(out), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=out.parents[1],
        timeout=60,
    )


def _untouched(clone: Path, out: Path) -> None:
    assert not out.exists(), "the output root was created"
    assert not (out / ".staging" / "run.lock").exists()
    assert not (clone / ".venv").exists(), "the environment set-up ran"
    assert not (clone / ".quick").exists()


INT_OPTIONS = {
    "--timeout": "seconds per cell",
    "--host-devices": "forced CPU devices",
}
VALUED = (
    "--backend",
    "--only",
    "--output-root",
    "--timeout",
    "--host-devices",
    "--python",
    "-p",
)

# (arguments, exit code, what the message must say)
CASES: list[tuple[list[str], int, list[str]]] = [
    # refused only by a notebook's settings
    (["-p", "repeats", "0"], 2, ["02_pallas_loops: repeats=0 is not allowed", "an integer >= 1"]),
    (["-p", "repeats", "-3"], 2, ["repeats=-3 is not allowed", "an integer >= 1"]),
    (["-p", "mlp_depths", "[]"], 2, ["mlp_depths=[] is not allowed", "a non-empty list of integers >= 1"]),
    (["-p", "mlp_depths", "[4, 0]"], 2, ["mlp_depths[...]=0 is not allowed"]),
    (["--only", "07"], 2, ["--only '07': '07' matches no notebook", "have: 01, 02, 10, 11"]),  # retired
    (
        ["--only", "02", "-p", "compile_targets", "['sm_99']"],
        2,
        ["compile_targets[...]='sm_99' is not allowed"],
    ),
    (
        ["--only", "02", "-p", "compile_Ts", "[100]"],
        2,
        ["02_pallas_loops: compile_Ts[...]=100 is not allowed"],
    ),
    # the value forgotten
    (
        ["-p", "repeats", "--output-root", "R"],
        2,
        ["-p repeats is missing its value", "'--output-root', is an option"],
    ),
    (["-p", "repeats", "-p", "warmup", "1"], 2, ["-p repeats is missing its value", "'-p', is an option"]),
    (["-p", "repeats"], 2, ["-p repeats is missing its value: -p repeats VALUE"]),
    # unknown names
    (["--bogus"], 2, ["unknown option '--bogus'"]),
    (["-p", "nosuch", "1"], 2, ["-p nosuch: no selected notebook declares 'nosuch'"]),
    (["-p", "répéts", "1"], 2, ["-p 'répéts' is not a parameter name"]),
    (["--only", "42"], 2, ["--only '42': '42' matches no notebook", "have: 01, 02"]),
    (["--backend", "metal"], 2, ["--backend 'metal' is not one of auto, cpu, gpu, tpu"]),
    (["-p", "repeats", "²"], 2, ["-p repeats '²': expected int"]),
]
for option in VALUED:  # the value forgotten: the next argument is an option
    CASES.append(([option, "--quick"], 2, [f"{option} is missing its value", "'--quick', is an option"]))
CASES += [
    (["--timeout"], 2, ["--timeout is missing its value: --timeout SECONDS"]),
    (["-p"], 2, ["-p NAME VALUE"]),
]
for option, what in INT_OPTIONS.items():  # non-ASCII digits, zero, negative, huge
    limit = LIMITS[option]
    allowed = f"({what}: an integer from 1 to {limit})"
    for bad in ("²", "٣", "0", "-1"):
        CASES.append(([option, bad], 2, [f"{option} '{bad}' is not a positive integer {allowed}"]))
    CASES.append(([option, str(limit + 1)], 2, [f"{option} '{limit + 1}' is out of range {allowed}"]))


@pytest.mark.parametrize(("args", "rc", "says"), CASES, ids=[" ".join(a) for a, _, _ in CASES])
def test_refused_before_anything_is_touched(clone, tmp_path, args, rc, says):
    out = tmp_path / "out" / "root"
    proc = _run(clone, args, out)
    assert proc.returncode == rc, proc.stderr
    for text in says:
        assert text in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    _untouched(clone, out)


@pytest.mark.skipif(bool(backend.hardware()["gpu"]), reason="this machine has a GPU")
def test_an_absent_gpu_is_refused_before_anything_is_touched(clone, tmp_path):
    out = tmp_path / "out" / "root"
    proc = _run(clone, ["--backend", "gpu"], out)
    assert proc.returncode == 4, proc.stderr
    assert "backend 'gpu' is not available here: no GPU was found" in proc.stderr
    assert "available here: cpu" in proc.stderr and "not measured" in proc.stderr
    assert "AssertionError" not in proc.stderr and "Traceback" not in proc.stderr
    _untouched(clone, out)


def test_good_options_reach_the_set_up_only_after_the_checks(clone, tmp_path):
    """The control: the same copy, valid options, and the stub set-up runs (after the lock)."""
    out = tmp_path / "out" / "root"
    proc = _run(clone, ["--only", "01,02", "-p", "repeats", "2"], out)
    assert proc.returncode == 3, proc.stderr
    assert "environment setup failed" in proc.stderr
    assert out.is_dir() and (out / ".staging").is_dir()
    assert (clone / ".venv" / "SETUP_RAN").exists()
    shutil.rmtree(clone / ".venv")


def test_a_settings_class_the_stdlib_cannot_import_is_left_to_the_environment():
    """A notebook whose settings need more than the standard library (none of the project's)
    is reported for the check after the set-up, not refused and not silently skipped."""
    case = {
        "name": "01_x",
        "source": "backend = 'auto'\nhost_devices = 8",
        "injected": {"host_devices": 2},
        "imports": ["from numpy import NoSuchSettings"],
        "cls": "NoSuchSettings",
    }
    unchecked = check.run(PROJECT_ROOT, [case], "auto")
    assert [u["name"] for u in unchecked] == ["01_x"] and "numpy" in unchecked[0]["why"]
    bad = {**case, "imports": ["from jaxperf_study.settings import StudySettings"], "cls": "StudySettings"}
    with pytest.raises(UsageError, match="01_x: host_devices=0 is not allowed"):
        check.run(PROJECT_ROOT, [{**bad, "injected": {"host_devices": 0}}], "auto")
    assert check.run(PROJECT_ROOT, [bad], "auto") == []


def test_the_usage_text_states_each_limit():
    from runall.options import USAGE

    for option, limit in LIMITS.items():
        line = USAGE[USAGE.index(option) : USAGE.index("\n  --", USAGE.index(option))]
        assert f"1 to {limit}" in line, (option, line)
