"""summary.md's last section: the issue-ready bug report for Equinox, filled from the run
(the repro's outcome in every process, the recorded tracebacks, the installed versions)."""

from __future__ import annotations

from .. import markdown
from . import bug
from .run import StudyRun
from .settings import MultiprocessSettings


def section(run: StudyRun, settings: MultiprocessSettings) -> str:
    """The issue-ready report: what happens, versions, repro, this run's outcome and tracebacks, cause, fix."""
    n = settings.processes
    at_n = run.repro[(run.repro["processes"] == n)]
    outcome = (
        at_n.groupby("case", sort=False)
        .agg(processes=("process_id", "size"), ok=("ok", "all"), error=("error", "first"))
        .reset_index()
    )
    outcome["result"] = [
        "works" if ok else f"fails: {err}" for ok, err in zip(outcome["ok"], outcome["error"])
    ]
    first = at_n[(at_n["process_id"] == 0) & (at_n["case"] == "eqx.filter_pmap")]
    trace = first["traceback"].iloc[0] if not first.empty and first["traceback"].iloc[0] else "(did not fail)"
    plain = at_n[(at_n["process_id"] == 0) & (at_n["case"] == "jax.pmap(out_axes=[0])")]
    plain_trace = (
        plain["traceback"].iloc[0] if not plain.empty and plain["traceback"].iloc[0] else "(did not fail)"
    )
    versions = ", ".join(f"{k} {v}" for k, v in run.versions.items())
    return f"""## Bug report for Equinox: `eqx.filter_pmap` fails in every multi-process job

**What happens.** Under `jax.distributed` with more than one process (a TPU pod slice, a
multi-node GPU job, or {n} local CPU processes here), the first call of any `eqx.filter_pmap`
raises `TypeError: unhashable type: 'list'` in every process. One process never shows it.

**Versions.** {versions}; Python 3.12, Linux, CPU backend, {n} processes x
{settings.global_devices // n} devices on 127.0.0.1 (gloo collectives).

**Minimal repro** (2 processes; the same happens on any multi-host TPU/GPU job):

```python
{bug.REPRO_SCRIPT}```

Outcome in each of the {n} processes of this run (recorded by the study, not typed in):

{markdown.table(outcome[["case", "processes", "result"]])}

**Traceback** (`eqx.filter_pmap`, process 0):

```
{trace.strip()}
```

Plain `jax.pmap(f, out_axes=[0])`, process 0:

```
{plain_trace.strip()}
```

**Cause.** Across processes, `jax.pmap` converts its global outputs back to host-local
arrays (`jax/_src/pmap.py`, `global_array_to_host_local_array`) through
`_get_out_shardings`, a `util.cache` whose key includes the output specs built from
`out_axes`; a list there is unhashable. In one process that path is skipped. Equinox's
`_filter_pmap_cache` passes `out_axes = (list(range(-max_out_size, max_out_size)), None, None)`.

**Proposed fix** (Equinox; tuples, hashable, same meaning), against the installed
`equinox/_vmap_pmap.py`:

```diff
{bug.fix_diff().strip()}
```

**Shown to work here:** the study recompiles Equinox's own `_filter_pmap_cache` from its
source with these two lines changed and swaps it in around each call (`jaxperf.multiprocess.bug.fixed`):
the `eqx.filter_pmap, fixed` row above, and the method `filter_pmap_fixed` in the correctness table, which gives
the same loss, parameters and optimiser state as every other method and as one device. JAX
could also accept lists there (hash the flattened specs), since its docs allow any pytree
prefix for `out_axes`; a tuple in Equinox fixes it for every JAX release.
"""
