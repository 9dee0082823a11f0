"""``python -m jaxperf diagnose package.module:factory``: the diagnosis of a reader's step as
Markdown, optionally written as JSON and Markdown too. Any failure: exit status 2 and one line
naming what is wrong (the JSON output, when asked for, holds it and the traceback).
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from ..errors import bad_value


def _kwarg(text: str) -> tuple[str, Any]:
    name, sep, value = text.partition("=")
    if not sep or not name.isidentifier():
        raise argparse.ArgumentTypeError(f"--arg {text!r}: expected NAME=VALUE, e.g. depth=8")
    try:
        return name, ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return name, value  # a plain string


def _carry(text: str) -> Any:
    """``--carry``: auto, none, or ARG=OUT pairs (ARG an index or a parameter name)."""
    if text in ("auto", "none"):
        return "auto" if text == "auto" else {}  # {}: nothing carried
    found: dict[Any, int] = {}
    for pair in text.split(","):
        arg, sep, out = pair.partition("=")
        if not sep or not out.strip().isdigit():
            raise argparse.ArgumentTypeError(
                f"--carry {text!r}: expected auto, none, or ARG=OUT pairs, e.g. 0=1,2=2 or model=1"
            )
        found[int(arg) if arg.strip().isdigit() else arg.strip()] = int(out)
    return found


#: ``--quick``: a first look (notebook 10's quick mode too)
QUICK = {"max_seconds": 20.0, "precision": 0.2, "loop_seconds": 0.2}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m jaxperf diagnose",
        description="Is your training loop paying dispatch overhead, and which path would be faster?",
    )
    add = p.add_argument
    add("factory", help="package.module:function returning {'step': ..., 'args': (...)} (see README)")
    keyword = "factory keyword (repeatable)"
    add("--arg", action="append", type=_kwarg, default=[], metavar="NAME=VALUE", help=keyword)
    carries = "outputs your loop passes on (default: the factory's, else auto)"
    add("--carry", type=_carry, metavar="auto|none|ARG=OUT,...", help=carries)
    add("--backend", default="auto", help="auto | cpu | gpu | tpu (default: auto)")
    add("--host-devices", type=int, default=8, help="forced CPU devices on the cpu backend (default: 8)")
    add("--precision", type=float, help="target relative IQR of every ratio (default: 0.05)")
    cap = "time cap of the diagnosis, its checks included; start-up and compiles not counted (default: 60)"
    add("--max-seconds", type=float, help=cap)
    loop = "each path's loop: at least this long, blocked once at its end (default: 1; 0: short rounds)"
    add("--loop-seconds", type=float, help=loop)
    add("--loop-calls", type=int, default=50, help="each path's loop: at least this many calls (default: 50)")
    add("--min-rounds", type=int, default=5, help="interleaved rounds before the first stop (default: 5)")
    quick = "a first look: --max-seconds 20 --precision 0.2 --loop-seconds 0.2 unless given"
    add("--quick", action="store_true", help=quick)
    add("--json", type=Path, help="write the diagnosis as JSON here")
    add("--markdown", type=Path, help="write the Markdown here too")
    return p


def main(argv: list[str] | None = None) -> int:
    started = time.perf_counter()
    from .. import backend

    args = parser().parse_args(argv)
    quick = QUICK if args.quick else {}
    precision = args.precision if args.precision is not None else quick.get("precision", 0.05)
    max_seconds = args.max_seconds if args.max_seconds is not None else quick.get("max_seconds", 60.0)
    loop_seconds = args.loop_seconds if args.loop_seconds is not None else quick.get("loop_seconds", 1.0)
    for path in (args.json, args.markdown):
        if path is not None and not path.parent.exists():
            problem = bad_value("output folder", str(path.parent), "an existing folder")
            print(f"jaxperf diagnose: {problem}", file=sys.stderr)
            return 2
    try:
        backend.configure(args.backend, args.host_devices)
        from . import diagnose
        from .factory import build

        made = build(args.factory, dict(args.arg))
        startup = time.perf_counter() - started  # JAX, the device (6-15 s for a TPU), the factory
        carry = made.get("carry", "auto") if args.carry is None else args.carry
        result = diagnose(
            made["step"],
            *made["args"],
            loader=made.get("loader"),
            carry=carry,
            batch_at=made.get("batch_at"),
            precision=precision,
            # 2 s kept for its last round past the cap, the report and exit (measured: 1.6 s); at
            # least min(cap, 1 s) left to it; a cap <= 0 (or nan) reaches its check as given
            max_seconds=max(min(max_seconds, 1.0), max_seconds - 2.0),
            loop_calls=args.loop_calls,
            loop_seconds=loop_seconds,
            min_rounds=args.min_rounds,
            extra_paths=made.get("paths"),
        )
    except (ValueError, backend.BackendUnavailableError) as err:
        line = " ".join(str(err).split())
        print(f"jaxperf diagnose: {line}", file=sys.stderr)
        if args.json is not None:  # its folder exists: checked first
            details = getattr(err, "details", "") or "".join(traceback.format_exception(err))
            args.json.write_text(json.dumps({"error": line, "traceback": details}, indent=2))
        return 2
    text = result.markdown() + f"\nStart-up (JAX, the device, the factory): {startup:.0f} s, not counted."
    print(text)
    if args.json:
        args.json.write_text(result.to_json())
    if args.markdown:
        args.markdown.write_text(text + "\n")
    return 0
