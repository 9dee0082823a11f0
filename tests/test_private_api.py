"""Pins every private-API hook in jaxperf.private_api (and the study's own, jaxperf_study.private_hooks):
each must still resolve on the pinned JAX/Equinox. Add a case here with every new hook."""

from __future__ import annotations

import pytest

# --- dispatch study (equinox#192) -------------------------------------------


def test_equinox_array_types_is_what_eqx_is_array_tests():
    import equinox as eqx
    import jax.numpy as jnp
    import numpy as np

    from jaxperf import private_api

    types = private_api.equinox_array_types()
    assert isinstance(types, tuple) and types
    for value in (jnp.ones(2), np.ones(2), np.float32(1.0)):
        assert isinstance(value, types) == eqx.is_array(value)
    assert not isinstance(1.0, types)


def test_equinox_pmap_stage_helpers_resolve():
    from jaxperf_study import private_hooks

    helpers = private_hooks.equinox_pmap_stage_helpers()
    assert set(helpers) == set(private_hooks.EQUINOX_PMAP_STAGE_HELPERS)
    assert all(callable(h) for h in helpers.values())
    # The stage timers copy _PmapWrapper._call: it must still read these fields.
    import equinox as eqx

    wrapper = eqx.filter_pmap(lambda x: x)
    for field in ("_fun", "_in_axes", "_out_axes", "_axis_name", "_axis_size", "_pmapkwargs"):
        assert hasattr(wrapper, field), field


def test_jax_broadcast_prefix_and_trace_context_resolve():
    import jax

    from jaxperf import private_api

    broadcast_prefix = private_api.jax_broadcast_prefix()
    assert broadcast_prefix((0, None), (1, {"a": 2, "b": 3}), is_leaf=lambda x: x is None) == [0, None, None]
    trace_context = private_api.jax_trace_context()
    before = trace_context()
    hash(before)
    with jax.enable_x64(not jax.config.jax_enable_x64):
        assert trace_context() != before  # the x64 state is part of it


# --- public fixes: cached_filter_jit, cached_filter_pmap ------------------------------


def test_jax_tracing_context_holds_the_trace_flax_compares_and_another_inside_a_trace():
    import jax
    from jax.extend.core import get_opaque_trace_state

    from jaxperf import private_api

    context = private_api.jax_tracing_context()
    top, inside = context.trace, []
    assert get_opaque_trace_state()._trace_ref is top._weakref  # what Flax's current_jax_trace wraps
    jax.jit(lambda x: inside.append(context.trace) or x)(1.0)
    assert inside[0] is not top and context.trace is top


def test_jax_traceback_exclusion_registers_the_file():
    import importlib

    from jaxperf import private_api

    module = importlib.import_module(private_api.JAX_TRACEBACK_EXCLUSION[0])
    private_api.jax_traceback_exclusion("/nowhere/excluded_by_jaxperf.py")
    assert "/nowhere/excluded_by_jaxperf.py" in module._exclude_paths


def test_equinox_jit_error_message_is_what_filter_jit_raises():
    import equinox as eqx
    import jax.numpy as jnp

    from jaxperf import private_api

    def checked(x):
        return eqx.error_if(x, x > 0, "pinned check message")

    with pytest.raises(eqx.EquinoxRuntimeError) as info:
        eqx.filter_jit(checked)(jnp.ones(()))
    message = private_api.equinox_jit_error_message(b"no such id")  # no cut: every recorded frame
    raised, tail = str(info.value), "\nequinox.EquinoxRuntimeError: pinned check message"
    assert message is not None and message.startswith("Above is the stack outside of JIT")
    assert tail in raised and message[message.index(tail) :] == raised[raised.index(tail) :]


def test_equinox_callback_log_filter_drops_jax_s_callback_failure_record():
    import logging

    from jaxperf import private_api

    log_filter = private_api.equinox_callback_log_filter()
    record = logging.LogRecord(
        "jax._src.callback", logging.ERROR, "", 0, "jax.pure_callback failed", (), None
    )
    other = logging.LogRecord("jax._src.callback", logging.ERROR, "", 0, "something else", (), None)
    assert not log_filter.filter(record) and log_filter.filter(other)


# --- Triton compile study -------------------------------------------------------


def test_triton_lowering_hook_sees_the_module_and_is_restored():
    import importlib

    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl

    from jaxperf import private_api
    from jaxperf.compilers.triton.capture import capture

    lowering = importlib.import_module(private_api.TRITON_LOWERING_MODULE)
    original = getattr(lowering, private_api.TRITON_LOWERING_FUNCTION)
    seen = []
    with private_api.triton_lowering_hook(seen.append):
        assert getattr(lowering, private_api.TRITON_LOWERING_FUNCTION) is not original

        def kernel(x_ref, o_ref):
            o_ref[...] = x_ref[...] + 1.0

        fn = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((8, 128), jnp.float32))
        # capture() installs the hook again inside; both see the one module
        captured = capture(fn, [jax.ShapeDtypeStruct((8, 128), jnp.float32)])
    assert getattr(lowering, private_api.TRITON_LOWERING_FUNCTION) is original
    assert len(seen) == 1
    assert (
        "tt.func" in seen[0].module.operation.get_asm(enable_debug_info=False) and "tt.func" in captured.ttir
    )


# --- loop study (jax#20909) -----------------------------------------------------


def test_mosaic_gpu_pallas_call_resolves():
    from jaxperf import private_api

    assert callable(private_api.mosaic_gpu_pallas_call())


def test_jax_backends_initialized_answers_a_bool():
    from jaxperf.private_api import jax_backends_initialized

    assert isinstance(jax_backends_initialized(), bool)


# --- runs ahead: eqx.filter_jit's per-call block (issue 21) --------------------


def test_equinox_jit_internals_resolve_and_are_swapped_back():
    from jaxperf import private_api
    from jaxperf_study import private_hooks

    jit_module, errors_module = private_hooks.equinox_jit_modules()
    for module, names in (
        (jit_module, private_hooks.EQUINOX_JIT_NAMES),
        (errors_module, private_hooks.EQUINOX_ERRORS_NAMES),
    ):
        for name in names:
            assert callable(getattr(module, name)), name
    original = jit_module._call
    with pytest.raises(KeyError):
        with private_api.equinox_attributes_replaced(jit_module, {"_call": len}):
            assert jit_module._call is len
            raise KeyError("restored even on an error")
    assert jit_module._call is original
    # the Equinox patch applies to the installed Equinox (else it refuses, naming the version)
    from jaxperf_study.dispatch import eqx_patch

    assert set(eqx_patch.patched_equinox().modules) == {
        "equinox._jit",
        "equinox._vmap_pmap",
    }
