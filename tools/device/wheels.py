"""Which pure-Python wheels the GPU machine needs for jaxperf's device run (stdlib only).

    python tools/device/wheels.py plan        # NAME==VERSION lines to download, reasons on stderr
    python tools/device/wheels.py deps DIR    # every wheel's needs are on the image or in DIR

The image's packages are in tools/device/image_packages.txt. What the device run
imports is read from lib/jaxperf and lib/jaxperf_study (every top-level import outside
the standard library), mapped to distributions with this Python's ``packages_distributions()``.
Carried: each imported distribution the image lacks, at the version installed here,
and each ``==`` pin of pyproject.toml the run imports (the image's version of it is
unknown; jaxperf's dispatch study hooks Equinox's internals, so its version matters).
Never carried: jax, jaxlib, their plugins, triton, nvidia-* (the machine's own), and
IPython/ipywidgets, which jaxperf imports only to display in a notebook (the dry
run blocks them, proving the device run does not need them).
"""

from __future__ import annotations

import ast
import importlib.metadata as md
import re
import sys
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NEVER = re.compile(r"^(jax|jaxlib|jax-.*|libtpu.*|triton|nvidia-.*)$")
DISPLAY_ONLY = {"ipython", "ipywidgets"}


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def image() -> set[str]:
    lines = (ROOT / "tools" / "device" / "image_packages.txt").read_text().splitlines()
    return {norm(x) for x in lines if x.strip() and not x.startswith("#")}


def imported() -> set[str]:
    """Distributions of every non-stdlib top-level module lib/jaxperf and lib/jaxperf_study import."""
    modules: set[str] = set()
    for path in sorted((ROOT / "lib").glob("jaxperf*/**/*.py")):
        if path.name == "bench_old.py":  # runs inside old environments, never on the device
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules.add(node.module.split(".")[0])
    modules -= set(sys.stdlib_module_names) | {"jaxperf", "jaxperf_study"}
    dists = md.packages_distributions()
    return {norm(d) for m in modules for d in dists.get(m, [m])}


def pins() -> dict[str, str]:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    out = {}
    for req in deps:
        match = re.match(r"^([A-Za-z0-9_.\-]+)\s*==\s*([^,;\s]+)$", req.strip())
        if match:
            out[norm(match.group(1))] = match.group(2)
    return out


def plan() -> list[str]:
    have, used, pinned = image(), imported(), pins()
    out = []
    for name in sorted(used):
        if NEVER.match(name):
            continue
        if name in DISPLAY_ONLY:
            print(f"wheels: {name}: not carried (imported only to display in a notebook)", file=sys.stderr)
        elif name in pinned:
            print(
                f"wheels: {name}=={pinned[name]}: carried (pinned; the image's version is unknown)",
                file=sys.stderr,
            )
            out.append(f"{name}=={pinned[name]}")
        elif name not in have:
            version = md.version(name)
            print(f"wheels: {name}=={version}: carried (imported, not on the image)", file=sys.stderr)
            out.append(f"{name}=={version}")
    return out


def requires(wheel: Path) -> set[str]:
    """The names a wheel requires (``extra`` requirements left out)."""
    with zipfile.ZipFile(wheel) as zf:
        meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        text = zf.read(meta).decode()
    names = set()
    for line in text.splitlines():
        if line.startswith("Requires-Dist:") and "extra ==" not in line:
            names.add(norm(re.match(r"Requires-Dist:\s*([A-Za-z0-9_.\-]+)", line).group(1)))  # type: ignore[union-attr]
    return names


def deps(folder: Path) -> list[str]:
    wheels = sorted(folder.glob("*.whl"))
    carried = {norm(w.name.split("-")[0]) for w in wheels}
    have = image() | carried
    return [f"{w.name} needs {n}" for w in wheels for n in sorted(requires(w) - have)]


def main(argv: list[str]) -> int:
    if argv[:1] == ["plan"]:
        print("\n".join(plan()))
        return 0
    if argv[:1] == ["deps"] and len(argv) == 2:
        missing = deps(Path(argv[1]))
        for line in missing:
            print(f"wheels: missing on the image and not carried: {line}", file=sys.stderr)
        return 1 if missing else 0
    print("usage: wheels.py plan | wheels.py deps DIR", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
