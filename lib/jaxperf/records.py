"""The one writer of study outputs: tidy CSV + JSON provenance sidecar,
summary.json and summary.md, each written atomically (temp file + rename)."""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd


def _atomic_write(path: Path, data: bytes) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
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
    text = json.dumps(_jsonable(payload), indent=2, sort_keys=False, allow_nan=False) + "\n"
    return _atomic_write(Path(path), text.encode())


def write_text(path: Path, text: str) -> Path:
    return _atomic_write(Path(path), text.encode())


def write_records(df: pd.DataFrame, path: Path, provenance: dict[str, Any]) -> Path:
    """Write ``df`` as ``path`` (.csv) and its provenance as ``path``.json."""
    path = Path(path).with_suffix(".csv")
    _atomic_write(path, df.to_csv(index=False).encode())
    write_json(
        path.with_suffix(".json"),
        {"data": path.name, "columns": list(df.columns), "rows": len(df), "provenance": provenance},
    )
    return path


def read_records(path: Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    path = Path(path).with_suffix(".csv")
    return pd.read_csv(path), json.loads(path.with_suffix(".json").read_text())["provenance"]


def write_summary(study_dir: Path, summary: dict[str, Any], markdown: str) -> tuple[Path, Path]:
    """``summary.json`` (headline numbers) and ``summary.md`` (issue-ready)."""
    study_dir = Path(study_dir)
    return write_json(study_dir / "summary.json", summary), write_text(study_dir / "summary.md", markdown)


def markdown_table(df: pd.DataFrame, floatfmt: str = "{:.3g}") -> str:
    """A GitHub-flavoured Markdown table (no tabulate dependency)."""

    def cell(v: Any) -> str:
        if isinstance(v, float):
            return "n/a" if math.isnan(v) else floatfmt.format(v)
        return str(v)

    header = "| " + " | ".join(map(str, df.columns)) + " |"
    rule = "|" + "|".join("---" for _ in df.columns) + "|"
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([header, rule, *body])
