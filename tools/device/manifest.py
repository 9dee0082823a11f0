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
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: what run_all and the notebooks write while a device run runs: never part of the check
WRITTEN = ("results/", "figures/")


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


def main(argv: list[str]) -> int:
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
    print("usage: python3 tools/device/manifest.py write|check", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
