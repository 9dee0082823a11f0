"""``python -m jaxperf loops package.module:factory --T 1024,2048``: does your Pallas kernel pay for
``fori_loop`` (jax#20909)? The engine (:mod:`.engine`) on a factory; prints Markdown (tidy CSVs with
``--out``). Exit status 0 when the engine ran, 2 for bad input or a factory that raises (one line on
stderr; the full text in ``--json``). Progress goes to stderr; the work stops at ``--budget`` seconds."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from ..errors import bad_value

DEFAULT_FORMS = "python,fori,fori u=4,hand_unrolled u=4"


def _ints(name: str, text: str) -> list[int]:
    try:
        return [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise bad_value(name, text, "comma-separated integers, e.g. 1024,2048") from None


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m jaxperf loops",
        description="Does a Pallas kernel pay for fori_loop? Lowering, same result as fori_loop, "
        "compile time and work per loop step per compiler present here; ms where a GPU/TPU is.",
    )
    p.add_argument("kernel", help="the factory, 'package.module:make' (make(form, T, *, interpret=False))")
    for flag, default, text in (
        ("--T", "1024,2048", "loop lengths, comma-separated (two or more for work per step)"),
        ("--forms", DEFAULT_FORMS, f"loop forms, comma-separated (default: {DEFAULT_FORMS})"),
        ("--check-T", "", "T at which every form is checked against fori (default: the smallest T)"),
        ("--targets", "", "compile only these targets, comma-separated (default: every one present)"),
        ("--budget", "300", "seconds for the whole command (default 300); points past it are 'not reached'"),
        ("--out", "", "a folder for the tidy CSVs (checks, points, per_step, timings)"),
        ("--json", "", "a file for the summary as JSON (full error texts)"),
    ):
        p.add_argument(flag, default=default, help=text)
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    return p


def main(argv: list[str] | None = None) -> int:
    started, args = time.monotonic(), parser().parse_args(argv)
    try:
        Ts = _ints("--T", args.T)
        check_Ts = _ints("--check-T", args.check_T) if args.check_T else None
        from .. import backend
        from ..compilers.mosaic_tpu import topology

        if topology.status().available:  # before JAX opens a TPU: libtpu reads its dump folder once
            topology.prepare_dump()
        try:
            backend.configure("auto", 1)
        except RuntimeError:  # JAX already started in this process (a notebook, a test): use it
            pass
        from . import engine, report_kernel

        budget = float(args.budget) if args.budget.strip().replace(".", "", 1).isdigit() else 0.0
        if not budget > 0:
            raise bad_value("--budget", args.budget, "seconds, a decimal number > 0, e.g. 300")
        results = engine.run(
            args.kernel,
            [f.strip() for f in args.forms.split(",") if f.strip()],
            Ts,
            check_Ts=check_Ts,
            targets=[t.strip() for t in args.targets.split(",") if t.strip()] or None,
            budget_s=max(budget - (time.monotonic() - started), 1e-3),  # JAX's start counted
            log=None if args.quiet else sys.stderr,
        )
    except ValueError as err:
        print(f"error: {str(err).splitlines()[0] if str(err) else type(err).__name__}", file=sys.stderr)
        if args.json:
            Path(args.json).write_text(json.dumps({"error": getattr(err, "full", str(err))}, indent=1))
        return 2
    print(report_kernel.markdown(results))
    if args.json:
        Path(args.json).write_text(json.dumps(report_kernel.summary(results), indent=1, default=str))
    for name in ("checks", "points", "per_step", "timings") if args.out else ():
        Path(args.out).mkdir(parents=True, exist_ok=True)
        frame = results.per_step() if name == "per_step" else getattr(results, name)
        frame.to_csv(Path(args.out) / f"{name}.csv", index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
