"""The dispatch study across processes (issue 14): N local processes joined by
``jax.distributed`` on 127.0.0.1, the dispatch methods checked and timed
across them, Equinox's multi-process ``filter_pmap`` bug reproduced with its
fix, and a scaling model for a pod.

Modules: ``launch`` (parent: start, watch, tear down), ``runtime`` (child:
join the job, write results), ``worker`` (the child's tasks), ``methods``
(each dispatch method across processes), ``bug`` (the Equinox report and its
patch), ``scaling`` (the pod model), ``run`` (parent: one launch per process
count, results gathered), ``report`` (grouped per model) with ``bug_report``
(the issue-ready section), ``figures``, ``settings`` (the models swept: an MLP and
the dispatch study's transformer).
"""

from typing import TYPE_CHECKING

from .._lazy import exports

if TYPE_CHECKING:
    from . import launch
    from .launch import LaunchError, LaunchResult

# Loaded on first use: importing this package (or its settings) imports no JAX.
__getattr__, __dir__ = exports(
    __name__,
    {
        "launch": (".launch", None),
        "LaunchError": (".launch", "LaunchError"),
        "LaunchResult": (".launch", "LaunchResult"),
    },
)
