"""The issue-ready report for Equinox, filled from the run: what happens, the minimal repro and
what it printed here, the measured cost, the cause, and the proposed change shown working by
patching it in. Its prose is templates/issue.md; this module only picks the values."""

from __future__ import annotations

from typing import Any

import pandas as pd

from ... import markdown
from ... import runs_ahead as rule
from . import eqx_fix, repro
from .methods import PATCHED
from .seed_loop import SLOW


def _verdict_of(verdicts: pd.DataFrame, method: str) -> dict[str, Any] | None:
    rows = verdicts[(verdicts["method"] == method) & (~verdicts["donated"])]
    return rows.iloc[0].to_dict() if len(rows) else None


def section(
    summary: dict[str, Any],
    verdicts: pd.DataFrame,
    repro_rows: pd.DataFrame,
    error_rows: pd.DataFrame,
    versions: dict[str, str],
    backend: str = "cpu",
) -> str:
    """The Markdown to paste into an Equinox issue; ``backend`` is where it was measured."""
    repro_table = repro_rows[["equinox", "variant", "enqueue_ms", "done_ms"]].rename(
        columns={"enqueue_ms": "ms per call enqueued", "done_ms": "ms per call done"}
    )
    loop = {k: v for k, v in summary["loop"].items() if not isinstance(v, dict) or v.get("measured")}
    values = {
        "smoke": "\n" + markdown.SMOKE_NOTICE + "\n" if summary.get("smoke_run") else "",
        "fj": _verdict_of(verdicts, SLOW),
        "fixed": _verdict_of(verdicts, PATCHED),
        "cached": _verdict_of(verdicts, "cached_filter_jit"),
        "loop": loop,
        "backend": backend,
        "versions": ", ".join(f"{k} {v}" for k, v in versions.items()),
        "repro": repro.REPRO_SCRIPT,
        "repro_table": markdown.table(repro_table),
        "diff": eqx_fix.fix_diff().strip(),
        "checks": markdown.table(error_rows[["variant", "raised", "error", "message"]]),
        "boundary": rule.BOUNDARY,
    }
    return markdown.fill(markdown.template("jaxperf.dispatch.runahead", "issue.md"), values)
