"""``python -m jaxperf COMMAND ...``: the study's engines on a reader's own code.

- ``diagnose package.module:factory``: is your training step paying dispatch overhead,
  and which path would be faster (equinox#192's question, on your step);
- ``loops package.module:factory``: which loop form your Pallas kernel should use
  (jax#20909's question, on your kernel).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys

#: command -> module with ``main(argv) -> int``
COMMANDS = {"diagnose": "jaxperf.diagnosis.cli", "loops": "jaxperf.loops.cli"}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in COMMANDS:
        print(__doc__.strip(), file=sys.stderr if argv and argv[0] not in ("-h", "--help") else sys.stdout)
        if argv and argv[0] not in ("-h", "--help"):
            print(
                f"\njaxperf: command={argv[0]!r} is not allowed: expected one of {', '.join(COMMANDS)}.",
                file=sys.stderr,
            )
            return 2
        return 0
    if importlib.util.find_spec("pandas") is None:  # the tools' tables (the fixes need none)
        print(f"jaxperf {argv[0]}: needs pandas: pip install 'jaxperf[tools]'", file=sys.stderr)
        return 2
    return int(importlib.import_module(COMMANDS[argv[0]]).main(argv[1:]))


if __name__ == "__main__":
    sys.exit(main())
