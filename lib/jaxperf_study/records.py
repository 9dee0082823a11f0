"""The one writer (and checked reader) of study outputs: tidy CSV + JSON sidecar, summary.json
and summary.md. Every file is written atomically and durably (:func:`atomic_write`). A CSV's
sidecar, written after it, records its rows, columns, size and SHA-256; :func:`read_records`
raises :class:`RecordsError`, naming the file, for a pair that is missing, empty, truncated or
mismatched (a reader between the two renames sees a mismatch, never wrong numbers).
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd


class RecordsError(ValueError):
    """A records file (CSV or sidecar) is missing, damaged or does not match its pair."""


def _umask() -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)  # no /proc: read it by setting it back at once
    os.umask(mask)
    return mask


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems cannot fsync a folder
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` all or nothing, durably: a temporary file in the same folder,
    fsynced, given the mode ``open()`` would give it (0666 less the umask), renamed, the folder
    fsynced."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)
    return path


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Path):
        return str(value)
    return value


def write_json(path: Path, payload: Any) -> Path:
    """``payload`` as indented JSON (NaN/inf become null, numpy scalars plain numbers)."""
    text = json.dumps(_jsonable(payload), indent=2, sort_keys=False, allow_nan=False) + "\n"
    return atomic_write(Path(path), text.encode())


def write_text(path: Path, text: str) -> Path:
    return atomic_write(Path(path), text.encode())


def write_records(df: pd.DataFrame, path: Path, provenance: dict[str, Any]) -> Path:
    """Write ``df`` as ``path`` (.csv) and, after it, its sidecar ``path``.json:
    the CSV's name, columns, row count, size and SHA-256, and ``provenance``."""
    path = Path(path).with_suffix(".csv")
    data = df.to_csv(index=False).encode()
    sidecar = {
        "data": path.name,
        "columns": [str(c) for c in df.columns],
        "rows": len(df),
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "provenance": provenance,
    }
    atomic_write(path, data)
    write_json(path.with_suffix(".json"), sidecar)
    return path


def _load_sidecar(path: Path) -> dict[str, Any]:
    side = path.with_suffix(".json")
    try:
        meta = json.loads(side.read_text())
    except FileNotFoundError:
        raise RecordsError(f"{side}: the sidecar of {path.name} is missing") from None
    except ValueError as err:
        raise RecordsError(f"{side}: not valid JSON ({err}); the file is damaged or cut short") from None
    if not isinstance(meta, dict) or "rows" not in meta or "columns" not in meta:
        raise RecordsError(f"{side}: not a records sidecar (no 'rows'/'columns')")
    return meta


def read_records(path: Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    """A CSV written by :func:`write_records` and its provenance, once the pair is checked
    (RecordsError naming the file that is wrong; a sidecar without ``sha256`` by rows, columns
    and a complete last line)."""
    path = Path(path).with_suffix(".csv")
    meta = _load_sidecar(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise RecordsError(f"{path}: missing (its sidecar {path.with_suffix('.json').name} exists)") from None
    if not data:
        raise RecordsError(f"{path}: empty file (its sidecar says {meta['rows']} rows)")
    if "sha256" in meta and (
        len(data) != meta.get("bytes") or hashlib.sha256(data).hexdigest() != meta["sha256"]
    ):
        raise RecordsError(
            f"{path}: does not match its sidecar ({len(data)} bytes, sidecar says {meta.get('bytes')}; "
            "checksum differs): truncated, edited, or from another run"
        )
    if not data.endswith(b"\n"):
        raise RecordsError(f"{path}: the last line is cut short (no final newline)")
    df = pd.read_csv(io.BytesIO(data))
    if list(map(str, df.columns)) != list(meta["columns"]):
        raise RecordsError(f"{path}: columns {list(df.columns)} differ from its sidecar's {meta['columns']}")
    if len(df) != meta["rows"]:
        raise RecordsError(f"{path}: {len(df)} rows, but its sidecar says {meta['rows']}")
    return df, meta.get("provenance", {})


def write_summary(study_dir: Path, summary: dict[str, Any], markdown: str) -> tuple[Path, Path]:
    """``summary.json`` (headline numbers) and ``summary.md`` (issue-ready)."""
    study_dir = Path(study_dir)
    return write_json(study_dir / "summary.json", summary), write_text(study_dir / "summary.md", markdown)
