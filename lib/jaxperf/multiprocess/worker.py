"""What a launched process runs: ``python -m jaxperf.multiprocess.worker TASK [CONFIG.json]``.

Tasks:

- ``ping``: join the job, all-reduce one value per global device, write
  ``ping_<i>.json`` (process id, device counts, the sum): a launch smoke test;
- ``study``: the dispatch methods across processes (``jaxperf.multiprocess.study_worker``),
  configured by CONFIG.json, writing ``study_<i>.json``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from . import runtime

TASKS = ("ping", "study")


def ping() -> None:
    """Join, psum ones over every global device, record what each process saw."""
    place = runtime.initialize()
    import jax
    import jax.numpy as jnp

    total = jax.pmap(lambda x: jax.lax.psum(x, "i"), axis_name="i")(jnp.ones(jax.local_device_count()))
    runtime.write_result(
        place,
        "ping",
        {
            "process_id": jax.process_index(),
            "processes": jax.process_count(),
            "local_devices": jax.local_device_count(),
            "global_devices": jax.device_count(),
            "psum": float(total[0]),
        },
    )


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in TASKS:
        print(
            f"usage: python -m jaxperf.multiprocess.worker {{{'|'.join(TASKS)}}} [CONFIG.json]",
            file=sys.stderr,
        )
        return 2
    if argv[0] == "ping":
        ping()
    else:
        from . import study_worker

        study_worker.run(json.loads(Path(argv[1]).read_text()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
