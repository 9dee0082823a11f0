"""The output root: checked before use, locked per run, staged, and published
per notebook all or nothing.

A notebook writes into ``<root>/.staging/<run>/<notebook>/`` (a complete tree
of ``results/`` and ``figures/``). Publishing it writes a journal
``<root>/.staging/publish-<notebook>.json`` (fsynced) naming every file to
install and every old file of that notebook to remove, then renames file by
file and deletes the journal. Once the journal exists the publish always rolls
forward: a run that finds a journal (a SIGKILL or power cut mid-publish)
finishes it before anything else, so readers end with the old set or the new
set, never a mix. SIGINT/SIGTERM are held during the few milliseconds of a
publish (see ``execute.deferred_signals``).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from .options import UsageError

STAGING = ".staging"
LOCK = "run.lock"


def check_root(root: Path, option: str = "--output-root") -> Path:
    """Create ``root`` if needed and prove it writable; a clear UsageError if not."""
    shown = f"{option} '{root}'"
    if root.exists() and not root.is_dir():
        raise UsageError(f"{shown} is a file, not a folder")
    try:
        root.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=root, prefix=".jaxperf-write-probe.")
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        why = {errno.EROFS: "it is on a read-only file system", errno.EACCES: "permission denied"}
        reason = why.get(err.errno, err.strerror or str(err))
        raise UsageError(f"{shown} is not writable: {reason} ({err.filename or root})") from err
    return root.resolve()


class RootLock:
    """One run per output root: an flock on ``<root>/.staging/run.lock``, released
    by the kernel when the holder exits however it exits (no stale lock)."""

    def __init__(self, root: Path, command: str) -> None:
        self.path = root / STAGING / LOCK
        self.command = command
        self.fd = -1

    def holder(self) -> str:
        try:
            return self.path.read_text().strip() or "unknown"
        except OSError:
            return "unknown"

    def acquire(self, wait: bool, on_wait=print) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not wait:
                os.close(self.fd)
                raise LockedError(
                    f"another run is using output root {self.path.parent.parent} "
                    f"({self.holder()}); wait for it, or pass --wait to queue behind it"
                ) from None
            on_wait(f"run_all.sh: waiting for the run holding {self.path.parent.parent} ({self.holder()})")
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, f"pid {os.getpid()}: {self.command}\n".encode(), 0)

    def release(self) -> None:
        if self.fd >= 0:
            os.ftruncate(self.fd, 0)
            os.close(self.fd)
            self.fd = -1


class LockedError(Exception):
    """The output root is held by another run (exit 5)."""


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _files(tree: Path) -> list[str]:
    return sorted(str(p.relative_to(tree)) for p in tree.rglob("*") if p.is_file() or p.is_symlink())


def _owned_old_files(root: Path, staged: list[str], executed: str) -> list[str]:
    """The files of the previous publish of the same notebook: its executed copy,
    each study folder it writes, and the figures named after those studies (a
    figure belongs to the longest study name that prefixes it)."""
    old = {executed} if (root / executed).is_file() else set()
    studies: dict[str, set[str]] = {}  # backend -> study names written now
    for rel in staged:
        parts = Path(rel).parts
        if len(parts) >= 4 and parts[0] == "results":
            studies.setdefault(parts[1], set()).add(parts[2])
    for backend, mine in studies.items():
        for study in mine:
            folder = root / "results" / backend / study
            if folder.is_dir():
                old.update(str(p.relative_to(root)) for p in folder.rglob("*") if p.is_file())
        results = root / "results" / backend
        known = {p.name for p in results.iterdir() if p.is_dir()} | mine if results.is_dir() else mine
        figures = root / "figures" / backend
        for fig in figures.iterdir() if figures.is_dir() else []:
            owners = [s for s in known if fig.name.startswith(s + "_")]
            if fig.is_file() and owners and max(owners, key=len) in mine:
                old.add(str(fig.relative_to(root)))
    return sorted(old - set(staged))


def publish(
    root: Path,
    stage: Path,
    name: str,
    executed: str,
    crash_after: int | None = None,
    keep_records: bool = False,
) -> list[str]:
    """Install the complete staged tree ``stage`` into ``root`` as one unit.

    ``executed`` is the executed notebook's path relative to the tree. Returns
    the installed files (relative). ``crash_after`` (tests only) stops the
    process after that many renames, as a SIGKILL would. ``keep_records`` (a render):
    of the notebook's old files only its figures are removed; its records stay.
    """
    staged = _files(stage)
    journal = root / STAGING / f"publish-{name}.json"
    old = _owned_old_files(root, staged, executed)
    if keep_records:
        old = [rel for rel in old if rel.startswith("figures/")]
    payload = {"stage": str(stage), "install": staged, "remove": old}
    tmp = journal.with_suffix(".tmp")
    with open(tmp, "w") as handle:
        json.dump(payload, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, journal)
    _fsync_dir(journal.parent)
    _roll_forward(root, journal, crash_after)
    return staged


def _roll_forward(root: Path, journal: Path, crash_after: int | None = None) -> None:
    """Finish a publish from its journal; safe to repeat after any interruption."""
    payload = json.loads(journal.read_text())
    stage, done = Path(payload["stage"]), 0
    for rel in payload["install"]:
        src = stage / rel
        if src.exists() or src.is_symlink():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            os.replace(src, root / rel)
            done += 1
            if crash_after is not None and done >= crash_after:
                os._exit(137)
    for rel in payload["remove"]:
        (root / rel).unlink(missing_ok=True)
    for rel in {str(Path(r).parent) for r in payload["install"]}:
        _fsync_dir(root / rel)
    journal.unlink()
    _fsync_dir(journal.parent)
    shutil.rmtree(stage, ignore_errors=True)


def recover(root: Path, say=print) -> None:
    """Finish publishes a killed run left half done (call with the lock held)."""
    for journal in sorted((root / STAGING).glob("publish-*.json")):
        say(f"run_all.sh: finishing an interrupted publish ({journal.name})")
        _roll_forward(root, journal)


def clean_stale(root: Path, keep: Path | None = None, say=print) -> None:
    """Remove run folders of earlier runs (the lock proves none is alive) and say
    which executed copies of failed notebooks are still kept, with the command."""
    staging = root / STAGING
    for run in sorted(staging.iterdir()) if staging.is_dir() else []:
        if run != keep and run.is_dir() and run.name != "failed":
            say(f"run_all.sh: removing stale staging of an interrupted run: {run}")
            shutil.rmtree(run, ignore_errors=True)
    failed = sorted((staging / "failed").glob("*.ipynb"))
    if failed:
        say(
            f"run_all.sh: {len(failed)} executed copies of failed notebooks kept in {staging / 'failed'}; "
            f"remove them with: ./run_all.sh clean --output-root '{root}'"
        )


def new_run_dir(root: Path) -> Path:
    run = root / STAGING / f"run-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    run.mkdir(parents=True)
    return run


def keep_failed(root: Path, executed: Path) -> Path | None:
    """Keep a failed notebook's executed copy in ``.staging/failed/`` for reading."""
    if not executed.is_file():
        return None
    dest = root / STAGING / "failed" / executed.name
    dest.parent.mkdir(parents=True, exist_ok=True)
    os.replace(executed, dest)
    return dest
