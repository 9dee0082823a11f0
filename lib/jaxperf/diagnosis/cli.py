"""``python -m jaxperf diagnose package.module:factory``: the diagnosis of a reader's step,
printed as Markdown, optionally written as JSON, Markdown and a figure.

Nothing is written unless the diagnosis finishes: a factory that does not import or
returns the wrong thing, a step that raises, an absent backend exit with status 2 and
one line naming what is wrong.
"""

from __future__ import annotations

import argparse
import ast
import sys
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


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m jaxperf diagnose",
        description="Is your training loop paying dispatch overhead, and which path would be faster?",
    )
    p.add_argument(
        "factory", help="package.module:function returning {'step': ..., 'args': (...)} (see README)"
    )
    p.add_argument(
        "--arg",
        action="append",
        type=_kwarg,
        default=[],
        metavar="NAME=VALUE",
        help="factory keyword argument (repeatable)",
    )
    p.add_argument("--backend", default="auto", help="auto | cpu | gpu | tpu (default: auto)")
    p.add_argument(
        "--host-devices", type=int, default=8, help="forced CPU devices on the cpu backend (default: 8)"
    )
    p.add_argument(
        "--precision", type=float, default=0.05, help="target relative IQR of every ratio (default: 0.05)"
    )
    p.add_argument(
        "--max-seconds", type=float, default=60.0, help="time cap of the whole diagnosis (default: 60)"
    )
    p.add_argument("--json", type=Path, help="write the diagnosis as JSON here")
    p.add_argument("--markdown", type=Path, help="write the Markdown here too")
    p.add_argument("--figure", type=Path, help="write the figure here (.png or .svg)")
    return p


def main(argv: list[str] | None = None) -> int:
    from .. import backend

    args = parser().parse_args(argv)
    try:
        backend.configure(args.backend, args.host_devices)
        from . import diagnose
        from .factory import build

        made = build(args.factory, dict(args.arg))
        result = diagnose(
            made["step"],
            *made["args"],
            loader=made.get("loader"),
            carry=made.get("carry", "auto"),
            batch_at=made.get("batch_at"),
            precision=args.precision,
            max_seconds=args.max_seconds,
        )
    except (ValueError, backend.BackendUnavailableError) as err:
        print(f"jaxperf diagnose: {err}", file=sys.stderr)
        return 2
    text = result.markdown()
    print(text)
    for path in (args.json, args.markdown, args.figure):
        if path is not None and not path.parent.exists():
            print(
                f"jaxperf diagnose: {bad_value('output folder', str(path.parent), 'an existing folder')}",
                file=sys.stderr,
            )
            return 2
    if args.json:
        args.json.write_text(result.to_json())
    if args.markdown:
        args.markdown.write_text(text + "\n")
    if args.figure:
        fig, _ = result.figure()
        fig.savefig(args.figure, dpi=150)
    return 0
