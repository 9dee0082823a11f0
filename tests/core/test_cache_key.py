"""The drop-ins key their caches on everything a traced function can observe of its inputs
(issue 28): an array's whole type as ``jax.typeof`` gives it (shape, dtype, weak type,
sharding with its mesh axis types, memory space, varying manual axes, layout, and whatever a
JAX version adds) and the sign of a zero. Was: shape, dtype and weak type only, so with JAX
0.12's default (Explicit) mesh a function that branches on ``jax.typeof(v).sharding`` got the
outputs of another call's trace. The attributes come from JAX itself: a new one fails
:func:`test_every_attribute_of_an_array_type_has_a_case_here` until a case is written for it.
A core test: jaxperf's public API, jax, equinox, numpy, pytest."""

from __future__ import annotations

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from dropin_checks import N, assert_same, stacked
from jax.sharding import NamedSharding, SingleDeviceSharding
from jax.sharding import PartitionSpec as P

from jaxperf import cached_filter_jit, cached_filter_pmap


def aval_attributes() -> set[str]:
    """The public attributes of the type ``jax.typeof`` returns for an array, read from JAX:
    the slots of every class in its method resolution order."""
    names: set[str] = set()
    for klass in type(jax.typeof(jnp.ones(2))).__mro__:
        slots = klass.__dict__.get("__slots__", ())
        names |= {slots} if isinstance(slots, str) else set(slots)
    return {name for name in names if not name.startswith("_")}


def _mesh():
    return jax.make_mesh((8,), ("x",))  # JAX 0.12: Explicit axes, the sharding is in the type


def _memory(kind: str):
    device = jax.devices()[0]
    if kind not in {m.kind for m in device.addressable_memories()}:
        pytest.skip(f"this backend has no {kind!r} memory")
    return jax.device_put(jnp.arange(4.0), SingleDeviceSharding(device, memory_kind=kind))


def _layout(major_to_minor):
    try:
        from jax.experimental.layout import Format, Layout
    except ImportError:
        pytest.skip("this JAX has no jax.experimental.layout.Format")
    sharding = SingleDeviceSharding(jax.devices()[0])
    return jax.device_put(jnp.ones((2, 3)), Format(Layout(major_to_minor), sharding))


#: attribute of the aval -> two arrays that differ in it (where this JAX and backend can make them)
CASES = {
    "shape": lambda: (jnp.ones(2), jnp.ones(3)),
    "dtype": lambda: (jnp.ones(2), jnp.ones(2, jnp.int32)),
    "weak_type": lambda: (jnp.asarray(1.0), jnp.float32(1.0)),
    "sharding": lambda: (
        jax.device_put(jnp.arange(8.0), NamedSharding(_mesh(), P("x"))),
        jax.device_put(jnp.arange(8.0), NamedSharding(_mesh(), P())),
    ),
    "memory_space": lambda: (_memory("pinned_host"), _memory("device")),
    "layout": lambda: (_layout((0, 1)), _layout((1, 0))),
    # inside shard_map only: see test_varying_manual_axes_are_part_of_the_key
    "vma": None,
    "manual_axis_type": None,
}


def test_every_attribute_of_an_array_type_has_a_case_here():
    missing = aval_attributes() - set(CASES)
    assert not missing, f"jax.typeof(...) has new attributes {sorted(missing)}: add a case to CASES"
    assert {"shape", "dtype", "weak_type"} <= aval_attributes()  # read from the right place


def _branches_on(attribute):
    """A function whose output structure and static output depend on ``attribute`` of its
    input's type, as a traced function may branch on it."""

    def f(v):
        value = str(getattr(jax.typeof(v), attribute))
        return {value: v * 1, "seen": value}

    return f


@pytest.mark.parametrize("attribute", [a for a, make in CASES.items() if make is not None])
def test_outputs_follow_the_type_of_each_call_as_equinox_s_do(attribute):
    if attribute not in aval_attributes():  # JAX 0.10.2's type has no layout: nothing to branch on
        pytest.skip(f"this JAX's array type has no {attribute!r}")
    a, b = CASES[attribute]()
    f = _branches_on(attribute)
    expected, ours = eqx.filter_jit(f), cached_filter_jit(f)
    for v in (a, b, a, b):
        assert_same(expected(v), ours(v))
    differ = jax.typeof(a) != jax.typeof(b)
    assert ours.stats["misses"] == (2 if differ else 1)  # one compiled path per type, no more


def test_the_issue_s_case_explicit_sharding():
    a, b = CASES["sharding"]()
    if jax.typeof(a) == jax.typeof(b):
        pytest.skip("this JAX keeps the sharding out of the array's type (no Explicit axes)")

    def f(v):
        return {"replicated": v} if jax.typeof(v).sharding.spec[0] is None else {"sharded": v, "extra": v + 1}

    ours = cached_filter_jit(f)
    assert [sorted(ours(v)) for v in (a, b, a)] == [
        ["extra", "sharded"],
        ["replicated"],
        ["extra", "sharded"],
    ]


def test_pinned_host_and_device_memory_get_their_own_outputs():
    host, device = _memory("pinned_host"), _memory("device")

    def f(v):  # the static output is the type's text, which names a host memory space
        return v, str(jax.typeof(v))

    expected, ours = eqx.filter_jit(f), cached_filter_jit(f)
    for v in (host, device, host):
        assert_same(expected(v), ours(v))


def test_varying_manual_axes_are_part_of_the_key():
    """Inside shard_map a value varies over a manual axis or not (its type's vma); a wrapper
    called on both, there, sees each call's own trace."""
    to_varying = getattr(jax.lax, "pcast", None)
    if to_varying is not None:
        make_varying = lambda x: to_varying(x, ("x",), to="varying")  # noqa: E731
    elif hasattr(jax.lax, "pvary"):
        make_varying = lambda x: jax.lax.pvary(x, ("x",))  # noqa: E731
    else:
        pytest.skip("this JAX has no pcast/pvary")
    mesh = _mesh()
    if hasattr(jax, "shard_map"):
        shard_map = jax.shard_map
    else:  # JAX before 0.7
        from jax.experimental.shard_map import shard_map as experimental

        def shard_map(f, *, mesh, in_specs, out_specs):
            return experimental(f, mesh, in_specs, out_specs)

    def tagged(v):
        return v, str(jax.typeof(v))  # names the varying axes: float32[8]{V:x}

    tags, types = {}, []
    for name, wrap in (("equinox", eqx.filter_jit), ("ours", cached_filter_jit)):
        wrapped, seen = wrap(tagged), []

        def body(x, wrapped=wrapped, seen=seen):
            varying = make_varying(x)
            types.append(jax.typeof(varying) != jax.typeof(x))
            for v in (varying, x, varying):
                seen.append(wrapped(v)[1])
            return x

        jax.jit(shard_map(body, mesh=mesh, in_specs=P(), out_specs=P()))(jnp.ones(8))
        tags[name] = seen
    assert tags["ours"] == tags["equinox"]
    assert len(set(tags["ours"])) == (2 if all(types) else 1)  # where JAX types the variance, it shows


def test_the_sign_of_a_zero_gets_its_own_trace_where_equinox_reuses_one():
    """A difference kept on purpose: 0.0 == -0.0 in Python, but a trace can tell them apart
    (math.copysign); Equinox reuses the first one's trace and returns its outputs."""

    def f(x, s):
        return x, math.copysign(1.0, s)

    x = jnp.ones(2)
    ours = cached_filter_jit(f)
    assert [ours(x, s)[1] for s in (0.0, -0.0, 0.0)] == [1.0, -1.0, 1.0]
    theirs = eqx.filter_jit(f)
    assert [theirs(x, s)[1] for s in (0.0, -0.0)] == [1.0, 1.0]  # Equinox 0.13.8: stale
    pmapped = cached_filter_pmap(f)
    assert [pmapped(stacked(x), s)[1] for s in (0.0, -0.0)] == [1.0, -1.0]


def test_cached_filter_pmap_keys_on_the_type_too():
    f = _branches_on("dtype")
    expected, ours = eqx.filter_pmap(f), cached_filter_pmap(f)
    for v in (jnp.ones((N, 2)), jnp.ones((N, 2), jnp.int32), jnp.asarray(np.ones((N, 2)))):
        assert_same(expected(v), ours(v))
