"""Where everything lives. Every path in the study hangs off PROJECT_ROOT.

Notebooks write under an *output root*: the project itself when run by hand in
JupyterLab, or a staging folder when ``run_all.sh`` runs them, so that a failed
run never touches the committed ``results/`` and ``figures/``.
"""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS_DIR = PROJECT_ROOT / "notebooks"


def output_root(override: str | os.PathLike | None = None) -> Path:
    """The folder that holds ``results/`` and ``figures/`` for this run.

    Order: the explicit ``override`` (a notebook parameter), then the
    ``JAXPERF_OUTPUT_ROOT`` environment variable, then PROJECT_ROOT.
    """
    chosen = override or os.environ.get("JAXPERF_OUTPUT_ROOT") or PROJECT_ROOT
    return Path(chosen).resolve()


def results_dir(backend: str, study: str, root: str | os.PathLike | None = None) -> Path:
    """``<root>/results/<backend>/<study>/``, created if missing."""
    path = output_root(root) / "results" / backend / study
    path.mkdir(parents=True, exist_ok=True)
    return path


def figures_dir(backend: str, root: str | os.PathLike | None = None) -> Path:
    """``<root>/figures/<backend>/``, created if missing."""
    path = output_root(root) / "figures" / backend
    path.mkdir(parents=True, exist_ok=True)
    return path
