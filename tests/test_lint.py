"""The project's habits, enforced by `./run_all.sh test`: ruff (lint and format)
clean, mypy clean on lib/ (basic mode, configured in pyproject.toml), no module
over 800 lines, and a lock file that agrees with pyproject.toml."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from jaxperf.paths import PROJECT_ROOT

BIN = Path(sys.executable).parent
MAX_LINES = 800
#: A known overrun (path: the length it may not pass); none since fixes/_cached.py was split
#: into the two drop-ins (_jit.py, _pmap.py) and what they share.
KNOWN_LONG: dict[str, int] = {}


def _run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_check_is_clean():
    proc = _run(str(BIN / "ruff"), "check", "--no-cache", "--output-format", "concise", ".")
    assert proc.returncode == 0, (
        f"ruff check found problems (fix: .venv/bin/ruff check --fix):\n{proc.stdout}"
    )


def test_ruff_format_is_clean():
    proc = _run(str(BIN / "ruff"), "format", "--check", "--no-cache", "--output-format", "concise", ".")
    assert proc.returncode == 0, f"files need formatting (fix: .venv/bin/ruff format):\n{proc.stdout}"


def test_mypy_is_clean_on_lib():
    proc = _run(sys.executable, "-m", "mypy", "--no-incremental")
    assert proc.returncode == 0, f"mypy (configured in pyproject.toml) found errors:\n{proc.stdout[-8000:]}"


def test_no_module_over_800_lines():
    long = {
        str(path.relative_to(PROJECT_ROOT)): n
        for path in sorted((PROJECT_ROOT / "lib").rglob("*.py"))
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    }
    over = {p: n for p, n in long.items() if n > KNOWN_LONG.get(p, MAX_LINES)}
    assert not over, (
        f"modules over {MAX_LINES} lines (a concept whole is fine up to that; split by concept beyond): {over}"
    )
    fixed = sorted(set(KNOWN_LONG) - set(long))
    assert not fixed, f"{fixed} no longer run over {MAX_LINES} lines: remove them from KNOWN_LONG"


def _locked() -> dict[str, str]:
    lock = PROJECT_ROOT / "requirements.lock"
    lines = [line for line in lock.read_text().splitlines() if line and not line.startswith("#")]
    return {canonicalize_name(name): version for name, version in (line.split("==") for line in lines)}


@pytest.mark.parametrize("extra", ["", "tools", "study", "dev", "triton", "tpu"])
def test_the_lock_pins_every_requirement_within_its_range(extra):
    project = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]
    wanted = project["optional-dependencies"][extra] if extra else project["dependencies"]
    locked = _locked()
    for line in wanted:
        req = Requirement(line)
        name = canonicalize_name(req.name)
        assert name in locked, f"{req.name} is not in requirements.lock: run .venv/bin/python tools/lock.py"
        assert req.specifier.contains(locked[name], prereleases=True), (
            f"requirements.lock pins {req.name}=={locked[name]}, outside {line!r}: run tools/lock.py"
        )


def _filtered_hash(path: str, content: bytes) -> str:
    """The blob git would store for ``content`` at ``path``: its clean filter applied."""
    return (
        subprocess.run(
            ["git", "hash-object", f"--path={path}", "--stdin"],
            cwd=PROJECT_ROOT,
            input=content,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .strip()
    )


def _clean_after_a_run(source: Path) -> list[str]:
    """What is wrong with ``source`` as git's clean filter sees it (empty: nothing)."""
    import json

    path = str(source.relative_to(PROJECT_ROOT))
    clean = source.read_bytes()
    nb = json.loads(clean)
    # What JupyterLab saves after a run: outputs, counts, widget state, the kernel's language_info.
    nb["metadata"]["language_info"] = {"name": "python", "version": "3.12.1", "mimetype": "text/x-python"}
    nb["metadata"]["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    for number, cell in enumerate(c for c in nb["cells"] if c["cell_type"] == "code"):
        cell["execution_count"] = number + 1
        cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["ran\n"]}]
        cell["metadata"]["execution"] = {"iopub.status.busy": "2026-01-01T00:00:00Z"}
    run = json.dumps(nb, indent=1, ensure_ascii=False).encode() + b"\n"
    problems = []
    if _filtered_hash(path, run) != _filtered_hash(path, clean):
        problems.append(f"{path}: after a run, git would record a change")
    committed = subprocess.run(["git", "show", f"HEAD:{path}"], cwd=PROJECT_ROOT, capture_output=True)
    if committed.returncode == 0:  # committed through the filter: a fixed point of it
        blob = _run("git", "rev-parse", f"HEAD:{path}").stdout.strip()
        if _filtered_hash(path, committed.stdout) != blob:
            problems.append(
                f"{path} was committed with outputs or run metadata: git add --renormalize {path}"
            )
    return problems


def test_a_run_notebook_reaches_git_as_its_clean_source():
    from concurrent.futures import ThreadPoolExecutor

    configured = _run("git", "config", "filter.nbstripout.clean")
    if configured.returncode != 0:
        pytest.skip("the nbstripout git filter is not configured here: run tools/setup_env.sh")
    sources = sorted((PROJECT_ROOT / "notebooks").glob("*.ipynb"))
    assert sources
    # Each check runs the filter (a Python process, seconds each): several at once.
    with ThreadPoolExecutor(max_workers=4) as pool:
        problems = [p for found in pool.map(_clean_after_a_run, sources) for p in found]
    assert not problems, problems
