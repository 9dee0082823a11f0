#!/usr/bin/env python3
"""Run the repro of an upstream text as written, in fresh processes, and record what it printed,
so that the text quotes the repro's own output (tools/readme.py fills it from the record).

    .venv/bin/python tools/upstream_repro.py --label "jax 0.12.0.1, 8 CPU devices" [--python PY] [--runs 3]
    .venv/bin/python tools/upstream_repro.py --label "jax 0.10.2, 8 CPU devices" \
        --python .envs/image-tpu/bin/python --pythonpath /tmp/jaxperf_device_site/carried
        # the TPU image's stand-in (tools/make_alt_env.sh image-tpu) and the carried wheels as a
        # dry run of tools/device/run.sh unpacks them
    python3 tools/upstream_repro.py --label "TPU v5e" --python python3 --into $OUT   # on the TPU

The repro is the ``python`` block of ``tools/templates/<text>.md`` (default ``equinox-192``), run
with ``PY -c``, unchanged, ``--runs`` times, each a fresh process, with this environment less
``XLA_FLAGS`` and ``JAX_PLATFORMS`` (the repro sets what it needs). The last line printed must end
with its ratio (``...: 0.31x the it/s of ...``). Records each run's output under ``--label`` in
``<into>/<text>-repro/summary.json`` (other labels kept, this one replaced), with the repro's hash:
a repro edited since its runs is refused by ``--check``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RATIO = re.compile(r"([0-9.]+)x the it/s")


def repro(text: str) -> str:
    """The ``python`` code block of an upstream template."""
    found = re.search(r"```python\n(.*?)```", text, re.S)
    if found is None:
        raise SystemExit("upstream_repro: the template holds no ```python block")
    return found.group(1)


def tree(path: Path) -> dict:
    """The commit that ran, and whether any tracked file other than the record at ``path`` differs
    from it (the record holds several labels' runs, each made from a clean tree)."""

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.rstrip()

    if not (ROOT / ".git").exists():
        return {"commit": os.environ.get("JAXPERF_GIT_COMMIT", "unknown"), "dirty": True}
    own = path.resolve().relative_to(ROOT).as_posix() if path.resolve().is_relative_to(ROOT) else None
    changed = [line[3:] for line in git("status", "--porcelain", "--untracked-files=no").splitlines()]
    return {"commit": git("rev-parse", "HEAD").strip(), "dirty": any(f != own for f in changed)}


def record(path: Path, code: str, label: str, outputs: list[str], python: str) -> dict:
    """The record at ``path`` with ``label``'s runs (re)written, the quoted line rebuilt, and its
    provenance: the commit of this run (each label's run its own) and the code that made it."""
    data = json.loads(path.read_text()) if path.is_file() else {"runs": []}
    ratios = []
    for out in outputs:
        found = RATIO.findall(out.strip().splitlines()[-1]) if out.strip() else []
        if not found:
            raise SystemExit(f"upstream_repro: no ratio in the repro's last line:\n{out[-500:]}")
        ratios.append(float(found[-1]))
    entry = {"label": label, "python": python, "git": tree(path), "outputs": outputs, "ratios": ratios}
    data["runs"] = [r for r in data["runs"] if r["label"] != label] + [entry]
    data["repro_sha256"] = hashlib.sha256(code.encode()).hexdigest()
    data["study"] = path.parent.name
    # the oldest run's commit stands for the record (tests/test_results_fresh.py reads it), dirty if any was
    gits = [r["git"] for r in data["runs"] if "git" in r]
    dirty = len(gits) < len(data["runs"]) or any(g["dirty"] for g in gits)
    commit = gits[0]["commit"] if gits else "unknown"
    data["provenance"] = {"git": {"commit": commit, "dirty": dirty}, "code": ["tools/upstream_repro.py"]}
    data["printed_ratios"] = "; ".join(
        ", ".join(f"{x:.2f}×" for x in r["ratios"]) + f" ({r['label']})" for r in data["runs"]
    )
    return data


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--text", default="equinox-192")
    p.add_argument("--label", help="what ran it, as the text names it (e.g. 'jax 0.12.0.1, 8 CPU devices')")
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--pythonpath", default="", help="PYTHONPATH for the runs (a stand-in env's own packages)")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--into", type=Path, default=ROOT / "results" / "upstream")
    p.add_argument(
        "--check", action="store_true", help="fail when the template's repro changed since its runs"
    )
    a = p.parse_args(argv)
    texts = sorted(t.stem for t in (ROOT / "tools" / "templates").glob("*.md"))
    if a.text not in texts:
        p.error(f"--text {a.text!r} is not allowed: one of {texts}")
    if a.runs < 1:
        p.error(f"--runs {a.runs} is not allowed: at least 1 fresh run")
    code = repro((ROOT / "tools" / "templates" / f"{a.text}.md").read_text())
    path = a.into / f"{a.text}-repro" / "summary.json"
    if a.check:
        held = json.loads(path.read_text()).get("repro_sha256") if path.is_file() else None
        if held != hashlib.sha256(code.encode()).hexdigest():
            print(
                f"upstream_repro: {path} was not made by the repro in tools/templates/{a.text}.md",
                file=sys.stderr,
            )
            return 1
        return 0
    if not a.label:
        p.error("--label is required to record runs")
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_PLATFORMS", "PYTHONPATH")}
    if a.pythonpath:
        env["PYTHONPATH"] = a.pythonpath
    outputs = []
    for k in range(a.runs):
        run = subprocess.run([a.python, "-c", code], capture_output=True, text=True, env=env, timeout=600)
        if run.returncode != 0:
            raise SystemExit(f"upstream_repro: run {k} exited {run.returncode}:\n{run.stderr[-2000:]}")
        outputs.append(run.stdout)
        print(run.stdout.strip(), flush=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    version = subprocess.run([a.python, "-c", "import platform; print(platform.python_version())"], env=env,
                             capture_output=True, text=True).stdout.strip()  # fmt: skip
    path.write_text(json.dumps(record(path, code, a.label, outputs, f"Python {version}"), indent=1) + "\n")
    print(f"upstream_repro: recorded {a.runs} runs under {a.label!r} in {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
