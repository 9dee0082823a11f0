"""Does ``eqx.filter_jit`` run ahead? The benchmark that runs inside one Equinox release's environment.

Self-contained on purpose, like ``bench_old.py``: the release environments have only
jax, jaxlib, equinox and their dependencies, so this file imports nothing from jaxperf
and is run by path::

    .envs/equinox-0.11.7/bin/python lib/jaxperf/versions/bench_runahead.py --repeats 7

It works with the JAX of the 0.11 releases (0.4.35) and today's (0.12), using only
``jax.jit``, ``eqx.filter_jit``, ``eqx.error_if`` and ``jax.block_until_ready``.

The step: ``layers`` products of a ``batch`` x ``width`` activation with ``width`` x ``width``
weights, each followed by ``tanh``: its device time is far above the host time of a
call, so a call that returns once its step is enqueued enqueues much faster than the
steps run, and one that waits for its step does not. Two variants, the same step:
``jax.jit`` (known to run ahead: the reference) and ``eqx.filter_jit``. They are first
checked to return the same array.

Timing follows jaxperf.timing (copied, since jaxperf is not importable here): warm-up
excluded; each repeat runs both variants in an order rotated from repeat to repeat;
per variant and repeat, ``number`` calls each blocked (wall and thread-CPU seconds per
call) and ``number`` calls only enqueued, blocked once after the loop (enqueue
seconds per call, before that block). The verdict is the parent's
(``jaxperf.runs_ahead``).

Then, once: where a failing ``eqx.error_if`` inside ``eqx.filter_jit`` raises, at the
call or only at the next ``block_until_ready``, and what it raises.

Protocol: exit code 0 and exactly one JSON document on stdout; on failure a non-zero
exit code and the traceback on stderr.
"""

import argparse
import json
import os
import platform
import sys
import time
import traceback

PROTOCOL = "jaxperf.versions.bench_runahead/1"
VARIANTS = ("jax.jit", "eqx.filter_jit")


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--number", type=int, default=8, help="calls per variant per repeat")
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--batch", type=int, default=512)
    args = parser.parse_args(argv)
    for name in ("repeats", "number", "width", "layers", "batch"):
        if getattr(args, name) < 1:
            parser.error(f"--{name}={getattr(args, name)!r} is not allowed: expected an integer >= 1")
    if args.warmup < 0:
        parser.error(f"--warmup={args.warmup!r} is not allowed: expected an integer >= 0")
    return args


def error_check(eqx, jax, jnp):
    """Where a failing ``eqx.error_if`` under ``eqx.filter_jit`` raises: at the call, at the
    next ``block_until_ready``, or not at all; and the exception's type."""

    @eqx.filter_jit
    def checked(x):
        return eqx.error_if(x, x > 0, "x is positive")

    where = "not raised"
    error_type = ""
    try:
        out = checked(jnp.ones(()))
    except Exception as err:  # noqa: BLE001 -- the record is the point
        where, error_type = "at the call", type(err).__name__
    else:
        try:
            jax.block_until_ready(out)
        except Exception as err:  # noqa: BLE001
            where, error_type = "at block_until_ready", type(err).__name__
    return {"raised": where, "error_type": error_type}


def run(args):
    import equinox as eqx
    import jax
    import jax.numpy as jnp
    import jaxlib
    import numpy as np

    devices = jax.devices()
    rng = np.random.default_rng(0)
    scale = 1.0 / np.sqrt(args.width)
    weights = [
        jnp.asarray(rng.standard_normal((args.width, args.width)).astype(np.float32) * scale)
        for _ in range(args.layers)
    ]
    x = jnp.asarray(rng.standard_normal((args.batch, args.width)).astype(np.float32))

    def step(ws, h):
        for w in ws:
            h = jnp.tanh(h @ w)
        return h

    fns = {"jax.jit": jax.jit(step), "eqx.filter_jit": eqx.filter_jit(step)}
    calls = {name: (lambda f=f: f(weights, x)) for name, f in fns.items()}
    first = {name: np.asarray(jax.block_until_ready(call())) for name, call in calls.items()}
    if not np.allclose(first["jax.jit"], first["eqx.filter_jit"], rtol=1e-6, atol=1e-6):
        raise RuntimeError("jax.jit and eqx.filter_jit return different arrays for the same step")

    for name in VARIANTS:
        for _ in range(args.warmup):
            jax.block_until_ready(calls[name]())
    wall, cpu = time.perf_counter, time.thread_time
    rows = []
    for repeat in range(args.repeats):
        shift = repeat % len(VARIANTS)
        order = VARIANTS[shift:] + VARIANTS[:shift]
        for position, name in enumerate(order):
            call = calls[name]
            wall0, cpu0 = wall(), cpu()
            for _ in range(args.number):
                jax.block_until_ready(call())
            blocked = (wall() - wall0) / args.number
            cpu_s = (cpu() - cpu0) / args.number
            outs = []
            wall0 = wall()
            for _ in range(args.number):
                outs.append(call())
            enqueued = (wall() - wall0) / args.number
            jax.block_until_ready(outs)
            total = (wall() - wall0) / args.number
            rows.append(
                {
                    "variant": name,
                    "repeat": repeat,
                    "position": position,
                    "calls": args.number,
                    "wall_s_per_call": blocked,
                    "cpu_s_per_call": cpu_s,
                    "dispatch_s_per_call": enqueued,
                    "loop_s_per_call": total,
                }
            )
    check = error_check(eqx, jax, jnp)

    def version(module):
        return getattr(module, "__version__", None) or getattr(
            getattr(module, "version", None), "__version__", None
        )

    return {
        "protocol": PROTOCOL,
        "versions": {
            "python": platform.python_version(),
            "jax": jax.__version__,
            "jaxlib": version(jaxlib),
            "equinox": getattr(eqx, "__version__", None),
            "numpy": np.__version__,
        },
        "executable": sys.executable,
        "backend": jax.default_backend(),
        "device_kind": devices[0].device_kind,
        "device_count": len(devices),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "config": vars(args),
        "same_result": True,
        "error_check": check,
        "rows": rows,
    }


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    started = time.perf_counter()
    real_stdout = sys.stdout
    sys.stdout = sys.stderr  # anything the libraries print goes to stderr
    try:
        doc = run(args)
    except Exception:  # noqa: BLE001 -- reported on stderr with a non-zero exit code
        traceback.print_exc()
        return 1
    finally:
        sys.stdout = real_stdout
    doc["wall_s"] = time.perf_counter() - started
    real_stdout.write(json.dumps(doc) + "\n")
    real_stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
