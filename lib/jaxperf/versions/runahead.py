"""Which Equinox release made ``eqx.filter_jit`` wait for every call? Measured per release.

``bench_runahead.py`` (self-contained) runs in each release's own environment (built or
reused by :func:`jaxperf.versions.envs.ensure_env`, as the filter_pmap matrix does), on
one CPU host device, and times a step whose device time is far above its host time
through ``jax.jit`` and ``eqx.filter_jit``: enqueue-only and blocked seconds per call,
interleaved. :func:`table` gives each release's verdict by the study's rule
(:mod:`jaxperf.runs_ahead`, ``jax.jit`` as the reference), and :func:`first_waiting`
names the release that made calls synchronous from those verdicts: the first release,
among those on one JAX, whose ``filter_jit`` waits while the release before it runs ahead.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from .. import markdown
from .. import runs_ahead as rule
from ..errors import check_int
from ..paths import PROJECT_ROOT
from .bench import BenchmarkError
from .configs import RunaheadConfig
from .envs import ENVS_DIR, EnvStatus, ensure_env
from .releases import PINS_DIR, available_releases, check_releases, release_key

SCRIPT = Path(__file__).resolve().parent / "bench_runahead.py"
PROTOCOL = "jaxperf.versions.bench_runahead/1"
REFERENCE, SUBJECT = "jax.jit", "eqx.filter_jit"


def run_child(
    python_executable: str | os.PathLike, config: RunaheadConfig, *, timeout_s: int = 900
) -> dict[str, Any]:
    """Run ``bench_runahead.py`` with ``python_executable`` on one CPU host device; its JSON
    document. Raises BenchmarkError (with the child's stderr) when it fails or answers
    anything but the protocol."""
    env = dict(os.environ)
    flag = "--xla_force_host_platform_device_count"
    kept = [f for f in env.get("XLA_FLAGS", "").split() if not f.startswith(flag)]
    env.update(XLA_FLAGS=" ".join(kept + [f"{flag}=1"]), JAX_PLATFORMS="cpu")
    env.pop("PYTHONPATH", None)
    cmd = [str(python_executable), str(SCRIPT), *config.argv()]
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout_s, env=env, cwd=PROJECT_ROOT
        )
    except (subprocess.TimeoutExpired, OSError) as err:
        raise BenchmarkError(f"bench_runahead.py did not finish in {python_executable}: {err}") from err
    if proc.returncode != 0:
        raise BenchmarkError(
            f"bench_runahead.py exited {proc.returncode} in {python_executable}; its stderr:\n{proc.stderr[-4000:]}"
        )
    try:
        doc = json.loads(proc.stdout)
    except json.JSONDecodeError as err:
        raise BenchmarkError(
            f"bench_runahead.py printed no valid JSON ({err}): {proc.stdout[:300]!r}"
        ) from err
    if doc.get("protocol") != PROTOCOL or "rows" not in doc:
        raise BenchmarkError(f"bench_runahead.py answered an unknown protocol {doc.get('protocol')!r}")
    return doc


@dataclass
class RunaheadMatrix:
    """Tidy timings (one row per release, round, variant, repeat), one row per environment,
    and what each child said about itself (versions, the error check)."""

    timings: pd.DataFrame
    environments: pd.DataFrame
    documents: dict[str, list[dict[str, Any]]]


def gather(
    releases: Sequence[str],
    config: RunaheadConfig = RunaheadConfig(),
    *,
    rounds: int = 1,
    reuse_project_env: bool = True,
    envs_dir: str | os.PathLike = ENVS_DIR,
    pins_dir: str | os.PathLike = PINS_DIR,
    env_timeout_s: int = 900,
    bench_timeout_s: int = 900,
    progress: Any = None,
    log: Callable[[str], None] = lambda msg: print(msg, file=sys.stderr),
) -> RunaheadMatrix:
    """Build or reuse each release's environment, then run the benchmark in each,
    round-robin over ``rounds``; a release that fails is reported with its error."""
    known = available_releases(pins_dir)
    releases = check_releases(list(releases), pins_dir=pins_dir)
    check_int("rounds", rounds, minimum=1)
    statuses: dict[str, EnvStatus] = {
        r: ensure_env(
            known[r], envs_dir=envs_dir, reuse_project_env=reuse_project_env, timeout_s=env_timeout_s, log=log
        )
        for r in releases
    }
    frames: list[pd.DataFrame] = []
    documents: dict[str, list[dict[str, Any]]] = {r: [] for r in releases}
    for round_index in range(rounds):
        for release in releases:
            status = statuses[release]
            if status.ok and status.python_executable is not None:
                try:
                    doc = run_child(status.python_executable, config, timeout_s=bench_timeout_s)
                except BenchmarkError as err:
                    status.error = f"BenchmarkError: {err}"
                    log(f"versions: equinox {release} runs-ahead benchmark failed: {err}")
                else:
                    documents[release].append(doc)
                    frame = pd.DataFrame(doc["rows"])
                    for col, value in (
                        ("round", round_index),
                        ("jax", doc["versions"]["jax"]),
                        ("equinox", doc["versions"]["equinox"]),
                        ("release", release),
                    ):
                        frame.insert(0, col, value)
                    frames.append(frame)
            if progress is not None:
                progress.update(1)
    env_rows = [
        {
            "release": r,
            "python": known[r].python,
            "jax": known[r].jax,
            "environment": statuses[r].kind or "-",
            "rounds_run": len(documents[r]),
            "status": "ok" if statuses[r].ok else "failed",
            "error": statuses[r].error or "",
        }
        for r in releases
    ]
    columns = ["release", "equinox", "jax", "round", "variant", "repeat"]
    timings = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)
    return RunaheadMatrix(timings, pd.DataFrame(env_rows), documents)


def table(matrix: RunaheadMatrix) -> pd.DataFrame:
    """One row per (release, variant): enqueue and blocked ms per call, their ratio
    (median [q25, q75] over every pair of every round), the verdict and its margin, and
    where a failing ``eqx.error_if`` raised. Releases oldest first."""
    if matrix.timings.empty:
        return pd.DataFrame(columns=["release", "jax", "variant", "verdict"])
    out = rule.verdicts(matrix.timings, REFERENCE, by=["release", "jax"], key="variant")
    checks = {r: docs[0]["error_check"] for r, docs in matrix.documents.items() if docs}
    out["error_if_raised"] = [
        checks.get(r, {}).get("raised", "") if v == SUBJECT else ""
        for r, v in zip(out["release"], out["variant"])
    ]
    out["_key"] = out["release"].map(release_key)
    return (
        out.sort_values(["_key", "variant"], ascending=[True, False])
        .drop(columns="_key")
        .reset_index(drop=True)
    )


def first_waiting(verdict_table: pd.DataFrame) -> dict[str, Any] | None:
    """The release that made ``eqx.filter_jit`` wait, from the measured verdicts: among the
    releases on one JAX, oldest first, the first whose filter_jit waits for each call right
    after one whose filter_jit runs ahead. None when no such pair was measured."""
    subject = verdict_table[verdict_table["variant"] == SUBJECT]
    for jax_version, part in subject.groupby("jax", sort=False):
        rows = part.to_dict("records")
        for before, after in zip(rows, rows[1:]):
            if before["verdict"] == rule.RUNS_AHEAD and after["verdict"] == rule.WAITS:
                return {
                    "release": after["release"],
                    "previous": before["release"],
                    "jax": jax_version,
                    "before": before,
                    "after": after,
                }
    return None


def section(
    verdict_table: pd.DataFrame, environments: pd.DataFrame, config: RunaheadConfig, *, quick: bool
) -> tuple[dict[str, Any], str]:
    """summary.json's ``filter_jit_runahead`` part and its Markdown section (the answer in one
    paragraph, the method and the table folded)."""
    found = None if quick else first_waiting(verdict_table)
    lines = ["## Which release made `eqx.filter_jit` wait for every call?", ""]
    if quick:
        lines += [markdown.smoke_notice(True), ""]
    if found:
        b, a = found["before"], found["after"]
        lines += [
            f"**Equinox {found['release']}**, measured: on jax {found['jax']}, `eqx.filter_jit` runs ahead in "
            f"{found['previous']} (enqueue {b['enqueue_ms_per_call']:.2f} ms per call of a "
            f"{b['blocked_ms_per_call']:.1f} ms step: ratio {b['ratio_median']:.2f}) and waits for each call from "
            f"{found['release']} on (enqueue {a['enqueue_ms_per_call']:.1f} ms of {a['blocked_ms_per_call']:.1f} ms: "
            f"ratio {a['ratio_median']:.2f}).",
            "",
        ]
    elif not quick:
        lines += [
            "**Not named by this run:** no pair of releases on one JAX went from running ahead to waiting.",
            "",
        ]
    method = (
        f"The step: {config.layers} products of a {config.batch} x {config.width} activation with "
        f"{config.width} x {config.width} weights, each then `tanh`, on one CPU host device, through `jax.jit` "
        "(the reference, known to run ahead) and `eqx.filter_jit`, interleaved in one process per release: "
        f"{config.repeats} repeats of {config.number} blocked calls and {config.number} enqueued calls (blocked "
        "once after), per round. Rule (`jaxperf.runs_ahead`): runs ahead when the upper quartile of "
        f"enqueue/blocked per pair is below {rule.BOUNDARY}, waits when the lower quartile is above it; not judged "
        f"when `jax.jit`'s own upper quartile is not below {rule.HEAVY_ENOUGH_BELOW}. The release is named from "
        "these verdicts, not from Equinox's history. *error_if raised*: where a failing `eqx.error_if` inside "
        "`eqx.filter_jit` raised."
    )
    shown = (
        verdict_table.assign(
            ratio=[
                markdown.fmt_stat({"median": m, "q25": lo, "q75": hi})
                for m, lo, hi in zip(
                    verdict_table["ratio_median"], verdict_table["ratio_q25"], verdict_table["ratio_q75"]
                )
            ]
        )
        if len(verdict_table)
        else verdict_table
    )
    cols = [
        "release",
        "jax",
        "variant",
        "enqueue_ms_per_call",
        "blocked_ms_per_call",
        "ratio",
        "verdict",
        "margin",
        "error_if_raised",
    ]
    body = [
        method,
        "",
        markdown.table(shown[[c for c in cols if c in shown]]) if len(shown) else "(nothing measured)",
    ]
    failed = environments[environments["status"] != "ok"] if "status" in environments else environments
    if len(failed):
        body += [
            "",
            "Environments that failed: "
            + "; ".join(f"{r.release}: {r.error[:300]}" for r in failed.itertuples()),
        ]
    lines += markdown.details("How it was measured, and every release", body)
    summary = {
        "release_that_waits": found["release"] if found else None,
        "previous_release": found["previous"] if found else None,
        "jax": found["jax"] if found else None,
        "table": verdict_table.to_dict("records"),
        "config": vars(config),
        "rule": {"boundary": rule.BOUNDARY, "heavy_enough_below": rule.HEAVY_ENOUGH_BELOW},
        "smoke_run": quick,
    }
    return summary, "\n".join(lines)
