"""Where everything lives. Every path in the study hangs off PROJECT_ROOT.

Notebooks write ``results/`` and ``figures/`` under an *output root*, chosen in
this order (:func:`output_root`):

1. the notebook's ``output_root`` parameter, when not empty: ``"."`` or
   ``"project"`` name the project itself (the committed results: only on
   purpose), any other relative path is taken relative to PROJECT_ROOT;
2. the ``JAXPERF_OUTPUT_ROOT`` environment variable: ``run_all.sh`` sets it to
   its staging folder, whose contents it publishes only when a notebook succeeds;
3. otherwise ``.scratch/`` in the project, which git ignores: a notebook run by
   hand in JupyterLab can never overwrite committed results.

What an executed notebook prints should not name the machine that ran it:
:func:`relative` turns a path into the form to show, :func:`scrub` rewrites the
paths inside a text (a cProfile table, an error message).
"""

from __future__ import annotations

import os
import sysconfig
from pathlib import Path

from .errors import bad_value

PROJECT_ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS_DIR = PROJECT_ROOT / "notebooks"
SCRATCH_ROOT = PROJECT_ROOT / ".scratch"
ENV_VAR = "JAXPERF_OUTPUT_ROOT"
# Names that choose the project itself, i.e. the committed results/ and figures/.
PROJECT_NAMES = (".", "project")

_ALLOWED = f'"" (scratch), "." or "project" (the committed results), or a folder path; ${ENV_VAR} when ""'


def output_root(override: str | os.PathLike[str] | None = None) -> Path:
    """The folder that holds ``results/`` and ``figures/`` for this run (see the module
    docstring for the order). Raises ValueError naming ``output_root`` when the
    override is not a path (a number, a list, a string with a NUL byte)."""
    if override is not None and not isinstance(override, (str, os.PathLike)):
        raise bad_value("output_root", override, _ALLOWED)
    chosen = os.fspath(override) if override is not None else ""
    if "\0" in chosen:
        raise bad_value("output_root", override, _ALLOWED)
    if chosen.strip() in PROJECT_NAMES:
        return PROJECT_ROOT
    if chosen:
        return (PROJECT_ROOT / Path(chosen).expanduser()).resolve()
    from_env = os.environ.get(ENV_VAR, "")
    if from_env:
        return Path(from_env).expanduser().resolve()
    return SCRATCH_ROOT


PUBLISHED_ENV_VAR = "JAXPERF_PUBLISHED_ROOT"


def published_root() -> Path:
    """Where the results other notebooks already published live, for a notebook that reads
    them (the cross-study answers): ``run_all.sh``'s output root while it runs (it sets
    ``$JAXPERF_PUBLISHED_ROOT``), else the project, whose committed results a notebook run by
    hand reads (it still writes its own outputs under :func:`output_root`)."""
    from_env = os.environ.get(PUBLISHED_ENV_VAR, "")
    return Path(from_env).expanduser().resolve() if from_env else PROJECT_ROOT


def _make(path: Path, override: str | os.PathLike[str] | None) -> Path:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ValueError(
            f"output_root={override!r}: cannot create {relative(path)} ({err.strerror or err}); "
            f"expected {_ALLOWED}, writable."
        ) from err
    return path


def results_dir(backend: str, study: str, root: str | os.PathLike[str] | None = None) -> Path:
    """``<root>/results/<backend>/<study>/``, created if missing."""
    return _make(output_root(root) / "results" / backend / study, root)


def figures_dir(backend: str, root: str | os.PathLike[str] | None = None) -> Path:
    """``<root>/figures/<backend>/``, created if missing."""
    return _make(output_root(root) / "figures" / backend, root)


def relative(path: str | os.PathLike[str]) -> str:
    """``path`` as an executed notebook should show it, naming no folder of this machine.

    Under ``$JAXPERF_OUTPUT_ROOT`` (run_all.sh's staging folder) it is relative to that
    root, i.e. where the file lands once published (``results/cpu/...``); under the project
    it is relative to PROJECT_ROOT (``.scratch/results/cpu/...``); elsewhere it is ``path``
    unchanged.
    """
    resolved = Path(path).expanduser().resolve()
    roots = [Path(os.environ[ENV_VAR]).expanduser().resolve()] if os.environ.get(ENV_VAR) else []
    for root in [*roots, PROJECT_ROOT]:
        if resolved.is_relative_to(root):
            return resolved.relative_to(root).as_posix() or "."
    return os.fspath(path)


def scrub(text: str) -> str:
    """``text`` with this machine's folders taken out of every path in it: installed
    packages become ``equinox/_module.py``, the standard library ``<stdlib>/...``, files
    under the output root or the project become relative (as :func:`relative`)."""
    prefixes: dict[str, str] = {}
    for key in ("stdlib", "platstdlib"):
        prefixes[sysconfig.get_paths()[key]] = "<stdlib>/"
    for key in ("purelib", "platlib"):
        prefixes[sysconfig.get_paths()[key]] = ""
    prefixes[str(PROJECT_ROOT)] = ""
    if os.environ.get(ENV_VAR):
        prefixes[str(Path(os.environ[ENV_VAR]).expanduser().resolve())] = ""
    # Longest first: the venv's site-packages and a staging root lie inside the project.
    for prefix in sorted(prefixes, key=len, reverse=True):
        text = text.replace(prefix.rstrip("/") + "/", prefixes[prefix])
    return text
