"""Registered predictions: written once, before the measurement they predict, never edited.

A registered prediction is a pair ``results/predictions/<device>_<date>.json``
(what was predicted, when, at which commit, by which model version, from which
inputs) and ``.csv`` (one row per predicted point), committed by itself.
:func:`register` writes a new pair and refuses to overwrite one: a better model
is a new, dated file. :func:`check_registered` is what the tests hold the
repository to: each pair is committed, unchanged since the commit that added
it, made at a commit that is an ancestor of that one, and older than every GPU
result (by timestamp, and by history: the commit adding the prediction is an
ancestor of each commit adding a file under ``results/gpu``, and of the tree a
device run records having run).
"""

from __future__ import annotations

import datetime as _dt
import json
import subprocess
from pathlib import Path
from typing import Any

import pandas as pd

from .. import provenance, records
from ..errors import bad_value
from ..paths import PROJECT_ROOT

MODEL_VERSION = "1"
PREDICTIONS = Path("results") / "predictions"
GPU_RESULTS = Path("results") / "gpu"


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=30)


def register(
    rows: pd.DataFrame,
    meta: dict[str, Any],
    *,
    device_key: str,
    root: Path = PROJECT_ROOT,
    date: str | None = None,
    allow_dirty: bool = False,
) -> tuple[Path, Path]:
    """Write ``rows`` and ``meta`` as a new registered pair ``<device_key>_<date>[_n]`` under
    ``root/results/predictions``; returns (json, csv). The commit is the tree's HEAD, which
    must be clean (``allow_dirty`` only for tests). Never overwrites an existing pair."""
    if not device_key.isidentifier():
        raise bad_value("device_key", device_key, "a name like 'h200'")
    git = provenance.git_commit() if Path(root) == PROJECT_ROOT else _commit_of(Path(root))
    if git.get("dirty") and not allow_dirty:
        raise RuntimeError(
            f"the tree at {git.get('commit')} has uncommitted changes: commit the model first, "
            "so that the prediction names the code that made it"
        )
    date = date or _dt.datetime.now(_dt.UTC).date().isoformat()
    folder = Path(root) / PREDICTIONS
    folder.mkdir(parents=True, exist_ok=True)
    stem, n = f"{device_key}_{date}", 1
    while (folder / f"{stem}.json").exists() or (folder / f"{stem}.csv").exists():
        n += 1
        stem = f"{device_key}_{date}_{n}"
    data = rows.to_csv(index=False).encode()
    payload = {
        "name": stem,
        "label": "PREDICTED by jaxperf.gpu_model before any measurement on this device; not a measurement",
        "created_utc": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "git": git,
        "model_version": MODEL_VERSION,
        "data": f"{stem}.csv",
        "rows": len(rows),
        **meta,
    }
    csv_path = records.atomic_write(folder / f"{stem}.csv", data)
    json_path = records.write_json(folder / f"{stem}.json", payload)
    return json_path, csv_path


def _commit_of(root: Path) -> dict[str, Any]:
    head = _git(root, "rev-parse", "HEAD")
    status = _git(root, "status", "--porcelain", "--untracked-files=no")
    return {"commit": head.stdout.strip() or "unknown", "dirty": bool(status.stdout.strip())}


def registered(root: Path = PROJECT_ROOT) -> list[tuple[dict[str, Any], pd.DataFrame]]:
    """Every registered pair under ``root``, oldest first: (its JSON, its rows)."""
    out = []
    for path in sorted((Path(root) / PREDICTIONS).glob("*.json")):
        meta = json.loads(path.read_text())
        out.append((meta, pd.read_csv(path.with_suffix(".csv"))))
    return sorted(out, key=lambda pair: pair[0].get("created_utc", ""))


def _first_added(root: Path, rel: str) -> str | None:
    log = _git(root, "log", "--diff-filter=A", "--format=%H", "--", rel)
    commits = log.stdout.split()
    return commits[-1] if log.returncode == 0 and commits else None


def _is_ancestor(root: Path, older: str, newer: str) -> bool:
    return _git(root, "merge-base", "--is-ancestor", older, newer).returncode == 0


def _gpu_results(root: Path) -> list[tuple[str, dict[str, Any]]]:
    """(path, provenance) of every records sidecar and part summary under ``results/gpu``."""
    out = []
    for path in sorted((Path(root) / GPU_RESULTS).rglob("*.json")):
        try:
            meta = json.loads(path.read_text())
        except ValueError:
            continue
        prov = meta.get("provenance") if isinstance(meta, dict) else None
        out.append((str(path.relative_to(root)), prov if isinstance(prov, dict) else {}))
    return out


def check_registered(root: Path = PROJECT_ROOT) -> list[str]:
    """Everything wrong with the registered predictions under ``root`` ([] when all is well)."""
    root = Path(root)
    problems: list[str] = []
    gpu = _gpu_results(root)
    for path in sorted((root / PREDICTIONS).glob("*.json")):
        meta = json.loads(path.read_text())
        created = meta.get("created_utc", "")
        for member in (path, path.with_suffix(".csv")):
            rel = str(member.relative_to(root))
            added = _first_added(root, rel)
            if added is None:
                problems.append(f"{rel}: not committed (a prediction is registered by committing it)")
                continue
            then = _git(root, "show", f"{added}:{rel}")
            if then.returncode != 0 or then.stdout != member.read_text():
                problems.append(f"{rel}: changed since {added[:10]} registered it (make a new, dated file)")
            if member.suffix != ".json":
                continue
            made_at = str(meta.get("git", {}).get("commit", ""))
            if not made_at or not _is_ancestor(root, made_at, added):
                problems.append(f"{rel}: made at {made_at[:10] or '?'}, not an ancestor of {added[:10]}")
            for result, prov in gpu:
                first = _first_added(root, result)
                if first is not None and not _is_ancestor(root, added, first):
                    problems.append(f"{rel}: {result} was committed before this prediction ({first[:10]})")
                ran = str(prov.get("device_run", {}).get("tree_commit", ""))
                if ran and ran != "unknown" and not _is_ancestor(root, added, ran):
                    problems.append(f"{rel}: {result} ran on tree {ran[:10]}, which lacks this prediction")
        for result, prov in gpu:
            stamp = str(prov.get("timestamp_utc", ""))
            if stamp and created and stamp < created:
                problems.append(f"{path.name}: created {created}, after {result} was measured ({stamp})")
    return problems


def frame_from(meta: dict[str, Any], rows: pd.DataFrame) -> pd.DataFrame:
    """A registered pair's rows with the pair's name on each (for joining several files)."""
    return rows.assign(prediction=meta.get("name", "?"), model_version=meta.get("model_version", "?"))
