"""Helpers tests import by name: run a notebook as run_all.sh does, check a source notebook
is clean, find machine paths in an executed one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from jaxperf.paths import ENV_VAR, NOTEBOOKS_DIR, PROJECT_ROOT


def run_notebook(name: str, out_root: Path, timeout: int = 900, **parameters) -> Path:
    """Execute notebooks/<name>.ipynb with papermill, outputs under ``out_root``.

    Runs in a subprocess (a fresh kernel, as run_all.sh does) with ``out_root`` as
    ``$JAXPERF_OUTPUT_ROOT``, and returns the executed notebook's path; raises with
    papermill's output if it failed. An explicit ``output_root`` parameter still wins.
    """
    src = NOTEBOOKS_DIR / f"{name}.ipynb"
    executed = out_root / f"{name}.executed.ipynb"
    cmd = [
        sys.executable,
        "-m",
        "papermill",
        str(src),
        str(executed),
        "-k",
        "jaxperf",
        "--cwd",
        str(NOTEBOOKS_DIR),
        "-p",
        "backend",
        "cpu",
    ]
    for key, value in parameters.items():
        cmd += ["-y", json.dumps({key: value})]
    # The output root travels in the environment, as run_all.sh passes it: an injected
    # parameter would print this machine's path in the executed notebook.
    env = {**os.environ, ENV_VAR: str(out_root)}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=PROJECT_ROOT, env=env)
    if proc.returncode != 0:
        raise AssertionError(f"papermill failed for {name}:\n{proc.stderr[-6000:]}")
    return executed


def assert_clean_source(name: str) -> None:
    """A committed source notebook carries no outputs or execution counts."""
    nb = json.loads((NOTEBOOKS_DIR / f"{name}.ipynb").read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert not cell.get("outputs"), f"{name}: a code cell carries outputs"
            assert cell.get("execution_count") is None, f"{name}: a code cell carries an execution count"


def machine_paths(executed: Path) -> list[str]:
    """Absolute paths of this machine (the project, the temp folder, home) that an
    executed notebook's outputs or metadata show; [] when it names none (issue 9).
    Study code keeps them out with ``jaxperf.paths.relative`` / ``paths.scrub``."""
    import re

    roots = sorted({str(PROJECT_ROOT), str(Path.home()), "/tmp/"}, key=len, reverse=True)
    pattern = re.compile("|".join(re.escape(r.rstrip("/")) + r"/[^\s\"'\\<]*" for r in roots))
    nb = json.loads(Path(executed).read_text())
    texts = [json.dumps(nb.get("metadata", {}))]
    texts += [json.dumps(cell.get("outputs", [])) for cell in nb["cells"]]
    return [m.group(0) for text in texts for m in pattern.finditer(text)]
