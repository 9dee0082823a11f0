"""``diagnose``: is *your* training loop paying dispatch overhead, how much, and what should you
change? Every cheaper path is proved to compute what your step does, then timed interleaved in
your own loop (``python -m jaxperf diagnose package.module:factory``; needs pandas).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._lazy import exports

if TYPE_CHECKING:
    from .result import Diagnosis

__getattr__, __dir__ = exports(
    __name__,
    {"Diagnosis": (".result", "Diagnosis"), "identify": (".kinds", "identify"), "KINDS": (".kinds", "KINDS")},
)


def environment() -> dict[str, Any]:
    """Backend, devices and versions, for a diagnosis' heading and footer."""
    import datetime
    import sys

    import jax

    from ..backend import package_versions

    devices = jax.devices()
    packages = {k: ver for k, ver in package_versions(("jax", "jaxlib", "equinox", "flax")).items() if ver}
    return {
        "backend": jax.default_backend(),
        "device_kind": devices[0].device_kind,
        "device_count": len(devices),
        "packages": packages,
        "python": sys.version.split()[0],
        "timestamp_utc": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }


def diagnose(
    step: Callable[..., Any],
    *args: Any,
    loader: Any = None,
    carry: Any = "auto",
    batch_at: int | None = None,
    precision: float = 0.05,
    max_seconds: float = 60.0,
    timing_only: bool = False,
    min_rounds: int = 5,
    calls_per_round: int | None = None,
    loop_calls: int = 50,
    loop_seconds: float = 1.0,
    extra_paths: dict[str, Callable[..., Any]] | None = None,
    progress: Any = None,
) -> Diagnosis:
    """Diagnose ``step(*args)`` as the reader's training loop calls it.

    - ``loader``: None (every call gets the batch in ``args``), a callable returning the
      next batch, or an iterable of batches, placed as your loop places them;
    - ``carry``: ``"auto"`` (found from what the step returns, as ``loss, model, opt_state =
      step(model, opt_state, x)``; an ambiguous one is a ``ValueError`` listing the
      candidates), None (nothing carried), or ``{argument (index or name): output index}``;
    - ``batch_at``: the argument the loader's batch replaces (default: the one like it);
    - ``precision``: stop when every path's it/s ratio has an IQR within +-precision of its
      median; ``max_seconds``: the whole diagnosis' time cap, or the timed rounds' alone
      with ``timing_only``; ``min_rounds``: rounds before the first stop;
      ``calls_per_round``: calls blocked one by one per round, default about 50 ms of your step;
    - ``loop_calls``, ``loop_seconds``: your loop, as equinox#192's reporter timed it: each path's
      calls enqueued one after another, each fed the previous call's state, blocked once at the
      end, at least ``loop_calls`` calls and ``loop_seconds`` long (0 s: ``calls_per_round`` calls);
    - ``extra_paths``: more candidate paths, ``{key: builder(step, args, carry, batch_at)}``.

    A step that compiles again on every call gets that verdict and nothing is timed; what it
    prints is captured and counted (``Diagnosis.printed``). Raises ``ValueError`` naming the
    parameter for bad input, and when ``step`` raises on ``args``.
    """
    try:
        import pandas  # noqa: F401 -- the timings are a DataFrame
    except ImportError as err:
        raise ImportError("jaxperf.diagnosis.diagnose needs pandas: pip install 'jaxperf[tools]'") from err
    from .. import timing
    from ..errors import bad_value, check_int
    from . import engine
    from .kinds import identify
    from .result import Diagnosis

    check_int("min_rounds", min_rounds, minimum=1)
    if calls_per_round is not None:
        check_int("calls_per_round", calls_per_round, minimum=1)
    if isinstance(carry, str) and carry != "auto":
        raise bad_value("carry", carry, '"auto", None, or a dict {argument: output index}')
    config = timing.TimingConfig(
        warmup=1,
        repeats=min_rounds,
        number=calls_per_round or 1,
        precision=precision,
        max_seconds=max_seconds,
        loop_calls=loop_calls,
        loop_seconds=loop_seconds,
    )
    found = identify(step)
    result = engine.run(
        found,
        args,
        carry=carry,
        loader=loader,
        batch_at=batch_at,
        config=config,
        calls_per_round=calls_per_round,
        timing_only=timing_only,
        extra=extra_paths,
        progress=progress,
    )
    return Diagnosis(precision=precision, environment=environment(), **result)


__all__ = ["Diagnosis", "diagnose", "environment"]
