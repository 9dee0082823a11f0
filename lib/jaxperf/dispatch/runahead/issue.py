"""The issue-ready report for Equinox, filled from the run: what happens, since when, the
minimal repro and what it printed here, the measured cost, the cause, and the proposed
change shown working by patching it in (as the multi-process bug report does)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from ... import markdown
from ... import runs_ahead as rule
from ...markdown import fmt_stat
from . import eqx_fix, repro
from .methods import PATCHED
from .seed_loop import SLOW


def _verdict_of(verdicts: pd.DataFrame, method: str) -> dict[str, Any] | None:
    rows = verdicts[(verdicts["method"] == method) & (~verdicts["donated"])]
    return rows.iloc[0].to_dict() if len(rows) else None


def section(
    summary: dict[str, Any],
    verdicts: pd.DataFrame,
    repro_rows: pd.DataFrame,
    error_rows: pd.DataFrame,
    versions: dict[str, str],
    backend: str = "cpu",
) -> str:
    """The Markdown to paste into an Equinox issue; ``backend`` is where it was measured."""
    release = summary.get("release")
    since = (
        f"Measured (notebook 03, `{release['source']}`): on jax {release['jax']}, `eqx.filter_jit` runs ahead in "
        f"Equinox {release['previous']} and waits for each call from **{release['release']}** on."
        if release
        else "Since which release: not measured in this run (notebook 03 measures it: `./run_all.sh --versions --only 03`)."
    )
    fj, fixed = _verdict_of(verdicts, SLOW), _verdict_of(verdicts, PATCHED)
    cached = _verdict_of(verdicts, "cached_filter_jit")
    workaround = (
        "**Until then**, a loop can call `jax.jit` on `eqx.partition`ed params, or use "
        "`jaxperf.cached_filter_jit`, a drop-in for `eqx.filter_jit` that never waits"
        + (f" (the study's verdict for it: {cached['verdict']})" if cached else "")
        + "."
    )
    measured = (
        f"On a {fj['blocked_ms_per_call']:.0f} ms step here, `eqx.filter_jit` takes "
        f"{fj['enqueue_ms_per_call']:.1f} ms per call to enqueue (enqueue/blocked {fmt_stat({'median': fj['ratio_median'], 'q25': fj['ratio_q25'], 'q75': fj['ratio_q75']})}: "
        f"{fj['verdict']})."
        if fj
        else ""
    )
    cost = summary["loop"]["filter_jit_cost"]
    loop_text = (
        f"In the seed's loop (`for x in loader: x = shard(x); loss, model, opt_state = step(model, x, opt_state)`), "
        f"with a numpy loader whose host time is 0.3-1x the step's, `eqx.filter_jit` ran at {cost['median']:.2f}x "
        f"[{cost['q25']:.2f}, {cost['q75']:.2f}] the it/s of `jax.jit` on the same step"
        + (
            " (a CPU, where loader and step share the cores; on an accelerator the loop's bound drops from "
            "1/max(H, D) to 1/(H + D), half the rate where the loader's time equals the step's)."
            if backend == "cpu"
            else f" ({backend})."
        )
        if cost.get("measured")
        else "The seed's loop was not measured in this run."
    )
    shown = [
        "- the repro, changed: `eqx.filter_jit` enqueues as `jax.jit` does (table below);",
    ]
    if fixed:
        shown.append(
            f"- the study's verdict for the changed `eqx.filter_jit`: {fixed['verdict']} (enqueue "
            f"{fixed['enqueue_ms_per_call']:.2f} ms per call on the {fixed['blocked_ms_per_call']:.0f} ms step), "
            "with the same loss, parameters and optimiser state as `jax.jit`;"
        )
    patched = summary["loop"].get("patched_cost", {})
    if patched.get("measured"):
        shown.append(
            f"- in the seed's loop, the changed `eqx.filter_jit` at {patched['median']:.2f}x "
            f"[{patched['q25']:.2f}, {patched['q75']:.2f}] `jax.jit`'s it/s;"
        )
    shown.append(
        "- a failing `eqx.error_if` still raises Equinox's `EquinoxRuntimeError`, with its message, at the call "
        "(the function has a check, so it still waits):"
    )
    repro_table = repro_rows[["equinox", "variant", "enqueue_ms", "done_ms"]].rename(
        columns={"enqueue_ms": "ms per call enqueued", "done_ms": "ms per call done"}
    )
    checks = error_rows[["variant", "raised", "error", "message"]]
    versions_text = ", ".join(f"{k} {v}" for k, v in versions.items())
    off = repro_rows[
        (repro_rows["equinox"] == "as shipped, EQX_ON_ERROR=off")
        & (repro_rows["variant"] == "eqx.filter_jit")
    ]
    off_text = (
        f" With `EQX_ON_ERROR=off` the wait stays: {off.iloc[0]['enqueue_ms']:.1f} ms per call enqueued, "
        f"{off.iloc[0]['done_ms']:.1f} ms done (below)."
        if len(off)
        else ""
    )
    smoke = "\n" + markdown.SMOKE_NOTICE + "\n" if summary.get("smoke_run") else ""
    return f"""## Issue-ready report for Equinox
{smoke}
### `eqx.filter_jit` waits for every call to finish, so a training loop can never run ahead

**What happens.** Every call of a function wrapped in `eqx.filter_jit` returns only once its
computation has finished, whether or not the function contains an `eqx.error_if`. `jax.jit`
returns once the computation is enqueued. So the host work of a training loop (loading and
preparing the next batch) cannot overlap the device running the current step: the two add up.
{measured} {loop_text}

**Since when.** {since} Equinox's history names the change: commit 141c18d (2024-10-01, "JAX
0.4.33 changes how errors work"), which added the marker and its `block_until_ready`.

**Versions here.** {versions_text}; {backend} backend.{off_text}

**Minimal repro:**

```python
{repro.REPRO_SCRIPT}```

What it printed here (recorded by the study; "changed" is the same script with the proposed change patched in):

{markdown.table(repro_table)}

**Cause.** `_filter_jit_cache`'s wrapped function returns `marker = jnp.array(0)` beside the outputs, and
`_call` runs `marker.block_until_ready()` before returning, so that a failing `eqx.error_if` raises inside
`filter_jit`'s `try` with Equinox's message. The commit that added it is titled "JAX 0.4.33 changes how
errors work".

**Proposed change.** Equinox can tell at trace time whether the function checks anything: trace it to a
jaxpr (an inlined `jax.jit`, still one trace) and look, in that jaxpr and every jaxpr inside it, for a
callback to `equinox._errors`; return `marker = None` when there is none, and `_call`'s existing
`isinstance(marker, jax.Array)` test skips the wait. A function with a check waits and raises exactly as
today, also when the check sits in a trace JAX reused (a `jax.jit` helper, a `while_loop` body). Against
Equinox's main and the installed Equinox:

```diff
{eqx_fix.fix_diff().strip()}
```

**Shown to work here** (the change patched in at runtime: Equinox's own `_call` and `_filter_jit_cache`
recompiled from their source with these lines, `jaxperf.dispatch.runahead.eqx_fix.fixed_filter_jit`):

{chr(10).join(shown)}

{markdown.table(checks)}

{workaround}

Rule used for "runs ahead" / "waits": enqueue time over blocked time per call, per pair; the upper quartile
below {rule.BOUNDARY} runs ahead, the lower quartile above it waits.
"""
