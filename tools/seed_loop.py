"""equinox#192 in the seed's loop, on whatever device this runs: ``python -m jaxperf diagnose`` of
notebook 01's cases (the factory ``jaxperf_study.dispatch.examples:cell``: the same step, model,
wrapper and paths as the notebook's) in fresh processes, one after another, and each path's it/s
and ratio to ``jax.pmap`` (or ``jax.jit``) on params as the median over processes with its range.

    python tools/seed_loop.py --case noop:mlp:64 [--case train:transformer:4:128 ...]
        [--family pmap] [--donated] [--processes 2] [--min-rounds 3] [--loop-seconds 1]
        [--deadline-s 480] --json PATH
    python tools/seed_loop.py merge A.json B.json ... --json PATH

``merge`` pools the processes of records made apart (device commands, each with its own
commit: a record keeps every process's commit) and summarises them again.

A case is ``step:kind:size[:microbatches]`` (``noop:transformer:12``). Every path runs the seed's
loop: at least 50 calls and ``--loop-seconds``, each call fed the previous call's state, blocked
once at its end (equinox#192's reporter read tqdm's it/s over such a loop). The processes go case
by case, process by process (all cases once, then again), so that a deadline cuts a process, never
a case; a case a deadline cut is recorded as not reached. Writes ``--json`` with each process's
diagnosis (its it/s table and ratios), the medians and ranges, the environment and the commit.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
FACTORY = "jaxperf_study.dispatch.examples:cell"
#: each path's name in the study (its palette id), the one every device's record is read by
BASELINE = {"pmap": "pmap_params", "jit": "jit_params"}


def parse_case(text: str) -> dict[str, Any]:
    """``step:kind:size[:microbatches]`` as the factory's keyword arguments."""
    parts = text.split(":")
    if len(parts) not in (3, 4) or not all(p.isdigit() for p in parts[2:]):
        raise argparse.ArgumentTypeError(
            f"--case {text!r}: expected step:kind:size[:microbatches], e.g. noop:mlp:64 or train:transformer:4:128"
        )
    case = {"step": parts[0], "kind": parts[1], "size": int(parts[2])}
    case["microbatches"] = int(parts[3]) if len(parts) == 4 else 1
    from jaxperf.errors import check_choice
    from jaxperf_study.dispatch.vocab import STEPS

    try:  # checked here, before any process starts
        check_choice("--case step", case["step"], STEPS)
        name(case)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"--case {text!r}: {err}") from None
    return case


def name(case: dict[str, Any]) -> str:
    """The study's model name: mlp_depth64, transformer_4layers_x128 (``ModelSpec.name``)."""
    from jaxperf_study.dispatch.models import ModelSpec

    return ModelSpec(case["kind"], case["size"], microbatches=case["microbatches"]).name


def one(case: dict[str, Any], a: argparse.Namespace, out: Path) -> dict[str, Any]:
    """One fresh process's diagnosis of ``case`` (its JSON; an "error" key if it failed)."""
    args = [sys.executable, "-m", "jaxperf", "diagnose", FACTORY, "--json", str(out)]
    for key, value in {**case, "family": a.family, "donated": a.donated}.items():
        args += ["--arg", f"{key}={value!r}"]
    args += ["--min-rounds", str(a.min_rounds), "--loop-seconds", str(a.loop_seconds)]
    args += ["--max-seconds", str(a.max_seconds)]
    started = time.time()
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
    print(proc.stdout[-3000:], proc.stderr[-2000:], sep="\n", flush=True)
    found = json.loads(out.read_text()) if out.is_file() else {"error": proc.stderr.strip()[-500:]}
    found["process_seconds"] = round(time.time() - started, 1)
    return found


def spread(values: list[float]) -> dict[str, Any]:
    """The per-process values as the study states them (``jaxperf_study.reruns.spread_of``): their
    median, and the rerun range (where a rerun's median of as many processes is expected, never
    narrower than their own lowest and highest), ``n`` processes."""
    from jaxperf_study.reruns import spread_of

    arr = np.asarray([v for v in values if v is not None and np.isfinite(v)], dtype=float)
    if not arr.size:
        return {"median": None, "lo": None, "hi": None, "n": 0}
    found = spread_of(arr, process=np.arange(arr.size))
    return {k: found[k] for k in ("median", "lo", "hi", "n")} | {"values": [float(v) for v in arr]}


#: what identifies a case across records (the factory's arguments)
KEY = ("step", "kind", "size", "microbatches", "family", "donated")
#: what each process's diagnosis keeps (its it/s table and ratios, the loop and where it ran)
KEPT = ("reader", "methods", "array_leaves_per_call", "per_call_ms", "ratios_in_your_loop", "rounds")
KEPT += ("loop_calls", "seconds", "environment", "process_seconds", "git", "error")


def summarise(case: dict[str, Any], runs: list[dict[str, Any]], family: str) -> dict[str, Any]:
    """Per path (by the study's name): it/s in the seed's loop, host ms per call, its it/s over the
    baseline's, and the share of the reader's extra host time over the baseline's that it removes
    (``100 (reader - path) / (reader - baseline)``, in %: 100 is all of it), each process's median over rounds,
    then their spread over processes."""
    good = [r for r in runs if "error" not in r and r.get("per_call_ms")]
    paths: dict[str, dict[str, list[float]]] = {}
    for run in good:
        methods = run["methods"]
        baseline = next((p for p, m in methods.items() if m == BASELINE[family]), None)
        loop = {row["variant"]: 1e3 / row["loop_ms"] for row in run["per_call_ms"]}
        host = {row["variant"]: row["host_ms"] for row in run["per_call_ms"]}
        extra = host[run["reader"]] - host[baseline] if baseline in host else float("nan")
        for path, method in methods.items():
            if path not in loop:
                continue
            keys = ("seed_loop_it_per_s", "host_ms", "over_baseline", "share_removed_pct")
            entry = paths.setdefault(method, {k: [] for k in keys})
            entry["seed_loop_it_per_s"].append(loop[path])
            entry["host_ms"].append(host[path])
            if baseline in loop:  # this process's median it/s over the baseline's
                entry["over_baseline"].append(loop[path] / loop[baseline])
                share = 100 * (host[run["reader"]] - host[path]) / extra if extra > 0 else None
                entry["share_removed_pct"].append(share)
    return {
        **case,
        "model": name(case),
        "leaves": good[0]["array_leaves_per_call"] if good else None,
        "processes": len(good),
        "failed": [r.get("error", "") for r in runs if "error" in r],
        "loop_calls": [min(r["loop_calls"][0] for r in good), max(r["loop_calls"][1] for r in good)]
        if good
        else [],
        "commits": sorted({(r.get("git") or {}).get("commit", "unknown") for r in runs}),
        "paths": {m: {k: spread(v) for k, v in values.items()} for m, values in paths.items()},
        "runs": [{k: r[k] for k in KEPT if k in r} for r in runs],
    }


def lines(cases: list[dict[str, Any]], family: str) -> dict[str, Any]:
    """Per kind of model whose no-op step ran at three sizes or more: the host time the reader's
    wrapper adds over the baseline's per call, ``a + b x leaves``, fitted once per process index
    (the k-th process of every size; sizes ran in separate processes) and quoted as the median
    line with the rerun range of ``a`` (ms) and ``b`` (µs per leaf) over the fits."""
    from jaxperf_study.dispatch.per_leaf import LINE_SIZES, fit_per_process

    out: dict[str, Any] = {}
    reader = {"pmap": "filter_pmap", "jit": "filter_jit"}[family]
    for kind in sorted({c["kind"] for c in cases}):
        mine = [c for c in cases if c["kind"] == kind and c["step"] == "noop" and c["processes"]]
        if len({c["leaves"] for c in mine}) < LINE_SIZES:
            continue
        excess = {
            c["leaves"]: [
                next(r["host_ms"] for r in run["per_call_ms"] if run["methods"][r["variant"]] == reader)
                - next(
                    r["host_ms"]
                    for r in run["per_call_ms"]
                    if run["methods"][r["variant"]] == BASELINE[family]
                )
                for run in c["runs"]
                if "error" not in run
            ]
            for c in mine
        }
        rows = [
            {"process": k, "leaves": n, "excess_ms": values[k]}
            for n, values in excess.items()
            for k in range(min(len(v) for v in excess.values()))
        ]
        line = fit_per_process(pd.DataFrame(rows))
        line["fits"] = line.pop("processes")
        out[kind] = line
    return out


def ranges(cases: list[dict[str, Any]]) -> dict[str, Any]:
    """Per path, the lowest and highest of its cases' median it/s over the baseline's (``n`` cases)."""
    out: dict[str, Any] = {}
    for method in sorted({m for c in cases for m in c["paths"]}):
        found = [c["paths"][method]["over_baseline"]["median"] for c in cases if method in c["paths"]]
        found = [v for v in found if v is not None]
        if found:
            out[method] = {"min": min(found), "max": max(found), "n": len(found)}
    return out


def record(cases: list[dict[str, Any]], how: dict[str, Any], seconds: float) -> dict[str, Any]:
    """The record of ``cases`` (each with its ``runs``): one summary per case, pooled over its runs,
    and the per-leaf lines (:func:`lines`)."""
    runs = [r for case in cases for r in case["runs"]]
    summaries = [summarise({k: c[k] for k in KEY}, c["runs"], c["family"]) for c in cases]
    families = {c["family"] for c in cases}
    return {
        "what": "python -m jaxperf diagnose of notebook 01's cases, each path in the seed's loop "
        f"(at least 50 calls and {how['loop_seconds']:g} s, blocked once at its end), in fresh processes",
        **how,
        "environment": next((r["environment"] for r in runs if "environment" in r), {}),
        "seconds": round(seconds, 1),
        "cases": summaries,
        "ranges": ranges(summaries),
        "per_leaf": {f: lines([c for c in summaries if c["family"] == f], f) for f in sorted(families)},
    }


def merge(paths: list[Path]) -> dict[str, Any]:
    """The records at ``paths`` as one: each case's runs pooled (records must agree on the loop)."""
    loaded = [json.loads(p.read_text()) for p in paths]
    how = {k: loaded[0][k] for k in ("min_rounds", "loop_seconds")}
    for path, rec in zip(paths, loaded):
        if {k: rec[k] for k in how} != how:
            raise ValueError(
                f"{path}: min_rounds/loop_seconds {[rec[k] for k in how]} differ from {list(how.values())}"
            )
    cases: dict[tuple, dict[str, Any]] = {}
    for rec in loaded:
        for case in rec["cases"]:
            key = tuple(case[k] for k in KEY)
            cases.setdefault(key, {**{k: case[k] for k in KEY}, "runs": []})["runs"] += case["runs"]
    merged = record(list(cases.values()), how, sum(rec["seconds"] for rec in loaded))
    runs = {}
    for case in merged["cases"]:
        for run in case["runs"]:
            git = run.get("git") or {}
            runs[git.get("commit", "unknown")] = {**git, "commit_source": git.get("commit_source", "run")}
    sources = [
        n for p, rec in zip(paths, loaded) for n in rec.get("provenance", {}).get("merged_from", [p.name])
    ]
    merged["provenance"] = {"merged_from": sources, "runs": list(runs.values())}
    return merged


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["merge"]:
        m = argparse.ArgumentParser(prog="tools/seed_loop.py merge")
        m.add_argument("records", type=Path, nargs="+")
        m.add_argument("--json", type=Path, required=True)
        ma = m.parse_args(argv[1:])
        ma.json.write_text(json.dumps(merge(ma.records), indent=1, default=str) + "\n")
        print(f"seed_loop: merged {len(ma.records)} records into {ma.json}")
        return 0
    p = argparse.ArgumentParser(prog="tools/seed_loop.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--case", type=parse_case, action="append", required=True)
    p.add_argument("--family", choices=sorted(BASELINE), default="pmap")
    p.add_argument("--donated", action="store_true", help="model and optimiser state donated")
    p.add_argument("--processes", type=int, default=2)
    p.add_argument("--min-rounds", type=int, default=3)
    p.add_argument("--loop-seconds", type=float, default=1.0)
    p.add_argument("--max-seconds", type=float, default=60.0)
    p.add_argument(
        "--deadline-s", type=float, default=0.0, help="stop starting processes after this (0: none)"
    )
    p.add_argument("--json", type=Path, required=True)
    a = p.parse_args(argv)
    if a.processes < 1:
        p.error(f"--processes={a.processes} is not allowed: expected 1 or more")
    if not a.json.parent.is_dir():
        p.error(f"--json {a.json}: its folder does not exist")
    from jaxperf_study.provenance import git_commit

    git = git_commit()
    started, runs = time.time(), {i: list[dict[str, Any]]() for i in range(len(a.case))}
    spent: list[float] = []
    with tempfile.TemporaryDirectory() as scratch:
        for process in range(a.processes):
            for i, case in enumerate(a.case):
                guess = max(spent) if spent else 0.0
                if a.deadline_s and time.time() - started + guess > a.deadline_s:
                    print(
                        f"seed_loop: {name(case)} process {process + 1}: not reached (deadline)", flush=True
                    )
                    continue
                runs[i].append({**one(case, a, Path(scratch) / f"{i}-{process}.json"), "git": git})
                spent.append(runs[i][-1]["process_seconds"])
    cases = [
        {**case, "family": a.family, "donated": a.donated, "runs": runs[i]} for i, case in enumerate(a.case)
    ]
    how = {"min_rounds": a.min_rounds, "loop_seconds": a.loop_seconds}
    found = record(cases, how, time.time() - started)
    a.json.write_text(json.dumps(found, indent=1, default=str) + "\n")
    print(f"seed_loop: wrote {a.json} ({len(cases)} cases, {found['seconds']:.0f} s)")
    return 0 if all(c["processes"] for c in found["cases"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
