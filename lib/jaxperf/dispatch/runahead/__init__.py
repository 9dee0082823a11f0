"""Today's Equinox path (issue 21): does ``eqx.filter_jit`` wait for every call, and what does
that cost in the seed's whole loop? Notebook 07.

One module per concern:

- :mod:`~jaxperf.runs_ahead`: the rule, runs ahead or waits, from enqueue vs blocked time;
- :mod:`~jaxperf.dispatch.runahead.probe`: that verdict for every dispatch method on a heavy step;
- :mod:`~jaxperf.dispatch.runahead.loader`: the seed's loader, host numpy work of a set cost per batch;
- :mod:`~jaxperf.dispatch.runahead.seed_loop`: the seed's whole loop per method and loader cost;
- :mod:`~jaxperf.dispatch.runahead.setups`: that loop on a CPU, one child per XLA:CPU set-up;
- :mod:`~jaxperf.dispatch.runahead.loop_analysis`: bounds, overlap, per-pair ratios, the goals;
- :mod:`~jaxperf.dispatch.runahead.eqx_fix`: the proposed change to Equinox, patched in to show it works;
- :mod:`~jaxperf.dispatch.runahead.repro`: the minimal repro and the error check;
- :mod:`~jaxperf.dispatch.runahead.methods`: the dispatch methods plus the patched ``eqx.filter_jit``;
- :mod:`~jaxperf.dispatch.runahead.report`, :mod:`~jaxperf.dispatch.runahead.summary_md`,
  :mod:`~jaxperf.dispatch.runahead.issue`: summary.json's numbers, summary.md, the issue text;
- :mod:`~jaxperf.dispatch.runahead.figures`: the figures;
- :mod:`~jaxperf.dispatch.runahead.settings`: :class:`RunaheadSettings`, notebook 07's parameters.

The commit that made calls wait is named in the issue text (templates/issue.md).
"""

from typing import TYPE_CHECKING

from ..._lazy import exports

if TYPE_CHECKING:
    from ... import runs_ahead as verdict
    from . import figures, issue, loop_analysis, probe, report, repro, seed_loop, setups, summary_md
    from .eqx_fix import fixed_filter_jit
    from .settings import RunaheadSettings

# Loaded on first use: importing this package (or its settings) imports no JAX.
__getattr__, __dir__ = exports(
    __name__,
    {
        "verdict": ("...runs_ahead", None),
        "figures": (".figures", None),
        "issue": (".issue", None),
        "loop_analysis": (".loop_analysis", None),
        "probe": (".probe", None),
        "report": (".report", None),
        "repro": (".repro", None),
        "seed_loop": (".seed_loop", None),
        "setups": (".setups", None),
        "summary_md": (".summary_md", None),
        "fixed_filter_jit": (".eqx_fix", "fixed_filter_jit"),
        "RunaheadSettings": (".settings", "RunaheadSettings"),
    },
)

__all__ = [
    "RunaheadSettings",
    "figures",
    "fixed_filter_jit",
    "issue",
    "loop_analysis",
    "probe",
    "report",
    "repro",
    "seed_loop",
    "setups",
    "summary_md",
    "verdict",
]
