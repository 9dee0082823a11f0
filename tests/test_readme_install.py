"""The README's install lines work as written: run in a fresh clone of this repository, each
in a clean venv whose ``pip`` is the one on PATH, then the fixes import (issue 29: the line
used to name an ``<owner>`` placeholder and a ``./jaxperf`` path that fails inside the clone)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
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
        subprocess.run([python, "-m", "pip", "uninstall", "-y", "-q", "jaxperf"], check=True, timeout=300)
