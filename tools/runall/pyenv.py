"""The Python environment a run uses: the project's ``.venv`` (created by
tools/setup_env.sh), or an existing one named by ``--python`` / ``JAXPERF_PYTHON``.

An existing environment keeps its own jax/jaxlib (and every jax plugin,
libtpu, triton, nvidia-*): jaxperf goes in with ``pip install --no-deps -e``,
and only the missing run dependencies are added, under a constraints file
that holds those packages at their installed versions. Where the versions
that run differ from the pins in pyproject.toml, the run says so.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from .options import UsageError

# Needed to run the notebooks headless; the rest of pyproject's list is for
# JupyterLab and the tests, and is not installed into someone else's environment.
# (ipywidgets: the progress widget in JupyterLab; a headless run prints text lines.)
NOT_FOR_RUNS = {"jupyterlab", "pytest", "hypothesis", "ipywidgets"}
OPTIONAL = {"triton"}  # an extra: compared when present, never required
NEVER_TOUCH = re.compile(r"^(jax|jaxlib|jax[-_].*|libtpu.*|triton|nvidia[-_].*)$")


class SetupError(Exception):
    """The environment could not be prepared (exit 3)."""


def _pins(project: Path) -> dict[str, str]:
    """``{name: specifier}`` from pyproject.toml (the core's dependencies, the study and triton
    extras). A bounded range (the core's jax, jaxlib, equinox) reads as the exact version
    requirements.lock pins, the one the study runs with; lower bounds stay as written."""
    meta = tomllib.loads((project / "pyproject.toml").read_text())["project"]
    extras = meta.get("optional-dependencies", {})
    reqs = list(meta["dependencies"]) + list(extras.get("study", [])) + list(extras.get("triton", []))
    lock = project / "requirements.lock"
    lines = lock.read_text().splitlines() if lock.exists() else []
    locked = dict(line.split("==", 1) for line in lines if "==" in line and not line.startswith("#"))
    pins = {}
    for req in reqs:
        match = re.match(r"^([A-Za-z0-9_.\-]+)(\[[^\]]*\])?\s*(.*)$", req)
        if match:
            name, spec = match.group(1).lower(), match.group(3).strip()
            pins[name] = f"=={locked[name]}" if "<" in spec and name in locked else spec
    return pins


def _vt(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text.split("+")[0])[:4])


def satisfies(version: str, spec: str) -> bool:
    """Enough of PEP 440 for pyproject's pins: ``==X``, ``>=X``, or no specifier."""
    for part in filter(None, (s.strip() for s in spec.split(","))):
        op, want = re.match(r"^(==|>=|<=|<|>|~=|!=)?\s*(.+)$", part).groups()
        have, need = _vt(version), _vt(want)
        ok = {
            "==": have == need,
            ">=": have >= need,
            "<=": have <= need,
            "<": have < need,
            ">": have > need,
            "!=": have != need,
            "~=": have >= need,
        }.get(op or "==", True)
        if not ok:
            return False
    return True


_VERSIONS = """
import importlib.metadata as md, json, sys
out = {}
for name in sys.argv[1:]:
    try:
        out[name] = md.version(name)
    except md.PackageNotFoundError:
        out[name] = None
print(json.dumps(out))
"""


def installed(python: str, names: list[str]) -> dict[str, str | None]:
    proc = subprocess.run([python, "-c", _VERSIONS, *names], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SetupError(f"--python '{python}': could not list its packages: {proc.stderr.strip()[-500:]}")
    return json.loads(proc.stdout)


def pin_report(python: str, project: Path) -> list[str]:
    """One line per pinned package whose running version differs from the pin."""
    pins = _pins(project)
    have = installed(python, sorted(pins))
    lines = []
    for name, spec in pins.items():
        if not spec or name in NOT_FOR_RUNS or (have[name] is None and name in OPTIONAL):
            continue
        if have[name] is None or not satisfies(have[name], spec):
            lines.append(f"{name} {have[name] or 'absent'} (pinned {spec})")
    return lines


def check_python(path: str) -> str:
    """An executable Python >= 3.11 with jax importable; UsageError otherwise. (3.11: the lent TPU
    machine's, whose JAX 0.10.2 is the last for it; the lock's JAX 0.12 needs 3.12.)"""
    exe = os.path.abspath(os.path.expanduser(path))
    if not os.path.isfile(exe) or not os.access(exe, os.X_OK):
        raise UsageError(f"--python '{path}' is not an executable file")
    probe = "import sys; print('%d.%d' % sys.version_info[:2]); import jax, jaxlib; print(jax.__version__)"
    proc = subprocess.run([exe, "-c", probe], capture_output=True, text=True)
    lines = proc.stdout.split()
    if not lines:
        raise UsageError(f"--python '{path}' does not run as Python: {proc.stderr.strip()[-300:]}")
    if _vt(lines[0]) < (3, 11):
        raise UsageError(f"--python '{path}' is Python {lines[0]}: jaxperf needs Python >= 3.11")
    if proc.returncode != 0:
        raise UsageError(
            f"--python '{path}' has no working jax/jaxlib (install JAX there first): "
            f"{proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ''}"
        )
    return exe


def _pip(python: str, args: list[str], what: str) -> None:
    proc = subprocess.run([python, "-m", "pip", "install", "-q", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-12:])
        raise SetupError(f"--python: {what} failed (pip install {' '.join(args)}):\n{tail}")


def prepare_external(python: str, project: Path, say=print) -> None:
    """Install jaxperf (editable, no deps) and the missing run dependencies."""
    probe = "import jaxperf, sys; print(jaxperf.__file__)"
    where = subprocess.run([python, "-c", probe], capture_output=True, text=True).stdout.strip()
    if not where.startswith(str(project / "lib")):
        say(f"run_all.sh: installing jaxperf into {python} (pip install --no-deps -e {project})")
        try:
            _pip(python, ["--no-deps", "-e", str(project)], "installing jaxperf")
        except SetupError:  # offline and no setuptools to build with: a .pth does the same
            site = subprocess.run(
                [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                capture_output=True,
                text=True,
            ).stdout.strip()
            if not site:
                raise
            Path(site, "jaxperf-editable.pth").write_text(str(project / "lib") + "\n")
            say(
                f"run_all.sh: pip could not build jaxperf here (offline, no setuptools?); "
                f"added {site}/jaxperf-editable.pth -> {project / 'lib'} instead"
            )
    pins = _pins(project)
    wanted = [n for n in pins if n not in NOT_FOR_RUNS and not NEVER_TOUCH.match(n)] + [
        "nbformat",
        "nbclient",
    ]
    have = installed(python, sorted(set(wanted) | {"jax", "jaxlib"}))
    missing = [f"{n}{pins.get(n, '')}" for n in wanted if have.get(n) is None]
    if missing:
        say(f"run_all.sh: adding missing dependencies to {python}: {' '.join(missing)}")
        held = installed(
            python, ["jax", "jaxlib", "triton", "libtpu", "jax-cuda13-plugin", "jax-cuda13-pjrt"]
        )
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as cons:
            cons.write("".join(f"{n}=={v}\n" for n, v in held.items() if v))
        try:
            _pip(python, ["-c", cons.name, *missing], "adding dependencies")
        finally:
            os.unlink(cons.name)


def project_python(project: Path) -> str:
    """The project's .venv, created or refreshed by tools/setup_env.sh."""
    proc = subprocess.run(["bash", str(project / "tools" / "setup_env.sh")])
    if proc.returncode != 0:
        raise SetupError("environment setup failed (tools/setup_env.sh)")
    return str(project / ".venv" / "bin" / "python")


def kernelspec(where: Path, python: str) -> Path:
    """A kernel named "jaxperf" running ``python``, in a folder for JUPYTER_PATH,
    so papermill uses exactly this environment whatever else is registered."""
    spec = where / "kernels" / "jaxperf" / "kernel.json"
    spec.parent.mkdir(parents=True, exist_ok=True)
    argv = [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    spec.write_text(json.dumps({"argv": argv, "display_name": "Python (jaxperf)", "language": "python"}))
    return where


_PREFLIGHT = """
import json, sys
failed = 0
for nb in json.loads(sys.argv[1]):
    ns = {}
    exec(nb["source"], ns)
    ns.update(nb["injected"])
    try:
        for line in nb["imports"]:
            exec(line, ns)
    except Exception as err:  # the notebook will report this itself
        print(f"{nb['name']}: could not check its parameters ({err!r})", file=sys.stderr)
        continue
    try:
        eval(nb["cls"], ns).from_parameters(ns)
    except (ValueError, TypeError) as err:
        print(f"{nb['name']}: {err}")
        failed += 1
sys.exit(1 if failed else 0)
"""


def preflight(python: str, checks: list[dict]) -> None:
    """Build each notebook's settings object from the parameters it will get,
    before anything runs: a bad combination fails here, not after the sweep."""
    if not checks:
        return
    proc = subprocess.run([python, "-c", _PREFLIGHT, json.dumps(checks)], capture_output=True, text=True)
    for line in proc.stderr.splitlines():
        if "could not check its parameters" in line:
            print(f"run_all.sh: warning: {line}", file=sys.stderr)
    if proc.returncode != 0:
        raise UsageError(
            "notebook parameters rejected before running: " + "; ".join(proc.stdout.split("\n")).strip("; ")
        )
