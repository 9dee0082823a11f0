"""Which commit a device run ran, and whether its tree was that commit (stdlib only).

The device machine gets a copy of the working tree without ``.git``, so the records could not
name their commit. Here, before the device call::

    python3 tools/device/manifest.py write      # .device/manifest.json: HEAD and every tracked
                                                # file's git blob hash; refuses a dirty tree

There (``tools/device/run.sh`` does it)::

    python3 tools/device/manifest.py check      # prints "COMMIT DIRTY": DIRTY is "false" when
                                                # every tracked file hashes as committed

A file that differs there, or is missing, makes the run "dirty": its records say so and
``tools/device/unpack.sh`` refuses them (a result must come from a clean commit).

After each ``run.sh --exec`` command (the tools, run as a reader runs them)::

    python3 tools/device/manifest.py stamp DIR COMMAND   # each file under DIR that carries no
                                                         # commit yet gets the run's own

A JSON object gets ``provenance.git`` (``commit``, ``dirty``, ``commit_source: "run"``: written
by the run, from the check above) and the command that wrote it; any other file a sidecar
``<name>.provenance.json`` holding the same and its SHA-256. So each tool record names its own
commit, whichever call wrote it and whatever a later call lays beside it.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: what run_all and the notebooks write while a device run runs: never part of the check
WRITTEN = ("results/", "figures/")
#: the sidecar that gives a tool's output that is not a JSON object its provenance
SIDECAR = ".provenance.json"


def blob_hash(data: bytes) -> str:
    """git's object id of a file's content (``git hash-object``)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def write(root: Path = ROOT) -> int:
    """Write ``root``'s .device/manifest.json; 1 (nothing written) when the tree is not HEAD."""

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout

    dirty = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!results", ":!figures")
    if dirty.strip():
        print("manifest: refusing: the tree differs from HEAD (commit first):\n" + dirty, file=sys.stderr)
        return 1
    files = {}
    for line in git("ls-files", "-s").splitlines():
        meta, path = line.split("\t", 1)
        mode, sha, _stage = meta.split()
        if mode != "160000" and not path.startswith(WRITTEN):  # submodules have no content here
            files[path] = sha
    commit = git("rev-parse", "HEAD").strip()
    (root / ".device").mkdir(exist_ok=True)
    (root / ".device" / "manifest.json").write_text(json.dumps({"commit": commit, "files": files}))
    print(f"manifest: .device/manifest.json: {len(files)} files at {commit}")
    return 0


def check(root: Path = ROOT) -> tuple[str, bool, list[str]]:
    """(commit, dirty, the files that differ) for the tree at ``root``."""
    manifest = json.loads((root / ".device" / "manifest.json").read_text())
    differ = []
    for path, sha in manifest["files"].items():
        try:
            if blob_hash((root / path).read_bytes()) != sha:
                differ.append(path)
        except OSError:
            differ.append(path)
    return manifest["commit"], bool(differ), differ


def carried(path: Path) -> dict | None:
    """The ``git`` part of a tool record's provenance (its own, or its sidecar's for a file whose
    content the sidecar's SHA-256 still names), None when it carries none."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        data = None
    if isinstance(data, dict):
        git = data.get("provenance", {}).get("git") if isinstance(data.get("provenance"), dict) else None
        return git if isinstance(git, dict) else None
    side = path.with_name(path.name + SIDECAR)
    try:
        sidecar = json.loads(side.read_text())
    except (OSError, ValueError):
        return None
    return (
        sidecar.get("git") if sidecar.get("sha256") == hashlib.sha256(path.read_bytes()).hexdigest() else None
    )


def stamp(folder: Path, command: str) -> list[str]:
    """Give each file under ``folder`` that carries no commit (:func:`carried`) the run's own
    (``JAXPERF_GIT_COMMIT``/``JAXPERF_GIT_DIRTY``, set by run.sh from :func:`check`) and
    ``command``; the files stamped, relative to ``folder``."""
    commit = os.environ.get("JAXPERF_GIT_COMMIT", "unknown")
    git = {"commit": commit, "dirty": os.environ.get("JAXPERF_GIT_DIRTY") != "false", "commit_source": "run"}
    done = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.endswith(SIDECAR)):
        if carried(path) is not None:
            continue
        text = path.read_bytes()
        try:
            data = json.loads(text)
        except (ValueError, UnicodeDecodeError):
            data = None
        if isinstance(data, dict):  # in the record, indented as its tool indented it
            lines = text.decode().splitlines()
            indent = len(lines[1]) - len(lines[1].lstrip(" ")) if len(lines) > 1 else None
            prov = data["provenance"] if isinstance(data.get("provenance"), dict) else {}
            data["provenance"] = {**prov, "git": git, "command": command}
            end = "\n" if text.endswith(b"\n") else ""
            path.write_text(json.dumps(data, indent=indent or None) + end)
        else:
            side = {
                "file": path.name,
                "sha256": hashlib.sha256(text).hexdigest(),
                "git": git,
                "command": command,
            }
            path.with_name(path.name + SIDECAR).write_text(json.dumps(side, indent=1) + "\n")
        done.append(path.relative_to(folder).as_posix())
    return done


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "stamp":
        done = stamp(Path(argv[1]), argv[2])
        print(f"manifest: {len(done)} tool outputs given the run's commit: {' '.join(done) or 'none'}")
        return 0
    if argv == ["write"]:
        return write()
    if argv == ["check"]:
        try:
            commit, dirty, differ = check()
        except (OSError, ValueError, KeyError) as err:
            print(
                f"manifest: no usable .device/manifest.json ({err}): the commit is unknown", file=sys.stderr
            )
            print("unknown true")
            return 0
        for path in differ[:10]:
            print(f"manifest: differs from {commit[:10]}: {path}", file=sys.stderr)
        print(f"{commit} {'true' if dirty else 'false'}")
        return 0
    print("usage: python3 tools/device/manifest.py write|check|stamp DIR COMMAND", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
