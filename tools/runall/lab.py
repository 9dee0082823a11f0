"""``./run_all.sh lab``: JupyterLab on the project root, headless, as root or not.

Adds ``--no-browser``, ``--ServerApp.root_dir=<project>`` (so notebooks/,
results/ and figures/ are all reachable) and, only when running as root,
``--allow-root``; an option the user passes instead wins. Every other option
goes through to ``jupyter lab``. Prints the URL to open once the server is up.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

_ROOT_OPTIONS = (
    "--ServerApp.root_dir",
    "--notebook-dir",
    "--ServerApp.notebook_dir",
    "--NotebookApp.notebook_dir",
)


def lab_args(extra: list[str], project: Path, is_root: bool) -> list[str]:
    """The options given to ``jupyter lab``: the user's, plus ours where they gave none."""
    args = list(extra)

    def given(*names: str) -> bool:
        return any(a == n or a.startswith(n + "=") for a in args for n in names)

    if not given("--no-browser", "--browser", "--ServerApp.open_browser"):
        args.append("--no-browser")
    if not given(*_ROOT_OPTIONS):
        args.append(f"--ServerApp.root_dir={project}")
    if is_root and not given("--allow-root", "--ServerApp.allow_root"):
        args.append("--allow-root")
    return args


def _server_url(pid: int) -> str | None:
    from jupyter_core.paths import jupyter_runtime_dir

    info = Path(jupyter_runtime_dir()) / f"jpserver-{pid}.json"
    try:
        data = json.loads(info.read_text())
    except (OSError, ValueError):
        return None
    token = data.get("token")
    return data["url"].rstrip("/") + "/lab" + (f"?token={token}" if token else "")


def run_lab(extra: list[str], project: Path, venv_bin: Path) -> int:
    """Start JupyterLab, print its URL, and stop it on SIGINT/SIGTERM."""
    cmd = [str(venv_bin / "jupyter"), "lab", *lab_args(extra, project, os.geteuid() == 0)]
    proc = subprocess.Popen(cmd)
    stopping: list[int] = []

    def stop(signum: int, _frame: object) -> None:
        stopping.append(signum)
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        url = _server_url(proc.pid)
        if url:
            print(f"\nrun_all.sh: JupyterLab serves {project} (notebooks/, results/, figures/)", flush=True)
            print(f"run_all.sh: open {url}\n", flush=True)
            break
        time.sleep(0.2)
    rc = proc.wait()
    if stopping:
        return 128 + stopping[0]
    if rc != 0:
        print(f"run_all.sh: jupyter lab exited with status {rc}", file=sys.stderr)
    return rc
