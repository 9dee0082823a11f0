"""The drop-ins' contract where users read it (issue 29 item 6): ``help(...)`` states it with
an example that runs, when it helps, what differs from Equinox and the versions it was
checked on (those of ``jaxperf.private_api.CHECKED``). Each difference kept on purpose is
pinned by a test (named in DIFFERENCES). A core test: jaxperf's public API, jax, equinox, pytest."""

from __future__ import annotations

import inspect
import pydoc
import re
import textwrap
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import pytest
from dropin_checks import N

import jaxperf
from jaxperf.private_api import CHECKED

PUBLIC = ["cached_filter_jit", "cached_filter_pmap"]
#: the differences each help text states -> the test that pins it
DIFFERENCES = {
    "cached_filter_jit": {
        "EquinoxRuntimeError": "test_cached_jit_async.py::test_an_asynchronous_failure_raises_at_the_next_call_or_at_wait",
        "(``1``, ``1.0``, ``True``)": "test_cached_jit.py::test_equal_python_scalars_of_other_types_trace_apart_where_equinox_reuses_one_trace",
        "sign (``0.0``, ``-0.0``)": "test_cache_key.py::test_the_sign_of_a_zero_gets_its_own_trace_where_equinox_reuses_one",
        "``.lower`` also takes": "test_cached_jit.py::test_ahead_of_time_lower_and_compile_also_from_shape_dtype_structs",
    },
    "cached_filter_pmap": {
        "It traces once per input structure": "test_help_texts.py::test_cached_filter_pmap_traces_once_where_equinox_traces_twice",
        "(``1``, ``1.0``,": "test_cached_pmap.py::test_equal_but_different_static_leaves_do_not_share_a_cache_entry",
        "``.lower`` also takes": "test_packed.py::test_ahead_of_time_from_abstract_arrays",
    },
}


def help_text(name):
    return pydoc.render_doc(getattr(jaxperf, name), renderer=pydoc.plaintext)


@pytest.mark.parametrize("name", PUBLIC)
def test_help_states_the_contract_and_the_checked_versions(name):
    text = " ".join(help_text(name).split())
    jax_lo, jax_hi = CHECKED["jax"]
    eqx_lo, eqx_hi = CHECKED["equinox"]
    assert f"Checked on jax {jax_lo} to {jax_hi} and Equinox {eqx_lo} to {eqx_hi}" in text
    for part in ("When it helps:", "Same as Equinox:", "Where it differs, on purpose:", "eqx.Module"):
        assert part in text, part
    tests = Path(__file__).resolve().parents[1]
    for stated, pinned in DIFFERENCES[name].items():
        assert " ".join(stated.split()) in text, stated
        path, test = pinned.split("::")
        found = [p for p in (tests / "core" / path, tests / path) if p.exists()]
        assert found and f"def {test}(" in found[0].read_text(), f"{pinned} pins no test"


@pytest.mark.parametrize("name", PUBLIC)
def test_the_example_in_help_runs(name):
    doc = inspect.cleandoc(getattr(jaxperf, name).__doc__) + "\n"
    block = re.search(r"::\n\n((?:    .*\n|\n)+)", doc)
    assert block, "no example block"
    namespace: dict = {}
    exec(textwrap.dedent(block.group(1)), namespace)  # noqa: S102 -- the docstring's own example
    wrapped = namespace["step" if name == "cached_filter_jit" else "loss"]
    assert type(wrapped).__name__ == type(getattr(jaxperf, name)(lambda: 0)).__name__
    assert namespace["value"].shape in ((), (jax.local_device_count(),)) and bool(
        jnp.isfinite(namespace["value"]).all()
    )


def test_cached_filter_pmap_traces_once_where_equinox_traces_twice():
    traces = {"equinox": 0, "ours": 0}

    def counted(side):
        def f(x):
            traces[side] += 1
            return x + 1

        return f

    eqx.filter_pmap(counted("equinox"))(jnp.ones(N))
    jaxperf.cached_filter_pmap(counted("ours"))(jnp.ones(N))
    assert traces == {"equinox": 2, "ours": 1}  # Equinox: an eval_shape probe, then jax.pmap
