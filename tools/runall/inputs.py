"""What notebooks read from the output root although no notebook writes it: the repository's
registered predictions (``results/predictions``, written once before the GPU run they predict,
never edited; notebook 99 reads them beside the published results). A run into another output
root gets a copy of each, so that notebook, and tools/readme.py rendering from that root, read
what the repository registered."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

from .options import UsageError

REGISTERED = (Path("results") / "predictions",)


def _pairs(project: Path, root: Path) -> Iterator[tuple[Path, Path]]:
    """(the repository's registered file, its place under ``root``); none when ``root`` is the project."""
    if root.resolve() == project.resolve():
        return
    for rel in REGISTERED:
        source = project / rel
        for path in sorted(source.rglob("*")) if source.is_dir() else []:
            if path.is_file():
                yield path, root / path.relative_to(project)


def check(project: Path, root: Path) -> None:
    """Refuse (UsageError) an output root holding a registered file that differs from the
    repository's: a registered file is never edited, so it holds another registration, and a
    notebook would read it."""
    for path, target in _pairs(project, root):
        if target.is_file() and target.read_bytes() != path.read_bytes():
            raise UsageError(
                f"{target} differs from the repository's registered {path.relative_to(project)} "
                "(registered files are never edited): remove it, or use a fresh --output-root"
            )


def provide(project: Path, root: Path, say: Callable[[str], None]) -> list[str]:
    """Copy the registered files missing under ``root`` (after :func:`check`); returns them."""
    copied = []
    for path, target in _pairs(project, root):
        if not target.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
            copied.append(str(path.relative_to(project)))
    if copied:
        what = ", ".join(map(str, REGISTERED))
        say(f"run_all.sh: copied the repository's registered {what} into {root} ({len(copied)} files)")
    return copied
