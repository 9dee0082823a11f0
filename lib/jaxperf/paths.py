"""Where everything lives: every path hangs off PROJECT_ROOT.

Notebooks write ``results/`` and ``figures/`` under the output root (:func:`output_root`): the
notebook's ``output_root`` parameter when not empty (``"."`` or ``"project"``: the committed
results; another relative path is under PROJECT_ROOT), else ``$JAXPERF_OUTPUT_ROOT`` (run_all.sh's
staging folder, published only when a notebook succeeds), else the git-ignored ``.scratch/``, so a
notebook run by hand never overwrites committed results. :func:`relative` and :func:`scrub` keep
this machine's folders out of what an executed notebook prints.
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
    """The folder that holds ``results/`` and ``figures/`` for this run (order: module docstring);
    ValueError naming ``output_root`` when the override is not a path."""
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
    """Where other notebooks' published results live: ``$JAXPERF_PUBLISHED_ROOT`` (run_all.sh's
    output root while it runs), else the project's committed results."""
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
    """``path`` as an executed notebook shows it: relative to ``$JAXPERF_OUTPUT_ROOT`` (where it
    lands once published) or to PROJECT_ROOT when under one, else unchanged."""
    resolved = Path(path).expanduser().resolve()
    roots = [Path(os.environ[ENV_VAR]).expanduser().resolve()] if os.environ.get(ENV_VAR) else []
    for root in [*roots, PROJECT_ROOT]:
        if resolved.is_relative_to(root):
            return resolved.relative_to(root).as_posix() or "."
    return os.fspath(path)


def scrub(text: str) -> str:
    """``text`` with this machine's folders taken out of its paths: ``equinox/_module.py``,
    ``<stdlib>/...``, and relative paths under the output root or the project."""
    found = sysconfig.get_paths()
    prefixes = {found[key]: "<stdlib>/" for key in ("stdlib", "platstdlib")}
    prefixes |= {found["purelib"]: "", found["platlib"]: "", str(PROJECT_ROOT): ""}
    if os.environ.get(ENV_VAR):
        prefixes[str(Path(os.environ[ENV_VAR]).expanduser().resolve())] = ""
    # Longest first: the venv's site-packages and a staging root lie inside the project.
    for prefix in sorted(prefixes, key=len, reverse=True):
        text = text.replace(prefix.rstrip("/") + "/", prefixes[prefix])
    return text
