"""A notebook's line in the run summary: "ok", "partial", "FAILED" or "kept" (not run: its
published results still hold), and what its studies
recorded as skipped (``jaxperf_study.study``'s ``skip``, written as summary.json's ``skipped``),
read back from the files the notebook published."""

from __future__ import annotations

import json
from pathlib import Path

OK, PARTIAL, FAILED, UNCHANGED = "ok", "partial", "FAILED", "kept"


def _summaries(files: list[str]) -> list[tuple[str, str]]:
    """``(backend/study, file)`` for each ``results/<backend>/<study>/summary.json`` in ``files``."""
    out = []
    for rel in files:
        parts = Path(rel).parts
        if len(parts) == 4 and parts[0] == "results" and parts[3] == "summary.json":
            out.append((f"{parts[1]}/{parts[2]}", rel))
    return out


def studies(files: list[str]) -> set[str]:
    """The studies (``backend/study``) whose summary is among ``files``."""
    return {study for study, _ in _summaries(files)}


def skipped(root: Path, files: list[str]) -> list[str]:
    """``"<study>: <part>: <reason>"`` for every part the published summaries say was skipped; a
    summary that cannot be read says so (a notebook whose summary is unreadable is not whole)."""
    lines = []
    for study, rel in _summaries(files):
        try:
            data = json.loads((root / rel).read_text())
        except (OSError, ValueError) as err:
            lines.append(f"{study}: its summary.json cannot be read ({err})")
            continue
        for item in data.get("skipped") or []:
            if isinstance(item, dict):
                lines.append(f"{study}: {item.get('part', '?')}: {item.get('reason', 'no reason given')}")
            else:
                lines.append(f"{study}: {item}")
    return lines
