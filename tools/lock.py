"""Write requirements.lock: the exact versions, in a working .venv, of jaxperf's
dependencies with the extras that the set-up installs (walked through installed
package metadata, so the lock holds what the tests passed with, nothing else
that happens to sit in the venv).

    .venv/bin/python tools/lock.py            # rewrite requirements.lock
    .venv/bin/python tools/lock.py --check    # exit 1 if it would change

tools/setup_env.sh installs with ``-c requirements.lock`` on the platform the
lock was made on (its header says which); elsewhere from pyproject's ranges.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import platform
import sys
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements.lock"
EXTRAS = ("dev", "study", "triton", "tpu")


def platform_tag() -> str:
    """What the lock is valid for: setup_env.sh compares it with the machine's."""
    return f"python{sys.version_info.major}.{sys.version_info.minor}-{sys.platform}-{platform.machine()}"


def closure(root: str, extras: tuple[str, ...]) -> dict[str, str]:
    """Installed name -> version for ``root[extras]`` and everything it pulls in."""
    found: dict[str, str] = {}
    todo: list[tuple[str, frozenset[str]]] = [(root, frozenset(extras))]
    seen: set[tuple[str, frozenset[str]]] = set()
    while todo:
        name, wanted = todo.pop()
        if (name, wanted) in seen:
            continue
        seen.add((name, wanted))
        dist = md.distribution(name)
        if canonicalize_name(name) != canonicalize_name(root):
            found[canonicalize_name(dist.metadata["Name"])] = dist.version
        for line in dist.requires or []:
            req = Requirement(line)
            envs = [{"extra": e} for e in wanted] or [{"extra": ""}]
            if req.marker is not None and not any(req.marker.evaluate(env) for env in envs):
                continue
            try:
                md.distribution(req.name)
            except md.PackageNotFoundError:
                continue  # an optional dependency this platform does not install
            todo.append((req.name, frozenset(req.extras)))
    return found


def render(versions: dict[str, str]) -> str:
    header = [
        "# Exact versions for jaxperf[" + ",".join(EXTRAS) + "], written by tools/lock.py.",
        f"# platform: {platform_tag()}",
        "# Used as pip constraints by tools/setup_env.sh; regenerate after changing pyproject.toml.",
    ]
    return "\n".join(header + [f"{name}=={versions[name]}" for name in sorted(versions)]) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 if requirements.lock is out of date")
    args = parser.parse_args(argv)
    text = render(closure("jaxperf", EXTRAS))
    if args.check:
        current = LOCK.read_text() if LOCK.exists() else ""
        if current != text:
            print("requirements.lock is out of date: run .venv/bin/python tools/lock.py", file=sys.stderr)
            return 1
        return 0
    LOCK.write_text(text)
    print(f"wrote {LOCK.relative_to(ROOT)} ({text.count('==')} packages, {platform_tag()})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
