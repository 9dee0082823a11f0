"""Which Equinox release made ``filter_pmap`` cheaper? (equinox#192)

One isolated environment per Equinox release, built on demand from a committed
pin file (``pins/<release>.txt``: a full ``pip freeze``, ``==`` only, with a
``# python: 3.10`` header line) under the git-ignored ``.envs/`` folder, cached
and reused while the pin file's content is unchanged. Inside each environment
``bench_old.py`` (self-contained, Python 3.10 / jax 0.4.13 compatible) times the
no-op step three ways and prints one JSON document; this module gathers those
documents, tabulates per-pair ratios and differences, plots and summarises.

    matrix = versions.gather(["0.7.1", "0.13.8"], bench=versions.BenchConfig(repeats=5))
    table = versions.tabulate(matrix)
    fig, data = versions.plot_overhead_vs_release(table)

A release whose environment fails to build or import, or whose benchmark
fails, is reported in ``matrix.environments`` (and in the table) with its
error; the other releases still run.
"""

from __future__ import annotations

import dataclasses
import glob
import importlib.metadata as _md
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import bad_value, check_int
from ..paths import PROJECT_ROOT
from ..timing import iqr_stats, pair_ratios

PINS_DIR = Path(__file__).resolve().parent / "pins"
BENCH_SCRIPT = Path(__file__).resolve().parent / "bench_old.py"
ENVS_DIR = PROJECT_ROOT / ".envs"
STAMP_NAME = ".jaxperf-pins-stamp"
BASELINE = "pmap_params"
VARIANTS = ("filter_pmap", "pmap_params", "pmap_cached")
MODELS = ("mlp", "transformer")

_PIN_LINE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!_-]+)$")
_PYTHON_LINE = re.compile(r"^#\s*python:\s*(\d+\.\d+)\s*$")


class BenchmarkError(RuntimeError):
    """``bench_old.py`` failed in a child interpreter; the message carries its stderr."""


# ---------------------------------------------------------------- pin files


@dataclass(frozen=True)
class Release:
    """One Equinox release's environment, as its pin file describes it."""

    equinox: str
    python: str                  # "3.10"
    pins: dict[str, str]         # normalised package name -> exact version
    pin_file: Path
    notes: tuple[str, ...] = ()  # the pin file's comment lines, for the table

    @property
    def jax(self) -> str:
        return self.pins.get("jax", "?")


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _release_key(release: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else 0 for p in release.split("."))


def read_pins(path: str | os.PathLike) -> Release:
    """Parse one pin file: ``name==version`` lines and one ``# python: X.Y`` line.

    Raises ValueError naming the file and line for anything else (ranges,
    extras, URLs), a missing python line, or a missing ``equinox`` pin.
    """
    path = Path(path)
    pins: dict[str, str] = {}
    python = None
    notes = []
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            found = _PYTHON_LINE.match(line)
            if found:
                python = found.group(1)
            else:
                notes.append(line.lstrip("# "))
            continue
        found = _PIN_LINE.match(line)
        if not found:
            raise ValueError(
                f"{path.name}:{number}: {line!r} is not an exact pin: expected 'name==version' "
                "(pin files hold exact versions only, e.g. from pip freeze)."
            )
        pins[_normalise(found.group(1))] = found.group(2)
    if python is None:
        raise ValueError(f"{path.name}: no '# python: X.Y' line: say which Python builds this environment.")
    if "equinox" not in pins:
        raise ValueError(f"{path.name}: no 'equinox==...' pin.")
    if pins["equinox"] != path.stem:
        raise ValueError(f"{path.name}: pins equinox=={pins['equinox']}, but the file is named for {path.stem}.")
    return Release(equinox=pins["equinox"], python=python, pins=pins, pin_file=path, notes=tuple(notes))


def available_releases(pins_dir: str | os.PathLike = PINS_DIR) -> dict[str, Release]:
    """Every release with a pin file, oldest first."""
    found = {p.stem: read_pins(p) for p in Path(pins_dir).glob("*.txt")}
    return {k: found[k] for k in sorted(found, key=_release_key)}


def check_releases(
    releases: Any, name: str = "releases", pins_dir: str | os.PathLike = PINS_DIR
) -> list[str]:
    """Validate a list of release names against the pin files; returns them oldest first."""
    known = available_releases(pins_dir)
    allowed = "a non-empty list of Equinox releases with pin files: " + ", ".join(known)
    if isinstance(releases, (str, bytes)) or not isinstance(releases, Sequence) or not releases:
        raise bad_value(name, releases, allowed)
    for release in releases:
        if release not in known:
            raise bad_value(name, releases, allowed + f" ({release!r} has none)")
    if len(set(releases)) != len(releases):
        raise bad_value(name, releases, allowed + ", each at most once")
    return sorted(releases, key=_release_key)


# ---------------------------------------------------------------- interpreters and environments


def _python_version_of(executable: str) -> str | None:
    try:
        out = subprocess.run(
            [executable, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True, text=True, timeout=30,
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
    kind: str = ""             # "built", "cached" or "project .venv"
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
    if "%d.%d" % sys.version_info[:2] != release.python:
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
            log(f"versions: building {env.name} with {base} from {release.pin_file.name} (log: {log_file})")
            if env.exists():
                shutil.rmtree(env)
            env.parent.mkdir(parents=True, exist_ok=True)
            _run_logged([str(base), "-m", "venv", str(env)], log_file, timeout_s)
            _run_logged(
                [str(executable), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                 "--prefer-binary", "-r", str(release.pin_file)],
                log_file, timeout_s, append=True,
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
            f"{Path(cmd[0]).name} {' '.join(cmd[1:3])} exited {proc.returncode} (log: {log_file}): " + " | ".join(errors[-4:])
        )


# ---------------------------------------------------------------- the benchmark in a child interpreter


@dataclass(frozen=True)
class BenchConfig:
    """What ``bench_old.py`` runs; field names match its command-line flags."""

    models: tuple[str, ...] = MODELS
    warmup: int = 3
    repeats: int = 15
    number: int = 20
    mlp_width: int = 128
    mlp_depth: int = 8
    d_model: int = 64
    blocks: int = 4
    heads: int = 4
    seq_len: int = 16
    vocab: int = 256
    batch: int = 2

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            if f.name != "models":
                check_int(f.name, getattr(self, f.name), minimum=0 if f.name == "warmup" else 1)
        models = self.models
        if isinstance(models, str) or not models or any(m not in MODELS for m in models):
            raise bad_value("models", models, "a non-empty list drawn from " + ", ".join(MODELS))

    def argv(self) -> list[str]:
        out = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            out += ["--" + f.name.replace("_", "-"), ",".join(value) if f.name == "models" else str(value)]
        return out


def run_bench(
    python_executable: str | os.PathLike,
    config: BenchConfig = BenchConfig(),
    *,
    host_devices: int = 8,
    timeout_s: int = 1800,
) -> dict[str, Any]:
    """Run ``bench_old.py`` with ``python_executable`` and return its JSON document.

    The child gets ``XLA_FLAGS=--xla_force_host_platform_device_count=<host_devices>``
    and ``JAX_PLATFORMS=cpu`` (the old jaxlib wheels on PyPI are CPU-only).
    Raises BenchmarkError, with the child's stderr, when it fails, times out or
    prints something that is not the expected JSON.
    """
    check_int("host_devices", host_devices, minimum=1)
    env = dict(os.environ)
    flag = "--xla_force_host_platform_device_count"
    kept = [f for f in env.get("XLA_FLAGS", "").split() if not f.startswith(flag)]
    env["XLA_FLAGS"] = " ".join(kept + [f"{flag}={host_devices}"])
    env["JAX_PLATFORMS"] = "cpu"
    env.pop("PYTHONPATH", None)  # the child sees only its own environment's packages
    cmd = [str(python_executable), str(BENCH_SCRIPT), "--host-devices", str(host_devices), *config.argv()]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env, cwd=PROJECT_ROOT)
    except subprocess.TimeoutExpired as err:
        stderr = err.stderr.decode() if isinstance(err.stderr, bytes) else (err.stderr or "")
        raise BenchmarkError(f"bench_old.py timed out after {timeout_s} s in {python_executable}:\n{stderr[-4000:]}") from err
    except OSError as err:
        raise BenchmarkError(f"could not start {python_executable}: {err}") from err
    if proc.returncode != 0:
        raise BenchmarkError(
            f"bench_old.py exited {proc.returncode} in {python_executable}; its stderr:\n{proc.stderr.strip()[-4000:]}"
        )
    try:
        doc = json.loads(proc.stdout)
    except json.JSONDecodeError as err:
        raise BenchmarkError(
            f"bench_old.py printed no valid JSON in {python_executable} ({err}); stdout starts "
            f"{proc.stdout[:300]!r}; stderr:\n{proc.stderr.strip()[-2000:]}"
        ) from err
    if doc.get("protocol") != "jaxperf.versions.bench_old/1" or "rows" not in doc:
        raise BenchmarkError(f"bench_old.py answered an unknown protocol {doc.get('protocol')!r}")
    return doc


# ---------------------------------------------------------------- gathering


@dataclass
class VersionMatrix:
    """Tidy timings (one row per release, round, model, variant, repeat) and one row per environment."""

    timings: pd.DataFrame
    environments: pd.DataFrame
    documents: dict[str, list[dict[str, Any]]]


def gather(
    releases: Sequence[str],
    bench: BenchConfig = BenchConfig(),
    *,
    host_devices: int = 8,
    rounds: int = 1,
    reuse_project_env: bool = True,
    envs_dir: str | os.PathLike = ENVS_DIR,
    pins_dir: str | os.PathLike = PINS_DIR,
    env_timeout_s: int = 900,
    bench_timeout_s: int = 1800,
    progress: Any = None,
    log: Callable[[str], None] = lambda msg: print(msg, file=sys.stderr),
) -> VersionMatrix:
    """Build/reuse each release's environment, then run the benchmark in each.

    With ``rounds`` > 1 the releases run round-robin (A B C A B C), so slow
    drift of a shared machine spreads over all of them. A release that fails to
    build, import or run is reported with its error and skipped thereafter.
    """
    known = available_releases(pins_dir)
    releases = check_releases(list(releases), pins_dir=pins_dir)
    check_int("rounds", rounds, minimum=1)
    statuses: dict[str, EnvStatus] = {}
    for release in releases:
        statuses[release] = ensure_env(
            known[release], envs_dir=envs_dir, reuse_project_env=reuse_project_env, timeout_s=env_timeout_s, log=log
        )
    frames, documents, bench_wall = [], {r: [] for r in releases}, {r: 0.0 for r in releases}
    for round_index in range(rounds):
        for release in releases:
            status = statuses[release]
            if status.ok:
                try:
                    doc = run_bench(status.python_executable, bench, host_devices=host_devices, timeout_s=bench_timeout_s)
                except BenchmarkError as err:
                    status.error = f"BenchmarkError: {err}"
                    log(f"versions: equinox {release} benchmark failed: {err}")
                else:
                    documents[release].append(doc)
                    bench_wall[release] += doc["wall_s"]
                    frame = pd.DataFrame(doc["rows"])
                    frame.insert(0, "round", round_index)
                    frame.insert(0, "python", doc["versions"]["python"])
                    frame.insert(0, "jax", doc["versions"]["jax"])
                    frame.insert(0, "equinox", doc["versions"]["equinox"])
                    frame.insert(0, "release", release)
                    frames.append(frame)
            if progress is not None:
                progress.update(1)
    env_rows = []
    for release in releases:
        status, pins = statuses[release], known[release]
        env_rows.append({
            "release": release,
            "python": pins.python,
            "jax": pins.jax,
            "jaxlib": pins.pins.get("jaxlib", "?"),
            "numpy": pins.pins.get("numpy", "?"),
            "environment": status.kind or "-",
            "build_s": round(status.build_s, 1),
            "bench_wall_s": round(bench_wall[release], 1),
            "rounds_run": len(documents[release]),
            "status": "ok" if status.ok else "failed",
            "error": status.error or "",
        })
    timings = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["release", "equinox", "jax", "python", "round", "model", "variant", "repeat"]
    )
    return VersionMatrix(timings=timings, environments=pd.DataFrame(env_rows), documents=documents)


# ---------------------------------------------------------------- tables


def release_table(releases: Sequence[str], pins_dir: str | os.PathLike = PINS_DIR) -> pd.DataFrame:
    """The pinned versions of each release, with its pin file's first note."""
    known = available_releases(pins_dir)
    return pd.DataFrame([
        {"equinox": r, "python": known[r].python, "jax": known[r].jax, "jaxlib": known[r].pins.get("jaxlib", "?"),
         "numpy": known[r].pins.get("numpy", "?"), "pins": len(known[r].pins), "pin file": known[r].pin_file.name,
         "note": known[r].notes[0] if known[r].notes else ""}
        for r in releases
    ])


def documents_table(matrix: VersionMatrix) -> pd.DataFrame:
    """What each child reported about itself: versions, devices, flags, model sizes, the pytree check."""
    rows = []
    for release, docs in matrix.documents.items():
        for round_index, doc in enumerate(docs):
            row = {"release": release, "round": round_index, **{f"{k}_version": v for k, v in doc["versions"].items()},
                   "executable": doc["executable"], "backend": doc["backend"], "device_count": doc["device_count"],
                   "xla_flags": doc["xla_flags"], "bench_wall_s": round(doc["wall_s"], 2)}
            for model, info in doc["models"].items():
                row[f"{model}_param_arrays"] = info["param_arrays"]
                row[f"{model}_arrays_per_call"] = info["arrays_per_call"]
                row[f"{model}_same_pytree"] = info["same_pytree"]
            rows.append(row)
    return pd.DataFrame(rows)



def _paired_difference(df: pd.DataFrame, baseline: str, value: str, by: list[str]) -> pd.DataFrame:
    keys = by + ["repeat"]
    base = df[df["variant"] == baseline][keys + [value]].rename(columns={value: "_base"})
    merged = df.merge(base, on=keys, how="inner")
    merged["difference"] = merged[value] - merged["_base"]
    return merged.drop(columns="_base")


def _fmt(stats: dict[str, float], digits: int = 2) -> str:
    return f"{stats['median']:.{digits}f} [{stats['q25']:.{digits}f}, {stats['q75']:.{digits}f}]"


# filter_pmap's extra cost over jax.pmap, per pair, three ways: the dispatching thread's CPU time (Equinox's
# host work, steadiest on a shared machine), blocked wall time (what a training loop feels), enqueue-only time.
EXTRA_MEASURES = {"extra_cpu_ms": "cpu_s_per_call", "extra_ms": "wall_s_per_call",
                  "extra_dispatch_ms": "dispatch_s_per_call"}


def tabulate(matrix: VersionMatrix) -> pd.DataFrame:
    """One row per (release, model), all per pair against ``jax.pmap`` on params
    (median, q25, q75): filter_pmap's extra host-CPU ms (``extra_cpu_ms_*``),
    extra wall ms (``extra_ms_*``) and extra enqueue ms (``extra_dispatch_ms_*``)
    per call, the it/s ratios of filter_pmap and the cached fix; plus median ms
    per call and it/s of each method. Failed releases get one row with their error."""
    by = ["release", "model", "round"]
    rows = []
    timings = matrix.timings
    for env in matrix.environments.itertuples(index=False):
        part = timings[timings["release"] == env.release] if len(timings) else timings
        if part.empty:
            rows.append({"release": env.release, "jax": env.jax, "python": env.python, "model": "-",
                         "status": env.status, "error": env.error})
            continue
        ratios = pair_ratios(part, BASELINE, "it_per_s", by=by)
        extras = {stem: _paired_difference(part, BASELINE, column, by=by) for stem, column in EXTRA_MEASURES.items()}
        for model in [m for m in MODELS if m in set(part["model"])]:
            row: dict[str, Any] = {"release": env.release, "jax": env.jax, "python": env.python, "model": model}
            for variant in ("filter_pmap", "pmap_cached"):
                r = iqr_stats(ratios[(ratios["model"] == model) & (ratios["variant"] == variant)]["ratio"])
                row.update({f"{variant}_ratio_{k}": r[k] for k in ("median", "q25", "q75")})
            for stem, diffs in extras.items():
                e = iqr_stats(1e3 * diffs[(diffs["model"] == model) & (diffs["variant"] == "filter_pmap")]["difference"])
                row.update({f"{stem}_{k}": e[k] for k in ("median", "q25", "q75")})
            row["pairs"] = e["n"]
            for variant in VARIANTS:
                sel = part[(part["model"] == model) & (part["variant"] == variant)]
                row[f"{variant}_ms_per_call"] = 1e3 * float(np.median(sel["wall_s_per_call"]))
                row[f"{variant}_cpu_ms_per_call"] = 1e3 * float(np.median(sel["cpu_s_per_call"]))
                row[f"{variant}_it_per_s"] = float(np.median(sel["it_per_s"]))
            row.update({"status": env.status, "error": env.error})
            rows.append(row)
    return pd.DataFrame(rows)


def display_table(table: pd.DataFrame) -> pd.DataFrame:
    """The table as it reads in an issue: ``median [q25, q75]`` strings."""
    out = []
    for r in table.to_dict("records"):
        if r.get("model", "-") == "-":
            out.append({"equinox": r["release"], "jax": r["jax"], "model": "-",
                        "filter_pmap / pmap it/s": "failed", "extra CPU ms/call": "-", "extra wall ms/call": "-",
                        "cached fix / pmap it/s": "-", "pmap ms/call": "-", "filter_pmap ms/call": "-",
                        "note": _short_error(r.get("error", ""))})
            continue
        out.append({
            "equinox": r["release"], "jax": r["jax"], "model": r["model"],
            "filter_pmap / pmap it/s": _fmt({k: r[f"filter_pmap_ratio_{k}"] for k in ("median", "q25", "q75")}),
            "extra CPU ms/call": _fmt({k: r[f"extra_cpu_ms_{k}"] for k in ("median", "q25", "q75")}, 1),
            "extra wall ms/call": _fmt({k: r[f"extra_ms_{k}"] for k in ("median", "q25", "q75")}, 1),
            "cached fix / pmap it/s": _fmt({k: r[f"pmap_cached_ratio_{k}"] for k in ("median", "q25", "q75")}),
            "pmap ms/call": f"{r['pmap_params_ms_per_call']:.2f}",
            "filter_pmap ms/call": f"{r['filter_pmap_ms_per_call']:.2f}",
            "note": "",
        })
    return pd.DataFrame(out)


def _short_error(error: str, limit: int = 160) -> str:
    line = " ".join(str(error).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


# ---------------------------------------------------------------- figure


def plot_overhead_vs_release(table: pd.DataFrame):
    """Three panels vs Equinox release: filter_pmap's extra host-CPU ms and extra
    wall ms per call over ``jax.pmap`` on params, and the it/s ratio; per-pair
    median with IQR bars, one marker shape per JAX version, the releases that
    share one JAX shaded.

    Returns (figure, the plotted data).
    """
    import matplotlib.pyplot as plt
    import seaborn as sns

    data = table[table["model"] != "-"].copy()
    if data.empty:
        raise ValueError("table has no measured release: every environment failed (see its error column).")
    order = sorted(dict.fromkeys(data["release"]), key=_release_key)
    data["x"] = data["release"].map({r: i for i, r in enumerate(order)})
    jax_of = dict(zip(data["release"], data["jax"]))
    jax_versions = list(dict.fromkeys(jax_of[r] for r in order))
    markers = dict(zip(jax_versions, ["o", "s", "D", "^", "v", "P"]))
    models = [m for m in MODELS if m in set(data["model"])]
    colors = dict(zip(models, sns.color_palette("tab10", n_colors=len(models))))
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.6))
    panels = [
        ("extra_cpu_ms", "filter_pmap's extra host-CPU ms per call over jax.pmap\n"
                         "(dispatching thread; per-pair median, IQR bars)"),
        ("extra_ms", "filter_pmap's extra wall ms per call over jax.pmap\n(blocked calls; per-pair median, IQR bars)"),
        ("filter_pmap_ratio", "filter_pmap it/s ÷ jax.pmap it/s\n(per-pair median, IQR bars; 1 = no overhead)"),
    ]
    offsets = {m: (i - (len(models) - 1) / 2) * 0.12 for i, m in enumerate(models)}
    for ax, (stem, label) in zip(axes, panels):
        for jax_version in jax_versions:
            group = [i for i, r in enumerate(order) if jax_of[r] == jax_version]
            if len(group) > 1:
                ax.axvspan(min(group) - 0.4, max(group) + 0.4, color="0.92", zorder=0)
                ax.text((min(group) + max(group)) / 2, 0.98, f"same jax {jax_version}:\nEquinox's change only",
                        transform=ax.get_xaxis_transform(), ha="center", va="top", fontsize=8, color="0.3")
        for model in models:
            part = data[data["model"] == model].sort_values("x")
            xs = part["x"] + offsets[model]
            ax.plot(xs, part[f"{stem}_median"], color=colors[model], lw=1, alpha=0.6)
            for x, row in zip(xs, part.itertuples(index=False)):
                med, lo, hi = (getattr(row, f"{stem}_{k}") for k in ("median", "q25", "q75"))
                ax.errorbar([x], [med], yerr=[[med - lo], [hi - med]], fmt=markers[row.jax], color=colors[model],
                            ms=6, capsize=3)
        if stem == "filter_pmap_ratio":
            ax.axhline(1.0, color="0.4", lw=0.8, ls="--")
        else:
            ax.axhline(0.0, color="0.4", lw=0.8, ls="--")
        ax.set_xticks(range(len(order)))
        ax.set_xticklabels([f"{r}\njax {jax_of[r]}" for r in order], fontsize=8)
        ax.set_xlim(-0.6, len(order) - 0.4)
        ax.set_xlabel("Equinox release (and the JAX it ran on)")
        ax.set_ylabel(label, fontsize=9)
        # Headroom above the data for the shaded group's label (and, on the ratio panel, the legend).
        top = ax.get_ylim()[1] * 1.25
        ax.set_ylim(bottom=0, top=max(top, 1.75) if stem == "filter_pmap_ratio" else top)
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=colors[m], lw=2, label=m) for m in models]
    handles += [Line2D([], [], color="0.3", marker=markers[j], ls="", label=f"jax {j}") for j in jax_versions]
    axes[-1].legend(handles=handles, fontsize=7, loc="upper right", ncol=1, framealpha=0.9)
    fig.suptitle("Does Equinox 0.10 make filter_pmap cheaper? (equinox#192; no-op step, 8 host devices)", fontsize=11)
    cols = ["release", "jax", "model", "x"] + [f"{s}_{k}" for s, _ in panels for k in ("median", "q25", "q75")]
    return fig, data[cols].reset_index(drop=True)


# ---------------------------------------------------------------- summary


def _row(table: pd.DataFrame, release: str, model: str) -> dict[str, Any] | None:
    sel = table[(table["release"] == release) & (table["model"] == model)]
    return None if sel.empty else sel.iloc[0].to_dict()


def _stats(row: dict[str, Any], stem: str) -> dict[str, float]:
    return {k: float(row[f"{stem}_{k}"]) for k in ("median", "q25", "q75")}


def _overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return not (a["q75"] < b["q25"] or b["q75"] < a["q25"])


def _change(before: dict[str, float], after: dict[str, float]) -> dict[str, Any]:
    cut = 1 - after["median"] / before["median"] if before["median"] > 0 else None
    return {"before": before, "after": after, "cut_fraction": cut, "iqr_overlap": _overlap(before, after)}


def _change_text(change: dict[str, Any], unit: str = " ms per call") -> str:
    cut = change["cut_fraction"]
    how = "n/a" if cut is None else (f"{cut:.0%} less" if cut >= 0 else f"{-cut:.0%} more")
    return (f"{_fmt(change['before'], 1)} -> {_fmt(change['after'], 1)}{unit} ({how}; IQRs "
            f"{'overlap' if change['iqr_overlap'] else 'do not overlap'})")


def summarize(table: pd.DataFrame, environments: pd.DataFrame, *, bench: BenchConfig, rounds: int,
              host_devices: int) -> tuple[dict[str, Any], str]:
    """summary.json's content and an issue-ready summary.md for equinox#192.

    The verdict on 0.10 compares the last pre-0.10 release with the 0.10 release
    on the same JAX, by filter_pmap's extra host-CPU ms per call over
    ``jax.pmap``: "yes" when it is lower for every model with non-overlapping
    IQRs, "partly" for some, else "no measurable change". Wall time and it/s
    ratios are reported beside it.
    """
    measured = table[table["model"] != "-"]
    releases = sorted(dict.fromkeys(measured["release"]), key=_release_key)
    jax_of = dict(zip(measured["release"], measured["jax"]))
    models = [m for m in MODELS if m in set(measured["model"])]
    before = [r for r in releases if _release_key(r) < (0, 10)]
    after = [r for r in releases if (0, 10) <= _release_key(r) < (0, 11)]
    pairs = [(b, a) for a in after for b in before if jax_of[a] == jax_of[b]]
    comparisons: dict[str, Any] = {}
    verdict: dict[str, Any] | None = None
    lines = ["## Does Equinox 0.10 make `filter_pmap` cheaper? Numbers for #192", ""]
    method = [
        f"The seed's no-op step `step(model, x, opt_state) -> (0.0, model, opt_state)` on {host_devices} forced "
        "CPU host devices, timed three ways in one process per Equinox release: `eqx.filter_pmap(step)`; "
        "`jax.pmap` over `eqx.partition(model, eqx.is_array)[0]`, partitioned once outside the loop (the baseline); "
        "and a cached fix (params and optimiser state flattened once, treedef cached, one `jax.pmap` over the flat "
        "leaves reused, the loop carrying the flat leaves). "
        f"Models: an `eqx.nn.MLP` (depth {bench.mlp_depth}, width {bench.mlp_width}) and a {bench.blocks}-block "
        f"transformer (d_model {bench.d_model}, `eqx.nn.MultiheadAttention`), with momentum-like optimiser state "
        "mirroring the params. Every method returns the same pytree (checked first). "
        f"Warm-up {bench.warmup} calls excluded; {bench.repeats} repeats x {rounds} round(s) of {bench.number} "
        "blocked calls per method, methods interleaved in rotated order, releases round-robin; differences and "
        "ratios are per pair (same repeat, back to back), summarised as median [q25, q75].",
        "",
        "*Extra CPU ms* is the dispatching thread's CPU time per call (`time.thread_time`) of `filter_pmap` minus "
        "`jax.pmap`: the host work Equinox adds, and the steadiest measure on a shared machine. *Extra wall ms* is "
        "the same for blocked wall time, which also carries the 8-device execution and other processes' noise.",
        "",
    ]
    if pairs:
        for b, a in pairs:
            for model in models:
                rb, ra = _row(measured, b, model), _row(measured, a, model)
                comparisons[f"{model}: {b} -> {a}"] = {
                    "model": model, "before": b, "after": a, "jax": jax_of[a],
                    "extra_cpu_ms": _change(_stats(rb, "extra_cpu_ms"), _stats(ra, "extra_cpu_ms")),
                    "extra_wall_ms": _change(_stats(rb, "extra_ms"), _stats(ra, "extra_ms")),
                    "it_per_s_ratio": _change(_stats(rb, "filter_pmap_ratio"), _stats(ra, "filter_pmap_ratio")),
                }
        # The maintainer's question is about the step into 0.10: judge it against the last release before it.
        b, a = pairs[-1]
        judged = [v for v in comparisons.values() if v["before"] == b and v["after"] == a]
        helped = [v["model"] for v in judged
                  if (v["extra_cpu_ms"]["cut_fraction"] or 0) > 0 and not v["extra_cpu_ms"]["iqr_overlap"]]
        answer = "yes" if len(helped) == len(judged) else ("partly" if helped else "no measurable change")
        verdict = {"before": b, "after": a, "jax": jax_of[a], "answer": answer, "helped_models": helped,
                   "judged_by": "extra host-CPU ms per call, per pair, non-overlapping IQRs"}
        lines += [f"**Does 0.10 help? {answer[0].upper() + answer[1:]}.** Equinox {b} -> {a}, both on jax "
                  f"{jax_of[a]}, so the change is Equinox's alone:", ""]
        for v in judged:
            lines.append(f"- {v['model']}: extra CPU {_change_text(v['extra_cpu_ms'])}; extra wall "
                         f"{_change_text(v['extra_wall_ms'])}; it/s vs `jax.pmap` "
                         f"{_fmt(v['it_per_s_ratio']['before'])} -> {_fmt(v['it_per_s_ratio']['after'])}.")
        others = [v for v in comparisons.values() if (v["before"], v["after"]) != (b, a)]
        if others:
            lines += ["", "Earlier releases on the same JAX (0.7.1 was current when #192 was filed):", ""]
            for v in others:
                lines.append(f"- {v['model']}, {v['before']} -> {v['after']}: extra CPU "
                             f"{_change_text(v['extra_cpu_ms'])}; extra wall "
                             f"{_change_text(v['extra_wall_ms'])}.")
        if any(v["extra_wall_ms"]["iqr_overlap"] for v in judged):
            lines += ["", "In blocked wall time the change is within this shared machine's noise for some model "
                          "(IQRs overlap): the wall clock also carries the 8-device execution on 2 cores and other "
                          "processes; the thread-CPU measure isolates the host work that Equinox changed."]
        after_ratios = [v["it_per_s_ratio"]["after"]["median"] for v in judged]
        lines += ["", f"0.10 does not close the gap: after it, `filter_pmap` still runs at "
                      f"{min(after_ratios):.2f}-{max(after_ratios):.2f}x the it/s of `jax.pmap` on params here."
                  if max(after_ratios) < 0.9 else "After 0.10, `filter_pmap` is within 10% of `jax.pmap`'s it/s."]
    else:
        lines += ["**Not answered in this run:** it did not measure a pre-0.10 and a 0.10 release on the same JAX "
                  "(the full run does: 0.7.1, 0.9.2 and 0.10.2 all on jax 0.4.13)."]
    lines.append("")
    today: dict[str, Any] = {}
    if len(releases) > 1:
        newest, oldest = releases[-1], releases[0]
        lines += [f"**Today's release ({newest}, jax {jax_of[newest]}) against {oldest} (jax {jax_of[oldest]}):**", ""]
        for model in models:
            rn, ro = _row(measured, newest, model), _row(measured, oldest, model)
            today[model] = {
                "release": newest, "jax": jax_of[newest], "against": oldest,
                "extra_cpu_ms": _change(_stats(ro, "extra_cpu_ms"), _stats(rn, "extra_cpu_ms")),
                "extra_wall_ms": _change(_stats(ro, "extra_ms"), _stats(rn, "extra_ms")),
                "it_per_s_ratio": _stats(rn, "filter_pmap_ratio"),
                "cached_fix_ratio": _stats(rn, "pmap_cached_ratio"),
                "pmap_cpu_ms_per_call": rn["pmap_params_cpu_ms_per_call"],
                "pmap_cpu_ms_per_call_then": ro["pmap_params_cpu_ms_per_call"],
            }
            # The baseline moved with JAX too; its thread-CPU time is the measure steady enough to compare
            # across processes (its wall time drifted either way between runs on this machine).
            slower_pmap = rn["pmap_params_cpu_ms_per_call"] > 1.1 * ro["pmap_params_cpu_ms_per_call"]
            lines.append(
                f"- {model}: extra CPU {_change_text(today[model]['extra_cpu_ms'])}; extra wall "
                f"{_change_text(today[model]['extra_wall_ms'])}; it/s vs `jax.pmap` {_fmt(_stats(rn, 'filter_pmap_ratio'))} "
                f"(was {_fmt(_stats(ro, 'filter_pmap_ratio'))}). `jax.pmap` on params itself: "
                f"{rn['pmap_params_cpu_ms_per_call']:.2f} host-CPU ms per call (was {ro['pmap_params_cpu_ms_per_call']:.2f})"
                + (", slower, so part of a better ratio is a slower baseline" if slower_pmap else "")
                + f". The cached fix: {_fmt(_stats(rn, 'pmap_cached_ratio'))}x `jax.pmap`'s it/s."
            )
        lines.append("")
    failed = environments[environments["status"] != "ok"] if "status" in environments else environments
    display = display_table(table)
    lines += ["| " + " | ".join(display.columns) + " |", "|" + "|".join("---" for _ in display.columns) + "|"]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in display.itertuples(index=False)]
    lines += [
        "",
        "Ratios: per-pair it/s of the method over `jax.pmap` on params. Compare releases by these within-process "
        "differences and ratios: absolute times drift between processes on a shared machine.",
        "",
        "**What cannot be reproduced here:**",
        "",
        "- 2022's JAX: PyPI no longer serves a jaxlib older than 0.4.13 (`pip index versions jaxlib` lists 0.4.13 "
        "as the oldest for Python 3.8 to 3.11, checked 2026-11), so 0.7.1 runs on jax 0.4.13 (mid-2023), not on the "
        "jax 0.3.x it was released with; the absolute 2022 numbers cannot be rebuilt.",
        "- The TPU v3-8 of the report: these are 8 forced host devices on a small shared CPU, where even a no-op "
        "across 8 devices costs milliseconds; the extra host milliseconds carry over, the it/s do not.",
        "- Equinox 0.10.0 and 0.10.1 do not import on jax 0.4.13 (they use `jax.interpreters.xla.xla_call_p`); "
        "0.10.2 stands for the 0.10 line.",
        "- Later rows change JAX as well as Equinox (0.11.12 on jax 0.5.1, 0.13.8 on jax 0.12.0.1): only releases "
        "on the same JAX isolate Equinox's change.",
    ]
    if len(failed):
        lines += ["", "**Environments that failed** (reported, not measured):", ""]
        lines += [f"- equinox {r.release}: {_short_error(r.error, 400)}" for r in failed.itertuples(index=False)]
    summary = {
        "question": "equinox#192: does Equinox 0.10 make filter_pmap faster at a fixed JAX, and how does today's release compare?",
        "method_note": " ".join(method).strip(),
        "releases_measured": releases,
        "releases_failed": {r.release: r.error for r in failed.itertuples(index=False)},
        "jax_of_release": jax_of,
        "verdict": verdict,
        "fixed_jax_comparisons": comparisons,
        "today": today,
        "table": table.to_dict("records"),
        "bench": dataclasses.asdict(bench),
        "rounds": rounds,
        "host_devices": host_devices,
    }
    return summary, "\n".join(lines[:2] + method + lines[2:])
