#!/usr/bin/env python3
"""Run the repro of an upstream text as written, in fresh processes, and record every number it
printed, so that the text quotes the repro's own output (tools/readme.py fills it from the record).

    .venv/bin/python tools/upstream_repro.py --text equinox-192 --label "8 CPU devices" --key cpu --runs 5
    .venv/bin/python tools/upstream_repro.py --text jax-20909-tpu --label "a CPU, jax 0.10.2 as on the TPU" \\
        --key cpu_jax_0_10_2 --python .envs/image-tpu/bin/python --pythonpath DIR   # Equinox in DIR
    # on a device, in the environment tools/device/run.sh makes (its output comes back as results/gpu/cli/):
    bash tools/device/run.sh --backend gpu --only none \\
        --exec "python3 tools/upstream_repro.py --text jax-20909 --label 'NVIDIA H200' --key gpu --into \\$JAXPERF_CLI_OUT"

The repro is the ``python`` block of ``tools/templates/<text>.md``, run with ``PY -c``, unchanged,
``--runs`` times, each a fresh process, with this environment less what would change what it
measures (``XLA_FLAGS`` and ``JAX_PLATFORMS``: the repro sets what it needs; JAX's persistent
compilation cache: each process compiles afresh). Every line of the form
``NAME: NUMBER UNIT[, NUMBER UNIT]...`` is a measurement (``fori_loop: 159.5 ms per kernel call,
94.85x the Python loop's``), and every ``KEY=NUMBER`` a setting (``T=65536``). The record,
``<into>/<text>-repro/summary.json``, holds each label's outputs as printed, the numbers parsed
from them, and per variant and field the median over the processes with the range a fresh
process's printed number is expected in (:func:`fresh_range`), the form tools/readme.py's ``:r``
quotes. Other labels' runs are kept while they were made by the same repro; ``--check`` fails when
a record's repro is not the template's.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEMPLATES = ROOT / "tools" / "templates"
#: where the records are: this CPU's, and what a TPU or GPU run sent back (tools/device/unpack.sh)
RECORDS = (ROOT / "results" / "upstream", ROOT / "results" / "tpu" / "cli", ROOT / "results" / "gpu" / "cli")
#: a measurement line, and one of its parts (a number, then its unit)
LINE = re.compile(r"^(?P<name>[A-Za-z_][^:]*): (?P<rest>-?[\d,]*\.?\d.*)$")
PART = re.compile(r"^(?P<number>-?[\d,]*\.?\d+)\s*(?P<unit>.+)$")
SETTING = re.compile(r"\b(?P<key>[A-Za-z]\w*)=(?P<value>-?\d+(?:\.\d+)?)\b")
#: the record's field for each unit a repro prints (a unit starting with "x" is a ratio)
FIELDS = {
    "it/s": "it_per_s",
    "ms of host CPU per call": "host_ms",
    "ms per kernel call": "ms",
    "% of the loop's time had passed when its last call returned": "returned_pct",
}
#: Student's t, two-sided 95%, by degrees of freedom (more than 10: 2.0)
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228}
#: what a fresh process must not inherit (the compilation cache tools/device/run.sh sets, among them)
DROPPED = (
    "XLA_FLAGS",
    "JAX_PLATFORMS",
    "JAX_COMPILATION_CACHE_DIR",
    "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS",
)


def repro(text: str) -> str:
    """The ``python`` code block of an upstream template."""
    found = re.search(r"```python\n(.*?)```", text, re.S)
    if found is None:
        raise SystemExit("upstream_repro: the template holds no ```python block")
    return found.group(1)


def sha(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()


def field(unit: str) -> str:
    if unit.startswith("x"):
        return "ratio"
    return FIELDS.get(unit, re.sub(r"\W+", "_", unit).strip("_").lower())


def parse(output: str) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    """(every measurement line's numbers by name and field, every ``KEY=NUMBER`` setting) of one
    process's output. SystemExit when it printed no measurement."""
    measured: dict[str, dict[str, float]] = {}
    settings: dict[str, float] = {}
    for line in output.splitlines():
        settings |= {m["key"]: float(m["value"]) for m in SETTING.finditer(line)}
        m = LINE.match(line.strip())
        if m is None:
            continue
        parts = [PART.match(p.strip()) for p in m["rest"].split(", ")]
        measured[m["name"]] = {field(p["unit"]): float(p["number"].replace(",", "")) for p in parts if p}
    if not measured:
        raise SystemExit(f"upstream_repro: the repro printed no 'NAME: NUMBER UNIT' line:\n{output[-500:]}")
    return measured, settings


def fresh_range(values: list[float]) -> dict[str, float | list[float]]:
    """The median of ``values`` (one per process) and the range a fresh process's value is expected
    in: a 95% prediction interval for one more value, mean +- t(n-1) * sd * sqrt(1 + 1/n) on a log
    scale (all positive), widened to hold every value; one value gives itself."""
    lo, hi = min(values), max(values)
    if len(values) > 1 and lo > 0:
        logs = [math.log(v) for v in values]
        half = T95.get(len(values) - 1, 2.0) * statistics.stdev(logs) * math.sqrt(1 + 1 / len(values))
        lo, hi = (
            min(lo, math.exp(statistics.mean(logs) - half)),
            max(hi, math.exp(statistics.mean(logs) + half)),
        )
    return {"median": statistics.median(values), "lo": lo, "hi": hi, "values": values}


def quoted(printed: list[dict[str, dict[str, float]]]) -> list[dict]:
    """Per variant (as its line names it) and field, :func:`fresh_range` over the processes;
    SystemExit when the processes printed different lines."""
    names = list(printed[0])
    if any(list(p) != names or any(set(p[n]) != set(printed[0][n]) for n in names) for p in printed):
        raise SystemExit(
            f"upstream_repro: its processes printed different lines: {[list(p) for p in printed]}"
        )
    return [
        {"variant": n, **{f: fresh_range([p[n][f] for p in printed]) for f in printed[0][n]}} for n in names
    ]


def tree(path: Path) -> dict:
    """The commit that ran, and whether any tracked file other than the record at ``path`` differs
    from it (the record holds several labels' runs, each made from a clean tree). Without a
    ``.git``, or on a device (whose copy may hold a stale ``.git``), what tools/device/run.sh read from
    its manifest."""

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.rstrip()

    if os.environ.get("JAXPERF_GIT_COMMIT") or not (ROOT / ".git").exists():  # a device's copy: its manifest
        return {
            "commit": os.environ.get("JAXPERF_GIT_COMMIT", "unknown"),
            "dirty": os.environ.get("JAXPERF_GIT_DIRTY", "true") != "false",
        }
    own = path.resolve().relative_to(ROOT).as_posix() if path.resolve().is_relative_to(ROOT) else None
    changed = [line[3:] for line in git("status", "--porcelain", "--untracked-files=no").splitlines()]
    return {"commit": git("rev-parse", "HEAD").strip(), "dirty": any(f != own for f in changed)}


def record(path: Path, code: str, entry: dict) -> dict:
    """The record at ``path`` with ``entry`` (one label's runs) written in place of that label's,
    runs of another repro dropped, and its provenance: the oldest run's commit (with how it was
    read, where a log filled it in), dirty if any was."""
    data = json.loads(path.read_text()) if path.is_file() else {"runs": []}
    kept = [r for r in data["runs"] if r.get("key") != entry["key"] and r.get("repro_sha256") == sha(code)]
    data = {"study": path.parent.name, "repro_sha256": sha(code), "runs": [*kept, entry]}
    gits = [r["git"] for r in data["runs"]]
    dirty = any(g["dirty"] for g in gits)
    data["provenance"] = {
        "git": {**gits[0], "dirty": dirty},
        "code": ["tools/upstream_repro.py"],
    }
    return data


def versions(python: str, env: dict[str, str]) -> dict:
    """The Python and the packages the runs imported (read from their metadata: no device opened)."""
    code = (
        "import importlib.metadata as m, json, platform\n"
        "v = {}\n"
        "for n in ('jax', 'jaxlib', 'libtpu', 'equinox'):\n"
        "    try: v[n] = m.version(n)\n"
        "    except m.PackageNotFoundError: pass\n"
        "print(json.dumps({'python': platform.python_version(), 'packages': v}))"
    )
    done = subprocess.run([python, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return {"python": "unknown", "packages": {}}


def check(texts: list[str], roots: tuple[Path, ...] = RECORDS) -> list[str]:
    """What is wrong with the records under ``roots``: a run made by a repro other than its
    template's, or a record of no template."""
    problems = []
    for root in roots:
        for path in sorted(root.glob("*-repro/summary.json")):
            text = path.parent.name.removesuffix("-repro")
            if text not in texts:
                problems.append(f"{path}: no template tools/templates/{text}.md")
                continue
            want = sha(repro((TEMPLATES / f"{text}.md").read_text()))
            stale = [
                r["label"] for r in json.loads(path.read_text())["runs"] if r.get("repro_sha256") != want
            ]
            if stale:
                problems.append(f"{path}: {stale} not made by the repro in tools/templates/{text}.md")
    return problems


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--text", default="equinox-192")
    p.add_argument("--label", help="what ran it, as the text names it (e.g. 'jax 0.12.0.1, 8 CPU devices')")
    p.add_argument("--key", help="the label as a template selects it (runs[key=...]): letters, digits, _")
    p.add_argument("--python", default=sys.executable)
    p.add_argument(
        "--pythonpath", help="PYTHONPATH for the runs (default: this one's, e.g. run.sh's on a device)"
    )
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--into", type=Path, default=RECORDS[0])
    p.add_argument("--check", action="store_true", help="fail when a record's repro is not its template's")
    a = p.parse_args(argv)
    texts = sorted(t.stem for t in TEMPLATES.glob("*.md") if "```python" in t.read_text())
    if a.check:
        problems = check(texts)
        print("\n".join(f"upstream_repro: {x}" for x in problems), file=sys.stderr) if problems else None
        return 1 if problems else 0
    if a.text not in texts:
        p.error(f"--text {a.text!r} is not allowed: one of {texts}")
    if a.runs < 1:
        p.error(f"--runs {a.runs} is not allowed: at least 1 fresh run")
    if not a.label:
        p.error("--label is required to record runs")
    key = a.key or re.sub(r"\W+", "_", a.label).strip("_").lower()
    if not re.fullmatch(r"\w+", key):
        p.error(f"--key {key!r} is not allowed: letters, digits and _ (a template selects runs[key=...])")
    code = repro((TEMPLATES / f"{a.text}.md").read_text())
    env = {k: v for k, v in os.environ.items() if k not in DROPPED}
    if a.pythonpath is not None:
        env["PYTHONPATH"] = a.pythonpath
    outputs = []
    for k in range(a.runs):
        run = subprocess.run([a.python, "-c", code], capture_output=True, text=True, env=env, timeout=600)
        if run.returncode != 0:
            raise SystemExit(f"upstream_repro: run {k} exited {run.returncode}:\n{run.stderr[-2000:]}")
        outputs.append(run.stdout)
        print(run.stdout.strip(), flush=True)
    parsed = [parse(out) for out in outputs]
    path = a.into / f"{a.text}-repro" / "summary.json"
    entry = {"key": key, "label": a.label, "repro_sha256": sha(code), **versions(a.python, env),
             "git": tree(path), "processes": a.runs, "outputs": outputs, "setting": parsed[0][1],
             "quoted": quoted([m for m, _ in parsed])}  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record(path, code, entry), indent=1) + "\n")
    print(f"upstream_repro: recorded {a.runs} runs under {a.label!r} (key {key}) in {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
