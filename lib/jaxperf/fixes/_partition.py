"""The machinery ``cached_filter_pmap`` and ``cached_filter_jit`` share: the cache key of a
call, its partition into array leaves and the rest, the record of a trace's outputs, the
ahead-of-time forms (``Lowered``, ``Compiled``) and the counted hand-overs to Equinox.

A call's key holds everything that makes JAX retrace: the input treedef, the non-array
leaves with their types (``1``, ``1.0`` and ``True`` are equal in Python but trace
differently), each array's shape, dtype and weak type, and JAX's trace context (x64,
default device, matmul precision, ...). What a trace records (the output structure and
its non-array leaves) therefore always belongs to the compiled function the key selects.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import jax
import jax.tree_util as jtu

from .. import private_api

ARRAY_TYPES = private_api.equinox_array_types()
# .lower() also takes abstract arrays, as jax.jit(...).lower does: compile for a topology
# (e.g. a TPU v3-8 described on a CPU) without any array of it.
LOWER_TYPES = (*ARRAY_TYPES, jax.ShapeDtypeStruct)
#: marks an array leaf's slot in a list of static leaves
ARRAY = object()
_trace_context = private_api.jax_trace_context()
# Frames of these modules stay out of JAX's filtered tracebacks and out of the stack
# that eqx.error_if records, as Equinox's own frames do.
private_api.jax_traceback_exclusion(__file__)


class Fallback(Exception):
    """Raised while resolving a call that Equinox must handle; carries the reason."""


def split(tree: Any, types: tuple[type, ...] = ARRAY_TYPES) -> tuple[tuple, list, list, Any]:
    """(cache key, array leaves, static leaves with ARRAY marks, treedef) of ``tree``;
    ``types``: what counts as an array (abstract ones too when lowering). The key is not
    hashed here (the cache lookup hashes it): look it up with :func:`lookup`."""
    leaves, treedef = jtu.tree_flatten(tree)
    dynamic: list[Any] = []
    static: list[Any] = []
    signature: list[Any] = []
    leaf: Any
    for leaf in leaves:
        if isinstance(leaf, types):
            dynamic.append(leaf)
            static.append(ARRAY)
            array: Any = leaf
            signature.append((array.shape, array.dtype, getattr(array, "weak_type", False)))
        else:
            static.append(leaf)
            signature.append(type(leaf))
    key = (treedef, tuple(static), tuple(signature), _trace_context())
    return key, dynamic, static, treedef


def lookup(cache: dict[Hashable, Any], key: Hashable) -> Any:
    """``cache.get(key)``; :class:`Fallback` for an unhashable non-array leaf (Equinox's error)."""
    try:
        return cache.get(key)
    except TypeError as err:
        raise Fallback("unhashable non-array leaf") from err


def merge(treedef: Any, static: Sequence[Any], dynamic: Sequence[Any]) -> Any:
    """The tree ``split`` took apart, with ``dynamic`` in the ARRAY slots of ``static``."""
    it = iter(dynamic)
    return treedef.unflatten([next(it) if s is ARRAY else s for s in static])


class Outputs:
    """A trace's output structure and non-array outputs, recorded while JAX traces."""

    __slots__ = ("treedef", "static")

    def __init__(self) -> None:
        self.treedef: Any = None
        self.static: list[Any] = []

    def record(self, out: Any, dynamic: Sequence[bool] | None = None) -> tuple:
        """The output leaves that leave the compiled function: ``dynamic[i]`` says which
        (default: the arrays, as Equinox partitions with ``eqx.is_array``)."""
        leaves, self.treedef = jtu.tree_flatten(out)
        if dynamic is None:
            dynamic = [isinstance(x, ARRAY_TYPES) for x in leaves]
        self.static = [ARRAY if d else x for d, x in zip(dynamic, leaves)]
        return tuple(x for d, x in zip(dynamic, leaves) if d)

    def rebuild(self, out_dynamic: Sequence[Any]) -> Any:
        return merge(self.treedef, self.static, out_dynamic)


class Counted:
    """Hits, misses and hand-overs to Equinox (by reason), per wrapper and per kind."""

    def __init__(self, totals: collections.Counter[str]) -> None:
        self.stats = {"hits": 0, "misses": 0, "fallbacks": 0}
        self.fallback_reasons: collections.Counter[str] = collections.Counter()
        self._totals = totals

    def count_fallback(self, reason: str) -> None:
        self.stats["fallbacks"] += 1
        self.fallback_reasons[reason] += 1
        self._totals[reason] += 1


class Compiled:
    """``Lowered.compile()``: call it with arguments of the structure it was lowered for."""

    def __init__(self, compiled: Any, lowered: Lowered) -> None:
        self.compiled, self._lowered = compiled, lowered

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        lowered = self._lowered
        key, dynamic = lowered.key_of(args, kwargs)
        if key != lowered.key:
            raise TypeError(
                "arguments of another structure, shape, dtype or static value than those it was "
                "lowered for: lower(...) again with these arguments."
            )
        return lowered.run(self.compiled, dynamic)

    def as_text(self) -> str:
        return self.compiled.as_text()


class Lowered:
    """``wrapper.lower(*args)``: ``as_text()`` and ``compile()``, as Equinox's. ``key_of``
    gives a call's (key, array leaves); ``run(compiled, leaves)`` calls the compiled form
    as the wrapper calls its jitted one and rebuilds the outputs."""

    def __init__(self, lowered: Any, key: Hashable, key_of: Callable, run: Callable) -> None:
        self.lowered, self.key, self.key_of, self.run = lowered, key, key_of, run

    def as_text(self) -> str:
        return self.lowered.as_text()

    def compile(self, compiler_options: dict[str, str | bool] | None = None) -> Compiled:
        return Compiled(self.lowered.compile(compiler_options=compiler_options), self)
