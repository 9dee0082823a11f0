"""The README's install lines work as written: run in a fresh clone of this repository, each
in a clean venv whose ``pip`` is the one on PATH, then the fixes import (issue 29: the line
used to name an ``<owner>`` placeholder and a ``./jaxperf`` path that fails inside the clone),
and the tools start where pandas came with the line, else name the extra that brings it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from jaxperf.paths import PROJECT_ROOT

SECTION = "## Use the fixes in your project"


def install_lines(readme: str) -> list[str]:
    """The commands of the first ``bash`` block after :data:`SECTION`, comments stripped."""
    after = readme.split(SECTION, 1)[1]
    block = re.search(r"```bash\n(.*?)```", after, flags=re.S)
    assert block, f"no ```bash block under {SECTION!r}"
    return [line.split("  #")[0].strip() for line in block.group(1).splitlines() if line.strip()]


def test_the_install_lines_name_no_placeholder():
    lines = install_lines((PROJECT_ROOT / "README.md").read_text())
    assert lines and all(line.startswith("pip install ") for line in lines)
    assert not any(re.search(r"<[a-z_-]+>", line) for line in lines)


def test_without_pandas_the_tools_name_the_extra_that_brings_it_and_no_notebook(monkeypatch, capsys):
    """``pip install .`` brings the fixes alone; the tools say which extra to add, and that extra
    brings their tables (pandas), not the study's JupyterLab or papermill (issue 54 item 5)."""
    import importlib.util

    from jaxperf import __main__ as tools

    extras = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert [re.split(r"[<>=\[ ]", r)[0] for r in extras["tools"]] == ["pandas"]
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "pandas" else find_spec(name, *a)
    )
    for command in ("diagnose", "loops"):
        assert tools.main([command, "pkg.mod:make"]) == 2
        assert (
            capsys.readouterr().err.strip()
            == f"jaxperf {command}: needs pandas: pip install 'jaxperf[tools]'"
        )


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, timeout=120)


@pytest.mark.skipif(
    subprocess.run(["git", "-C", str(PROJECT_ROOT), "rev-parse", "HEAD"], capture_output=True).returncode,
    reason="needs the git repository",
)
def test_each_install_line_works_from_a_fresh_clone(tmp_path):
    """One clean venv (the dependencies install once): each line installs jaxperf, the fixes
    import, then jaxperf is uninstalled for the next line."""
    clone = tmp_path / "jaxperf"
    _git("clone", "--quiet", "--no-hardlinks", str(PROJECT_ROOT), str(clone), cwd=tmp_path)
    env_dir = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True, timeout=300)
    env = {
        **os.environ,
        "PATH": f"{env_dir / 'bin'}:{os.environ['PATH']}",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    env.pop("PYTHONPATH", None)
    python = str(env_dir / "bin" / "python")
    for line in install_lines((clone / "README.md").read_text()):
        run = subprocess.run(
            ["bash", "-c", line], cwd=clone, env=env, capture_output=True, text=True, timeout=900
        )
        assert run.returncode == 0, f"{line!r} failed:\n{run.stdout[-1500:]}\n{run.stderr[-1500:]}"
        check = subprocess.run(
            [python, "-c", "import jaxperf; print(jaxperf.cached_filter_jit.__module__)"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert check.returncode == 0 and check.stdout.strip() == "jaxperf.fixes._jit", check.stderr[-1500:]
        pandas = subprocess.run([python, "-c", "import pandas"], capture_output=True).returncode == 0
        assert pandas or "[tools]" not in line, f"{line!r} did not bring pandas"
        tools = subprocess.run(
            [python, "-m", "jaxperf", "diagnose", "--help"], cwd=tmp_path, capture_output=True, text=True
        )
        assert (tools.returncode, "jaxperf[tools]" in tools.stderr) == (
            (0, False) if pandas else (2, True)
        ), line
        subprocess.run([python, "-m", "pip", "uninstall", "-y", "-q", "jaxperf"], check=True, timeout=300)
