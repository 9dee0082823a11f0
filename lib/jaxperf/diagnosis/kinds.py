"""What kind of compiled step a reader hands to :func:`jaxperf.diagnosis.diagnose`, read off the wrapper
type its transform returns (never its name); another kind is an error listing those known.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable
from typing import Any

#: every kind, with what a reader writes to get it
KINDS = {
    "eqx.filter_jit": "eqx.filter_jit(step)",
    "eqx.filter_pmap": "eqx.filter_pmap(step, axis_name=...)",
    "jaxperf.cached_filter_jit": "jaxperf.cached_filter_jit(step)",
    "jaxperf.cached_filter_pmap": "jaxperf.cached_filter_pmap(step, axis_name=...)",
    "jax.jit": "jax.jit(step)",
    "jax.pmap": "jax.pmap(step, axis_name=...)",
    "nnx.jit": "nnx.jit(step) (graph mode, Flax's default)",
    "nnx.jit tree mode": "nnx.jit(step, graph=False)",
    "jaxperf.cached_nnx_jit": "jaxperf.cached_nnx_jit(step)",
}


@dataclasses.dataclass(frozen=True)
class Step:
    """A reader's compiled step, taken apart: ``raw`` is the Python function it compiles;
    ``donate`` is Equinox's vocabulary ("none", "all", "all-except-first") for Equinox's
    kinds, else the donated argument positions (``donate_argnums`` and ``donate_argnames``
    resolved); ``axis_name`` the mapped axis of a pmap kind (None when unknown)."""

    kind: str
    call: Callable[..., Any]
    raw: Callable[..., Any]
    donate: str | tuple[int, ...] = "none"
    axis_name: Hashable | None = None
    default_axes: bool = True  # pmap kinds: every array argument mapped over axis 0, outputs too

    @property
    def family(self) -> str:
        """Which cheaper paths apply: "nnx", "pmap" or "jit"."""
        return next(f for f in ("nnx", "pmap", "jit") if f in self.kind)

    def donated(self, n_args: int) -> tuple[int, ...]:
        """The argument positions whose arrays each call donates."""
        if self.donate == "all":
            return tuple(range(n_args))
        if self.donate == "all-except-first":
            return tuple(range(1, n_args))
        if isinstance(self.donate, tuple):
            return tuple(i for i in self.donate if i < n_args)
        return ()

    @property
    def donate_text(self) -> str:
        if isinstance(self.donate, tuple):
            return f"donate_argnums={self.donate}" if self.donate else "none"
        return self.donate


def jit_donation(jitted: Any) -> tuple[int, ...]:
    """The donated positions of a ``jax.jit`` function as JAX resolved them; () if unreadable."""
    info = getattr(jitted, "_jit_info", None)
    return tuple(sorted(getattr(info, "donate_argnums", ()) or ()))


def pmap_axes(call: Callable[..., Any], args: tuple) -> tuple[Hashable | None, bool]:
    """(axis name, whether all is mapped over axis 0) of a ``jax.pmap`` on ``args``, from its jaxpr."""
    import jax

    try:
        eqns = list(jax.make_jaxpr(call)(*args).jaxpr.eqns)
    except Exception:  # noqa: BLE001 -- tracing is only a way to read the options
        return None, False
    for eqn in eqns + [e for q in eqns for e in getattr(q.params.get("jaxpr"), "eqns", ())]:
        if eqn.primitive.name == "shard_map" and len(eqn.params["mesh"].axis_names) == 1:
            (name,) = eqn.params["mesh"].axis_names
            default = all(tuple(s) == (name,) for s in (*eqn.params["in_specs"], *eqn.params["out_specs"]))
            return (None if str(name).startswith("_internal_pmap") else name), default
    return None, False


def _equinox_jit(step: Any, kind: str) -> Step:
    donate = ("all" if step.donate_first else "all-except-first") if step.donate_rest else "none"
    return Step(kind, step, step.__wrapped__, donate)


def _axis_0(axes: Any) -> bool:
    import equinox as eqx

    if isinstance(axes, eqx.if_array):
        return axes.axis == 0
    return isinstance(axes, int) and not isinstance(axes, bool) and axes == 0


def _equinox_pmap(step: Any, kind: str) -> Step:
    donate = "all" if step._pmapkwargs.get("donate_argnums") else "none"
    return Step(
        kind, step, step._fun, donate, step._axis_name, _axis_0(step._in_axes) and _axis_0(step._out_axes)
    )


def identify(step: Any) -> Step:
    """The :class:`Step` of ``step``; ``ValueError`` naming its type and the kinds known."""
    name = f"{type(step).__module__}.{type(step).__qualname__}"
    table: dict[str, tuple[str, Callable[[Any, str], Step]]] = {
        "equinox._jit._JitWrapper": ("eqx.filter_jit", _equinox_jit),
        "equinox._vmap_pmap._PmapWrapper": ("eqx.filter_pmap", _equinox_pmap),
        # jaxperf's drop-ins are Modules with Equinox's own fields
        "jaxperf.fixes._jit.CachedFilterJit": ("jaxperf.cached_filter_jit", _equinox_jit),
        "jaxperf.fixes._pmap.CachedFilterPmap": ("jaxperf.cached_filter_pmap", _equinox_pmap),
    }
    if name in table:
        kind, build = table[name]
        return build(step, kind)
    if name == "jaxlib._jax.PjitFunction":
        return Step("jax.jit", step, step.__wrapped__, jit_donation(step))
    lower = getattr(step, "lower", None)
    if callable(step) and getattr(lower, "__qualname__", "") == "pmap.<locals>.lower":
        return Step("jax.pmap", step, step.__wrapped__)
    if name.startswith("flax.nnx.transforms.compilation."):
        tree_mode = getattr(step, "graph", True) is False
        donate = jit_donation(getattr(step, "jitted_fn", None))
        return Step("nnx.jit tree mode" if tree_mode else "nnx.jit", step, step.fun, donate)
    if name.startswith("jaxperf.fixes._nnx."):
        return Step("jaxperf.cached_nnx_jit", step, step.__wrapped__)
    known = "; ".join(KINDS.values())
    raise ValueError(
        f"step={step!r} (a {name}) is not allowed: expected a compiled step, one of: {known}. "
        "A plain Python function is not compiled: wrap it as your training loop calls it."
    )
