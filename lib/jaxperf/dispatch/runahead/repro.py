"""The minimal repro for Equinox, run by the study as a user would run it, and the error check.

:data:`REPRO_SCRIPT` is the issue's repro: the same step through ``jax.jit`` and
``eqx.filter_jit``, 20 calls enqueued, then one block. :func:`run_repro` runs it in a fresh
interpreter (one CPU host device, or whatever JAX finds when ``platforms`` is None) as
shipped, and again with :func:`jaxperf.dispatch.runahead.eqx_fix.fixed_filter_jit` in
``eqx.filter_jit``'s place, and returns what it printed, parsed; also as shipped with
``EQX_ON_ERROR=off``, to show whether turning the checks off removes the wait.

:func:`error_checks` shows what the change keeps: a failing ``eqx.error_if`` inside
``eqx.filter_jit`` as shipped and changed (where it raises, what, with which first line),
beside ``jax.jit`` for contrast.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pandas as pd

from ...paths import PROJECT_ROOT

REPRO_SCRIPT = """\
import time

import equinox as eqx
import jax
import jax.numpy as jnp


def step(w, x):
    for _ in range(8):
        x = jnp.tanh(x @ w)
    return x


w, x = jnp.eye(512) / 2, jnp.ones((512, 512))
for name, f in {"jax.jit": jax.jit(step), "eqx.filter_jit": eqx.filter_jit(step)}.items():
    jax.block_until_ready(f(w, x))  # compile
    start = time.perf_counter()
    outs = [f(w, x) for _ in range(20)]
    enqueued = time.perf_counter() - start
    jax.block_until_ready(outs)
    total = time.perf_counter() - start
    print(f"{name}: {enqueued / 20 * 1e3:.1f} ms per call enqueued, {total / 20 * 1e3:.1f} ms per call done")
"""

#: prepended to run the repro with the proposed change patched in (needs jaxperf)
CHANGED_PRELUDE = """\
import equinox
from jaxperf.dispatch.runahead.eqx_fix import fixed_filter_jit
equinox.filter_jit = fixed_filter_jit  # the proposed change, patched in at runtime
"""

_LINE = re.compile(r"^(\S+): ([0-9.]+) ms per call enqueued, ([0-9.]+) ms per call done$")


def parse(output: str) -> list[dict[str, Any]]:
    """The repro's lines as rows (``variant``, ``enqueue_ms``, ``done_ms``); others are ignored."""
    rows = []
    for line in output.splitlines():
        match = _LINE.match(line.strip())
        if match:
            rows.append({"variant": match[1], "enqueue_ms": float(match[2]), "done_ms": float(match[3])})
    return rows


def run_repro(platforms: str | None = "cpu", timeout_s: int = 600) -> pd.DataFrame:
    """:data:`REPRO_SCRIPT` in a fresh interpreter, as shipped (also with ``EQX_ON_ERROR=off``,
    which turns Equinox's checks off) and changed: one row per (equinox, variant) with what it printed. Raises RuntimeError with its stderr if it fails."""
    env = dict(os.environ)
    if platforms:
        env["JAX_PLATFORMS"] = platforms
        flag = "--xla_force_host_platform_device_count"
        kept = [f for f in env.get("XLA_FLAGS", "").split() if not f.startswith(flag)]
        env["XLA_FLAGS"] = " ".join(kept + [f"{flag}=1"])
    rows = []
    runs: tuple[tuple[str, str, dict[str, str]], ...] = (
        ("as shipped", REPRO_SCRIPT, {}),
        ("as shipped, EQX_ON_ERROR=off", REPRO_SCRIPT, {"EQX_ON_ERROR": "off"}),
        ("changed", CHANGED_PRELUDE + REPRO_SCRIPT, {}),
    )
    for equinox, source, extra in runs:
        proc = subprocess.run(
            [sys.executable, "-c", source],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env={**env, **extra},
            cwd=PROJECT_ROOT,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"the repro ({equinox}) exited {proc.returncode}:\n{proc.stderr[-3000:]}")
        parsed = parse(proc.stdout)
        if len(parsed) != 2:
            raise RuntimeError(f"the repro ({equinox}) printed {proc.stdout!r}")
        rows += [
            {"equinox": equinox, **row, "output": line} for row, line in zip(parsed, proc.stdout.splitlines())
        ]
    return pd.DataFrame(rows)


def error_checks() -> pd.DataFrame:
    """A failing ``eqx.error_if`` (``x`` positive) under ``eqx.filter_jit`` as shipped, changed,
    and ``jax.jit``: where it raised ("at the call", "at block_until_ready", "not raised"),
    the exception's type and its message's first line."""
    import equinox as eqx
    import jax

    from .eqx_fix import fixed_filter_jit

    def checked(x: jax.Array) -> jax.Array:
        return eqx.error_if(x, x > 0, "x is positive") * 2

    wrappers: dict[str, Callable[..., Any]] = {
        "eqx.filter_jit": eqx.filter_jit,
        "eqx.filter_jit, changed": fixed_filter_jit,
        "jax.jit": jax.jit,
    }
    rows = []
    # jax.jit's failing callback also logs its traceback; Equinox filters that log itself.
    callback_log = logging.getLogger("jax._src.callback")
    was_disabled, callback_log.disabled = callback_log.disabled, True
    try:
        for name, wrap in wrappers.items():
            rows.append(_check_one(name, wrap(checked)))
    finally:
        callback_log.disabled = was_disabled
    return pd.DataFrame(rows)


def _check_one(name: str, fn: Callable[..., Any]) -> dict[str, Any]:
    """Call ``fn`` where its check fails, then where it passes; where and what it raised."""
    import jax
    import jax.numpy as jnp

    where, error, first = "not raised", "", ""
    try:
        out = fn(jnp.ones(()))
    except Exception as err:  # noqa: BLE001 -- the record is the point
        where, error, first = "at the call", type(err).__name__, _first_line(err)
    else:
        try:
            jax.block_until_ready(out)
        except Exception as err:  # noqa: BLE001
            where, error, first = "at block_until_ready", type(err).__name__, _first_line(err)
    passes = float(fn(-jnp.ones(())))  # the check passes: the value is the function's
    return {"variant": name, "raised": where, "error": error, "message": first, "value_when_passing": passes}


def _first_line(err: BaseException) -> str:
    """The line of the message that names the failed check (Equinox's ``...RuntimeError: msg``)."""
    lines = str(err).splitlines()
    for line in lines:
        if line.strip().endswith("RuntimeError: x is positive"):
            return line.strip()[:200]
    return (lines or [""])[0][:200]
