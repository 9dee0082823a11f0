#!/usr/bin/env python3
"""Predict, then measure (issue 48): write the it/s the CPU study's law predicts for each TPU case
of notebook 01 (jaxperf_study.dispatch.predict, which states the law) into
results/tpu/predictions/dispatch.json and dispatch.md, to be committed before the TPU runs it (beside
results/tpu/dispatch/, which the TPU run's results replace whole).
The TPU run's summary sets each measurement beside its prediction; the README says how well the
CPU study predicted the TPU.

    .venv/bin/python tools/predict_tpu.py [--records results/cpu/dispatch] [--out results/tpu/predictions]

Needs libtpu (the ``tpu`` extra, in ``.venv``): the static device estimate compiles each case
for a TPU v5e on this CPU. Nothing runs on a TPU.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def source_commit(records: Path) -> str:
    """The short commit the records were measured at."""
    prov = json.loads((ROOT / records / "timings.json").read_text())["provenance"]
    return str((prov.get("git") or {}).get("commit", "?"))[:7]


def write(rows: list[dict[str, Any]], law: str, records: Path, out: Path, basis: str) -> None:
    """dispatch.json (the law, its assumptions, the records it read, every row) and a short .md."""
    import pandas as pd

    from jaxperf_study import pages as md
    from jaxperf_study.dispatch import predict

    git = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain"], capture_output=True, text=True)
    source = json.loads((ROOT / records / "timings.json").read_text())["provenance"].get("git") or {}
    payload = {
        "basis": basis,
        "law": law,
        "assumptions": {
            "host_speed": predict.HOST_SPEED,
            "roofline_share": predict.ROOFLINE_SHARE,
            "launch_ms": predict.LAUNCH_MS,
        },
        "made_utc": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "code": {"commit": git.stdout.strip() or None, "dirty": bool(dirty.stdout.strip())},
        "records": {
            "path": str(records / "timings.csv"),
            "git": source,
            "sha256": hashlib.sha256((ROOT / records / "timings.csv").read_bytes()).hexdigest(),
        },
        "cases": rows,
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "dispatch.json").write_text(json.dumps(payload, indent=1) + "\n")
    shown = pd.DataFrame(
        {k: r[k] for k in predict.KEYS}
        | {
            "pipelined it/s, predicted": "{:,.0f}-{:,.0f}".format(*r["loop_it_per_s"]),
            "host ms": "{:.3g}-{:.3g}".format(r["host_ms"][0], r["host_ms"][2]),
            "device ms (static)": "{:.3g}-{:.3g}".format(*r["device_ms"]),
            "bound": r["bound"],
        }
        for r in rows
    )
    made = (
        f"Made {payload['made_utc']} from `{records}/timings.csv` (measured at commit {source.get('commit')})"
    )
    text = [
        "## Predicted for a TPU v5e before it ran (equinox#192, notebook 01's TPU cases)",
        "",
        f"{made}, by `tools/predict_tpu.py`: a prediction, not a measurement.",
        "",
        re.sub(r":\w+:`[~.]*([^`]+)`", r"`\1`", law).replace("``", "`"),  # Markdown, not reST
        "",
        md.table(shown),
    ]
    (out / "dispatch.md").write_text("\n".join(text) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--records", type=Path, default=Path("results/cpu/dispatch"))
    parser.add_argument("--out", type=Path, default=Path("results/tpu/predictions"))
    parser.add_argument(
        "--new-only",
        action="store_true",
        help="only the cases the records have not measured (records of an earlier TPU run: the law read "
        "on the TPU's own host, at its own speed)",
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("JAX_PLATFORMS", "cpu")  # the TPU is compiled for, never used
    from jaxperf.compilers.mosaic_tpu import topology
    from jaxperf_study import records as rec
    from jaxperf_study.dispatch import predict
    from jaxperf_study.dispatch.settings import DispatchSettings

    if not topology.status().available:
        print(
            f"predict: {topology.status().reason}: the device estimate compiles for a TPU v5e",
            file=sys.stderr,
        )
        return 2
    timings = rec.read_records(ROOT / args.records / "timings.csv")[0]
    summary = json.loads((ROOT / args.records / "summary.json").read_text())
    # which paths wait for each call is Equinox's code, not the machine's: the CPU study's verdicts
    cpu = json.loads((ROOT / "results/cpu/dispatch/summary.json").read_text())
    waits = {w["method"]: w["verdict"] for w in cpu.get("waits", [])}
    cells = DispatchSettings.from_parameters({"backend": "tpu"}).cells
    on_tpu = summary.get("backend") == "tpu"
    if args.new_only:
        seen = set(zip(timings["step"], timings["model"], timings["family"]))
        cells = [c for c in cells if (c.step, c.spec.name, c.family) not in seen]
    doc = predict.__doc__ or ""
    law = doc[doc.index("The law") :].strip() + (
        "\n\nAssumed: host speed {:.2g} to {:.2g}, roofline share {:.2g} to {:.2g}, launch {:.2g} to {:.2g} ms, "
        "floor {:.2g} ms.".format(
            *predict.HOST_SPEED, *predict.ROOFLINE_SHARE, *predict.LAUNCH_MS, predict.FLOOR_MS
        )
    )
    speed = (1.0, 1.0) if on_tpu else predict.HOST_SPEED
    if on_tpu:  # the host bullet, read on the TPU's own host
        start, end = law.index("- **host**"), law.index("- **device**")
        law = (
            law[:start]
            + (
                "- **host**: the path's host time per call (wall time while enqueuing: the TPU host's CPU clock\n"
                f"  moves in 10 ms steps) on the undonated no-op MLPs of its family in `{args.records}/timings.csv`\n"
                "  (two runs of notebook 01 on this TPU v5e), a line `a + b * leaves` per process, read at the\n"
                "  case's leaves (the median line and the processes' rerun range), on the same host (speed 1).\n"
                "  A call's host work is taken not to depend on what the step computes (a train step's host work\n"
                "  is a no-op step's of its leaves).\n"
            )
            + law[end:]
        )
        law = law.replace("host speed 0.5 to 1.5, ", "host speed 1, ")
    basis = f"the TPU's own records at {source_commit(args.records)}" if on_tpu else "the CPU study's records"
    write(predict.predict(timings, waits, cells, speed), law, args.records, ROOT / args.out, basis)
    print(f"predict: wrote {args.out}/dispatch.json and dispatch.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
