"""PackedState, packed_jit and packed_pmap against the unpacked step under jax.jit /
jax.pmap (eqx.filter_jit where the state has non-array leaves, which stay static): every
way a packed leaf can come back from a step is either what the reference returns or a
ValueError naming the leaf, what came back and what fits (issue 20: a traced array for a
leaf packed as a Python scalar was dropped silently; a weakly typed scalar lost its weak
type in a shared buffer). Misuse of replicate/packed_pmap names the argument. A core test:
jaxperf's public API, jax, equinox, numpy, pytest."""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from dropin_checks import N, assert_same, stacked
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from jaxperf import PackedState, cached_filter_pmap, packed_jit, packed_pmap
from jaxperf.fixes import _packed, _pmap

PACKED_AS = {
    "strong float32 (shared buffer)": lambda: jnp.float32(0.5),
    "weak float32 (own buffer)": lambda: jnp.asarray(0.5),
    "strong bfloat16": lambda: jnp.bfloat16(0.5),
    "int32": lambda: jnp.int32(3),
}
RETURNED_AS = {
    "unchanged": lambda v: v,
    "a python scalar": lambda v: 2,
    "a python float": lambda v: 2.0,
    "a weak array": lambda v: jnp.asarray(2.0),
    "a strong array of its dtype": lambda v: (v + 1).astype(v.dtype),
    "another dtype": lambda v: (v + 1).astype(jnp.float16),
    "another shape": lambda v: jnp.stack([v, v]),
}


def _fits(packed_leaf, returned):
    """The layout's contract (fixes/_packed.py): shape and dtype as packed; weakly typed only
    where the leaf was packed weakly typed (its own buffer)."""
    same = returned.shape == packed_leaf.shape and returned.dtype == packed_leaf.dtype
    return same and (packed_leaf.weak_type or not returned.weak_type)


@pytest.mark.parametrize("returned", list(RETURNED_AS))
@pytest.mark.parametrize("packed_as", list(PACKED_AS))
def test_every_way_an_array_leaf_comes_back(packed_as, returned):
    tree = {"leaf": PACKED_AS[packed_as](), "w": jnp.arange(3.0), "b": jnp.ones(2, jnp.bfloat16)}
    change = RETURNED_AS[returned]

    def step(t):
        return t["w"].sum(), {"leaf": change(t["leaf"]), "w": t["w"] * 2, "b": t["b"]}

    want_aux, want = jax.jit(step)(tree)
    state = PackedState.pack(tree)
    fn = packed_jit(step)
    if _fits(tree["leaf"], want["leaf"]):
        aux, state = fn(state)
        assert_same(want_aux, aux)
        assert_same(want, state.unpack())
        _, again = fn(state)  # and the next step sees what jax.jit's next step sees
        assert_same(jax.jit(step)(want)[1], again.unpack())
    else:
        with pytest.raises(ValueError, match=r"new state leaf \['leaf'\]=.* is not allowed: expected"):
            fn(state)


STATIC_AS = {"int": 0, "float": 0.5, "bool": True, "str": "tag", "function": jnp.tanh}
STATIC_RETURNED_AS = {
    "unchanged": lambda v: v,
    "a traced array": lambda v: jnp.asarray(v) + 1 if isinstance(v, (int, float)) else jnp.ones(()),
    "another value": lambda v: {int: 1, float: 1.5, bool: False, str: "other"}.get(type(v), jnp.sin),
    "an equal value of another type": lambda v: {int: 0.0, float: 0.5 + 0j, bool: 1}.get(type(v), v),
}


@pytest.mark.parametrize("returned", list(STATIC_RETURNED_AS))
@pytest.mark.parametrize("static_as", list(STATIC_AS))
def test_every_way_a_non_array_leaf_comes_back(static_as, returned):
    tree = {"w": jnp.ones(2), "s": STATIC_AS[static_as]}
    change = STATIC_RETURNED_AS[returned]

    def step(t):
        return t["w"].sum(), {"w": t["w"] + 1, "s": change(t["s"])}

    want_aux, want = eqx.filter_jit(step)(tree)  # non-array leaves static, as packed
    unchanged = not eqx.is_array(want["s"]) and type(want["s"]) is type(tree["s"]) and want["s"] == tree["s"]
    if unchanged:
        aux, state = packed_jit(step)(PackedState.pack(tree))
        assert_same(want_aux, aux)
        assert_same(want, state.unpack())
    else:
        with pytest.raises(ValueError, match=r"new state leaf \['s'\]=.* expected the packed non-array leaf"):
            packed_jit(step)(PackedState.pack(tree))


def test_the_issue_s_cases():
    state = PackedState.pack({"w": jnp.ones(2), "step": 0})
    with pytest.raises(
        ValueError, match=r"\['step'\].*static; to update it in the step, pack it as an array"
    ):
        packed_jit(lambda t: (0.0, {"w": t["w"], "step": jnp.asarray(t["step"]) + 1}))(state)
    tree = {"b": jnp.ones(3, jnp.bfloat16), "lr": jnp.asarray(0.1), "m": jnp.zeros(3)}

    def update(t):
        return t["m"].sum(), {"b": t["b"] - t["lr"] * t["b"], "lr": t["lr"], "m": t["m"] + 1}

    state = PackedState.pack(tree)
    assert len(state.buffers) == 3  # the weak lr has a buffer of its own
    aux, state = packed_jit(update)(state)
    assert_same(jax.jit(update)(tree), (aux, state.unpack()))


def test_empty_leaves_and_empty_trees_round_trip():
    for tree in (
        {"e": jnp.zeros((0, 3)), "w": jnp.ones(2)},
        {"e": jnp.zeros((0,))},
        {"s": "only static"},
        {},
    ):
        step = lambda t: (jnp.zeros(()), jax.tree.map(lambda a: a * 2 if eqx.is_array(a) else a, t))  # noqa: E731
        aux, state = packed_jit(step)(PackedState.pack(tree))
        assert_same(eqx.filter_jit(step)(tree), (aux, state.unpack()))
    assert PackedState.pack({}).replicate(jax.devices()[:N]).buffers == ()


def test_packing_the_same_structure_again_compiles_nothing_new():
    traces = []

    def step(t):
        traces.append(1)
        return 0.0, {"w": t["w"] + 1, "n": t["n"], "s": t["s"]}

    fn = packed_jit(step)
    state = PackedState.pack({"w": jnp.ones(2), "n": jnp.int32(0), "s": "tag"})
    for _ in range(3):
        _, state = fn(state)
        again = PackedState.pack(state.unpack())
        assert again.layout is state.layout
        state = again
    assert len(traces) == 1 and state.unpack()["w"].tolist() == [4.0, 4.0]
    neg, pos = PackedState.pack({"w": jnp.ones(1), "s": -0.0}), PackedState.pack({"w": jnp.ones(1), "s": 0.0})
    assert neg.layout is not pos.layout and math.copysign(1, neg.unpack()["s"]) == -1


def test_unhashable_non_array_leaves_pack_with_a_layout_of_their_own():
    class Unhashable:
        __hash__ = None  # type: ignore[assignment]

    u = Unhashable()
    a, b = PackedState.pack({"w": jnp.ones(2), "u": u}), PackedState.pack({"w": jnp.ones(2), "u": u})
    assert a.layout is not b.layout and b.unpack()["u"] is u


def test_replicate_and_packed_pmap_misuse_names_the_argument():
    devices = jax.devices()[:N]
    state = PackedState.pack({"w": jnp.ones(2), "b": jnp.ones(3)})
    step = lambda t: (0.0, t)  # noqa: E731
    for bad in (devices + devices, [], "cpu", [0, 1]):
        with pytest.raises(
            ValueError, match=r"devices=.* expected a non-empty sequence of distinct jax.Device"
        ):
            state.replicate(bad)
    replicated = state.replicate(devices)
    with pytest.raises(ValueError, match="replicated already"):
        replicated.replicate(devices)
    with pytest.raises(ValueError, match=r"state=PackedState.*call state.replicate\(devices\) first"):
        packed_pmap(step)(state)
    with pytest.raises(
        ValueError, match=rf"devices=.* expected as many devices \(2\) as the state has replicas \({N}\)"
    ):
        packed_pmap(step, devices=devices[:2])(replicated)
    with pytest.raises(ValueError, match=r"state=PackedState.*a replicated one goes to packed_pmap"):
        packed_jit(step, donate=False)(replicated)
    with pytest.raises(ValueError, match=r"state='dict' is not allowed: expected a PackedState"):
        packed_jit(step)({"w": jnp.ones(2)})
    with pytest.raises(ValueError, match="devices='cpu'"):
        packed_pmap(step, devices="cpu")


def sgd_step(axis_name):
    def step(tree, x):
        model, opt = tree

        def loss_fn(m):
            return jnp.mean(jax.vmap(m)(x) ** 2)

        loss, grads = eqx.filter_value_and_grad(loss_fn)(model)
        if axis_name is not None:
            grads, loss = jax.lax.pmean((grads, loss), axis_name)
        lr = opt["lr"]
        model = eqx.apply_updates(model, jax.tree.map(lambda g: -lr * g, grads))
        return loss, (model, {"lr": lr, "count": opt["count"] + 1})

    return step


def _model_and_opt():
    model = eqx.nn.MLP(4, 2, 8, 2, key=jax.random.PRNGKey(0))
    return model, {"lr": jnp.asarray(0.1), "count": jnp.int32(0)}


def test_packed_jit_trains_like_the_unpacked_step():
    tree, x = _model_and_opt(), jax.random.normal(jax.random.PRNGKey(1), (3, 4))
    fn, state, reference = packed_jit(sgd_step(None)), PackedState.pack(tree), eqx.filter_jit(sgd_step(None))
    for _ in range(2):
        want_loss, tree = reference(tree, x)
        loss, state = fn(state, x)
        assert_same(want_loss, loss)
        assert_same(eqx.filter(tree, eqx.is_array), eqx.filter(state.unpack(), eqx.is_array))


def test_packed_pmap_steps_like_the_unpacked_step_under_pmap():
    def step(t, x):
        return jax.lax.pmean(x.sum(), "i"), {"w": t["w"] * x.mean(), "lr": t["lr"] * 0.5, "n": t["n"] + 1}

    tree, x = (
        {"w": jnp.arange(3.0), "lr": jnp.asarray(0.1), "n": jnp.int32(0)},
        jnp.arange(N * 2.0).reshape(N, 2),
    )
    devices = jax.devices()[:N]
    want_aux, want = jax.pmap(step, axis_name="i", devices=devices)(stacked(tree), x)
    fn = packed_pmap(step, axis_name="i", devices=devices)
    aux, state = fn(PackedState.pack(tree).replicate(devices), x)
    assert_same(want_aux, aux)
    assert_same(want, state.unpack())
    lowered = fn.lower(PackedState.pack(tree).abstract(replicas=N), jax.ShapeDtypeStruct(x.shape, x.dtype))
    aux, _ = lowered.compile()(PackedState.pack(tree).replicate(devices), x)
    assert_same(want_aux, aux)


def test_pack_groups_by_dtype_and_weak_type_and_round_trips():
    model, opt = _model_and_opt()
    state = PackedState.pack((model, opt))
    assert [str(b.dtype) for b in state.buffers] == ["float32", "int32", "float32"]  # params, count, weak lr
    back_model, back_opt = state.unpack()
    assert_same(eqx.filter((model, opt), eqx.is_array), eqx.filter((back_model, back_opt), eqx.is_array))
    assert back_model.activation is model.activation  # non-array leaves kept in the layout
    arrays = [leaf for leaf in jax.tree.leaves((model, opt)) if eqx.is_array(leaf)]
    assert f"{len(arrays)} leaves in 3 buffers" in repr(state)


def test_sharded_leaves_cannot_be_packed():
    mesh = Mesh(np.array(jax.devices()[:N]), ("i",))
    sharded = jax.device_put(jnp.ones((N, 2)), NamedSharding(mesh, P("i")))
    with pytest.raises(ValueError, match="fully replicated"):
        PackedState.pack({"w": sharded})


def test_no_list_axes_reach_jax_pmap(monkeypatch):
    """Multi-process jax.pmap rejects list out_axes (equinox's bug there): neither path passes one."""
    calls = []
    real = jax.pmap

    def spy(fun, **kwargs):
        calls.append(kwargs)
        return real(fun, **kwargs)

    model, opt = _model_and_opt()
    for module in (_packed, _pmap):
        monkeypatch.setattr(module.jax, "pmap", spy)
    state = PackedState.pack((model, opt)).replicate(jax.devices()[:N])
    calls.clear()  # replicate's own placement
    packed_pmap(lambda t, x: (x.sum(), t), axis_name="i")(state, jnp.ones((N, 2)))
    out_axes = (None, eqx.if_array(0), 0)
    cached_filter_pmap(lambda m, x: (0.0, m, x), out_axes=out_axes)(stacked(model), jnp.ones((N, 2)))
    assert len(calls) == 2
    for kwargs in calls:
        for axes in (kwargs.get("out_axes"), kwargs.get("in_axes")):
            assert not any(
                isinstance(a, list) for a in jax.tree.leaves(axes, is_leaf=lambda a: isinstance(a, list))
            )


def test_packed_jit_takes_jax_jit_s_keyword_arguments():
    """Was: donate_argnums clashed with the state's donation, and argument names
    (static_argnames, donate_argnames) were not found: the step's own signature is read now."""

    def step(tree, x, scale):
        return x * scale, {"w": tree["w"] + scale}  # the aux can take x's buffer: x donated is x consumed

    tree, x = {"w": jnp.ones(3)}, jnp.arange(4.0)
    want = jax.jit(step, static_argnames="scale")(tree, x, 2.0)
    for kwargs in (
        {"static_argnames": "scale"},
        {"static_argnums": 2},
        {"static_argnames": ("scale",), "donate_argnames": "x", "keep_unused": True},
        {"static_argnames": "scale", "donate_argnums": 1},
    ):
        fresh, reference = jnp.arange(4.0), jnp.arange(4.0)
        jax.jit(step, **kwargs)(tree, reference, 2.0)
        state = PackedState.pack(tree)
        aux, new = packed_jit(step, **kwargs)(state, fresh, 2.0)
        assert_same(want, (aux, new.unpack()))
        assert all(b.is_deleted() for b in state.buffers)  # the state is donated as well
        assert fresh.is_deleted() is reference.is_deleted() is ("donate_arg" in str(kwargs))
    aux, new = packed_jit(step, static_argnames="scale")(PackedState.pack(tree), x, scale=2.0)
    assert_same(want, (aux, new.unpack()))


def test_pack_under_jit_packs_as_outside_it():
    """Was: a ConcretizationTypeError from reading a tracer's placement."""
    tree = {"w": jnp.arange(3.0), "b": jnp.ones(2, jnp.bfloat16), "lr": jnp.asarray(0.1), "tag": 1}
    eager = PackedState.pack(tree)
    traced = jax.jit(PackedState.pack, static_argnums=())(eqx.filter(tree, eqx.is_array))
    assert jax.tree.structure(traced.buffers) == jax.tree.structure(
        PackedState.pack(eqx.filter(tree, eqx.is_array)).buffers
    )
    assert_same(eager.unpack()["w"], traced.unpack()["w"])
    assert jax.jit(lambda t: PackedState.pack(t).unpack())(eqx.filter(tree, eqx.is_array))["lr"].weak_type
    mesh = Mesh(np.array(jax.devices()[:N]), ("i",))
    sharded = jax.device_put(jnp.ones((N, 2)), NamedSharding(mesh, P("i")))
    explicit = jax.typeof(sharded).sharding.spec == P("i")  # the sharding is in the type (Explicit axes)
    if explicit:
        with pytest.raises(ValueError, match="fully replicated"):
            jax.jit(PackedState.pack)({"w": sharded})


def test_packed_pmap_takes_jax_pmap_s_keyword_arguments():
    devices = jax.devices()[:N]

    def step(t, x):
        return jax.lax.psum(x, "i"), {"w": t["w"] + x.mean()}  # the aux can take x's buffer

    tree, x = {"w": jnp.arange(3.0)}, jnp.arange(N * 2.0).reshape(N, 2)
    want_aux, want = jax.pmap(step, axis_name="i", devices=devices, out_axes=(None, 0))(stacked(tree), x)
    for kwargs in ({"out_axes": (None, 0)}, {"out_axes": (None, 0), "in_axes": (0, 0), "donate_argnums": 1}):
        place = jax.pmap(lambda v: v, devices=devices)
        fresh, reference = place(x), place(x)
        jax.pmap(step, axis_name="i", devices=devices, **kwargs)(stacked(tree), reference)
        state = PackedState.pack(tree).replicate(devices)
        aux, new = packed_pmap(step, axis_name="i", devices=devices, **kwargs)(state, fresh)
        assert_same(want_aux, aux)
        assert_same(want, new.unpack())
        assert fresh.is_deleted() is reference.is_deleted()  # donated as jax.pmap donates it
    for name, bad in (("out_axes", (0, None)), ("out_axes", None), ("in_axes", (None, 0))):
        with pytest.raises(ValueError, match=rf"{name}=.* expected 0, or a tuple whose"):
            packed_pmap(step, axis_name="i", **{name: bad})


def test_packed_jit_on_an_explicit_mesh_steps_like_jax_jit():
    """JAX 0.12's jax.make_mesh makes Explicit axes (the sharding is in each array's type): a
    replicated state packs, keeps its sharding through a step and matches the unpacked step."""
    mesh = jax.make_mesh((N,), ("i",), devices=jax.devices()[:N])
    replicated, batch = NamedSharding(mesh, P()), NamedSharding(mesh, P("i"))
    tree = jax.device_put({"w": jnp.arange(3.0), "n": jnp.int32(0)}, replicated)
    x = jax.device_put(jnp.arange(N * 2.0), batch)

    def step(t, x):
        return x.sum(), {"w": t["w"] * 2 + x.mean(), "n": t["n"] + 1}

    want_aux, want = jax.jit(step)(tree, x)
    aux, state = packed_jit(step)(PackedState.pack(tree), x)
    assert_same(want_aux, aux)
    assert_same(want, state.unpack())
    assert all(b.sharding.is_equivalent_to(replicated, 1) for b in state.buffers)
