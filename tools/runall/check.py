"""The checks that need the project's own code, run with the runner's Python before anything
exists: each notebook's settings object built from the parameters it will get, and whether
the backend asked for is attached at all.

They run in a child of this interpreter started with ``-I -S`` (no site-packages: the
standard library and ``lib/`` only), so they behave the same on a fresh clone, in the
project's ``.venv`` or in someone else's environment, and can neither import JAX nor
write anything. Every settings module is importable that way
(tests/test_settings_stdlib.py guards it).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from .options import UsageError

_CHILD = """
import json, sys
sys.path.insert(0, sys.argv[1])
job = json.loads(sys.argv[2])
out = {"rejected": [], "unchecked": [], "missing": None}
for nb in job["settings"]:
    ns = {}
    exec(nb["source"], ns)
    ns.update(nb["injected"])
    try:
        for line in nb["imports"]:
            exec(line, ns)
        cls = eval(nb["cls"], ns)
    except Exception as err:  # not importable with the standard library: checked after the set-up
        out["unchecked"].append({"name": nb["name"], "why": f"{type(err).__name__}: {err}"})
        continue
    try:
        cls.from_parameters(ns)
    except (ValueError, TypeError) as err:
        out["rejected"].append(f"{nb['name']}: {err}")
if job["backend"] != "auto":
    from jaxperf import backend
    out["missing"] = backend.missing(job["backend"])
print(json.dumps(out))
"""


class BackendMissing(Exception):
    """The backend asked for is certainly not attached (run_all.sh exits 4)."""


def run(project: Path, settings: list[dict[str, Any]], backend: str) -> list[dict[str, str]]:
    """Refuse (UsageError) parameters a notebook's settings reject, and (BackendMissing) a
    backend with no device here; return the notebooks whose settings could not be built with the
    standard library (``{"name", "why"}``), for the check inside the environment."""
    job = json.dumps({"settings": settings, "backend": backend})
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-c", _CHILD, str(project / "lib"), job],
        capture_output=True,
        text=True,
        cwd=project,
    )
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise UsageError(f"could not check the notebooks' parameters with {sys.executable}: {tail}")
    out = json.loads(proc.stdout)
    if out["rejected"]:
        raise UsageError("notebook parameters rejected before running: " + "; ".join(out["rejected"]))
    if out["missing"]:
        raise BackendMissing(f"backend '{backend}' is not available here: {out['missing']}")
    return out["unchecked"]
