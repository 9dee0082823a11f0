"""The child interpreter of :mod:`jaxperf.dispatch.runahead.setups`: ``python -m jaxperf.dispatch.runahead.child
SETUP CONFIG_JSON`` runs the seed's loop on one CPU host device under the ``XLA_FLAGS`` its
parent set, and prints one JSON document (the protocol's) on stdout; everything else goes
to stderr."""

from __future__ import annotations

import json
import os
import sys
import time

from .setups import PROTOCOL


def main(setup: str, payload: str) -> int:
    started = time.perf_counter()
    real_stdout, sys.stdout = sys.stdout, sys.stderr  # only the JSON document on stdout
    try:
        from ... import backend
        from . import seed_loop
        from .seed_loop import LoopConfig

        info = backend.configure("cpu", 1)
        config = LoopConfig(**json.loads(payload))
        result = seed_loop.run(config, log=lambda msg: print(msg, file=sys.stderr))
    finally:
        sys.stdout = real_stdout
    doc = {
        "protocol": PROTOCOL,
        "setup": setup,
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "device_count": info.device_count,
        "cpu_count": os.cpu_count(),
        "base_step_ms": result.base_step_ms,
        "pass_ms": result.pass_ms,
        "timings": result.timings.to_dict(orient="records"),
        "checks": result.checks.to_dict(orient="records"),
        "wall_s": time.perf_counter() - started,
    }
    print(json.dumps(doc, allow_nan=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
