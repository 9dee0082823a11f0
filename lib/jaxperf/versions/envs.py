"""One isolated virtual environment per Equinox release, built from its pin file.

Environments live under the git-ignored ``.envs/equinox-<release>`` (build log
beside it, ``equinox-<release>.log``) and are reused while a stamp file inside
holds the same base interpreter and pin-file content; only an environment that
passed the import check is stamped, so a failed one is rebuilt next time.
"""

from __future__ import annotations

import glob
import importlib.metadata as _md
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..paths import PROJECT_ROOT, relative
from .releases import Release

ENVS_DIR = PROJECT_ROOT / ".envs"
STAMP_NAME = ".jaxperf-pins-stamp"


def _python_version_of(executable: str) -> str | None:
    try:
        out = subprocess.run(
            [executable, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def find_python(version: str) -> Path:
    """An interpreter for Python ``version`` ("3.10"), checked by running it.

    Looks at ``$JAXPERF_PYTHON_<major>_<minor>``, ``python<version>`` on PATH
    (pyenv shims that refuse to run are skipped), then pyenv's installed
    versions. Raises FileNotFoundError saying what to set when none works.
    """
    env_var = "JAXPERF_PYTHON_" + version.replace(".", "_")
    candidates = [os.environ.get(env_var), shutil.which(f"python{version}")]
    pyenv_root = os.environ.get("PYENV_ROOT") or str(Path.home() / ".pyenv")
    candidates += sorted(glob.glob(f"{pyenv_root}/versions/{version}.*/bin/python{version}"), reverse=True)
    candidates += [f"/usr/bin/python{version}", f"/usr/local/bin/python{version}"]
    for cand in candidates:
        if cand and Path(cand).exists() and _python_version_of(cand) == version:
            return Path(cand)
    raise FileNotFoundError(
        f"no working Python {version} found (tried ${env_var}, python{version} on PATH, "
        f"{pyenv_root}/versions/{version}.*): install it or set {env_var}=/path/to/python{version}."
    )


@dataclass
class EnvStatus:
    """Where one release's environment stands; ``error`` is set when it is unusable."""

    release: str
    python_executable: Path | None = None
    kind: str = ""  # "built", "cached" or "project .venv"
    build_s: float = 0.0
    error: str | None = None
    versions: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None


def _stamp(release: Release, base_python: Path) -> str:
    return f"python={base_python} ({_python_version_of(str(base_python))})\n" + release.pin_file.read_text()


def _current_matches(release: Release) -> bool:
    """The running interpreter has exactly the pinned versions (and Python)."""
    if "{}.{}".format(*sys.version_info[:2]) != release.python:
        return False
    for name, version in release.pins.items():
        try:
            if _md.version(name) != version:
                return False
        except _md.PackageNotFoundError:
            return False
    return True


_IMPORT_CHECK = (
    "import json, importlib.metadata as md, equinox, jax, jaxlib;"
    "print(json.dumps({n: md.version(n) for n in ('equinox', 'jax', 'jaxlib', 'numpy')}))"
)


def _import_check(executable: Path, release: Release) -> dict[str, str]:
    out = subprocess.run([str(executable), "-c", _IMPORT_CHECK], capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise RuntimeError("import failed: " + out.stderr.strip()[-2000:])
    versions = json.loads(out.stdout.strip().splitlines()[-1])
    wrong = {k: v for k, v in versions.items() if k in release.pins and release.pins[k] != v}
    if wrong:
        raise RuntimeError(f"installed versions {wrong} differ from the pins {release.pin_file.name}")
    return versions


def ensure_env(
    release: Release,
    *,
    envs_dir: str | os.PathLike = ENVS_DIR,
    reuse_project_env: bool = True,
    timeout_s: int = 900,
    log: Callable[[str], None] = lambda msg: print(msg, file=sys.stderr),
) -> EnvStatus:
    """Build (or reuse) ``<envs_dir>/equinox-<release>`` from its pin file.

    Never raises for a failed build or import: the returned status carries the
    error. With ``reuse_project_env`` and a running interpreter that already has
    exactly the pinned versions, that interpreter is used without a new venv.
    """
    status = EnvStatus(release=release.equinox)
    if reuse_project_env and _current_matches(release):
        status.python_executable, status.kind = Path(sys.executable), "project .venv"
        status.versions = {n: _md.version(n) for n in ("equinox", "jax", "jaxlib", "numpy")}
        return status
    env = Path(envs_dir) / f"equinox-{release.equinox}"
    executable = env / "bin" / "python"
    try:
        base = find_python(release.python)
        stamp = _stamp(release, base)
        stamp_file = env / STAMP_NAME
        if executable.exists() and stamp_file.exists() and stamp_file.read_text() == stamp:
            status.kind = "cached"
        else:
            started = time.perf_counter()
            log_file = env.parent / f"{env.name}.log"  # not with_suffix: "0.10.2" has a dot
            log(
                f"versions: building {env.name} with {Path(base).name} from {release.pin_file.name} (log: {relative(log_file)})"
            )
            if env.exists():
                shutil.rmtree(env)
            env.parent.mkdir(parents=True, exist_ok=True)
            _run_logged([str(base), "-m", "venv", str(env)], log_file, timeout_s)
            _run_logged(
                [
                    str(executable),
                    "-m",
                    "pip",
                    "install",
                    "-q",
                    "--disable-pip-version-check",
                    "--prefer-binary",
                    "-r",
                    str(release.pin_file),
                ],
                log_file,
                timeout_s,
                append=True,
            )
            status.kind, status.build_s = "built", time.perf_counter() - started
        status.versions = _import_check(executable, release)
        stamp_file.write_text(stamp)  # only a working environment is stamped, so a failed one is rebuilt
        status.python_executable = executable
    except Exception as err:  # noqa: BLE001 - reported in the table, the other releases still run
        status.error = f"{type(err).__name__}: {err}"
        log(f"versions: equinox {release.equinox} unusable: {status.error}")
    return status


def _run_logged(cmd: list[str], log_file: Path, timeout_s: int, append: bool = False) -> None:
    with open(log_file, "a" if append else "w") as handle:
        handle.write("$ " + " ".join(cmd) + "\n")
        handle.flush()
        proc = subprocess.run(cmd, stdout=handle, stderr=subprocess.STDOUT, timeout=timeout_s)
    if proc.returncode != 0:
        lines = log_file.read_text().strip().splitlines()
        errors = [line for line in lines if line.startswith("ERROR")] or lines[-5:]
        raise RuntimeError(
            f"{Path(cmd[0]).name} {' '.join(cmd[1:3])} exited {proc.returncode} (log: {relative(log_file)}): "
            + " | ".join(errors[-4:])
        )
