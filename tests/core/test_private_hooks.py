"""The private JAX/Equinox hooks the public fixes use (jaxperf.private_api.CORE_HOOKS): each
resolves on the installed versions, and outside the versions it was checked on, or with
the name gone, it refuses by name (the hook, the installed version, the checked range)
instead of failing as an AttributeError deep in a call. A core test: jaxperf's public API,
jax, equinox, pytest."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from jaxperf import private_api
from jaxperf.private_api import CHECKED, CORE_HOOKS, PrivateAPIError

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def test_the_installed_versions_are_in_the_checked_range_and_every_hook_resolves():
    for package, (oldest, newest) in CHECKED.items():
        version = private_api.installed_version(package)
        assert private_api.release(oldest) <= private_api.release(version) <= private_api.release(newest)
    for hook in CORE_HOOKS:  # each checked as importing the fixes checks it
        private_api.check_core_hook(hook)
        module = importlib.import_module(hook[0])
        assert all(hasattr(module, name) for name in hook[1:]), hook


def test_every_private_hook_of_the_fixes_is_a_core_hook():
    fixes = Path(private_api.__file__).parent / "fixes"
    used = {
        name
        for path in fixes.glob("*.py")
        for name in dir(private_api)
        if f"private_api.{name}(" in path.read_text()
    }
    assert used, "the fixes call no private_api hook: this test reads the wrong folder"
    hook_functions = {
        "equinox_array_types": private_api.EQUINOX_ARRAY_TYPES,
        "jax_broadcast_prefix": private_api.JAX_BROADCAST_PREFIX,
        "jax_trace_context": private_api.JAX_TRACE_CONTEXT,
        "jax_tracing_context": private_api.JAX_TRACING_CONTEXT,
        "jax_traceback_exclusion": private_api.JAX_TRACEBACK_EXCLUSION,
        "equinox_jit_error_message": private_api.EQUINOX_JIT_ERROR,
        "equinox_callback_log_filter": private_api.EQUINOX_JIT_ERROR,
        "equinox_error_checks": private_api.JAX_PURE_CALLBACK,
        "check_core_hook": None,
    }
    assert used <= set(hook_functions), used - set(hook_functions)
    assert {hook_functions[name] for name in used} - {None} == set(CORE_HOOKS)


@pytest.mark.skipif(not PYPROJECT.exists(), reason="runs from a checkout (reads pyproject.toml)")
def test_pyproject_states_the_checked_ranges():
    dependencies = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    jax_lo, jax_hi = CHECKED["jax"]
    eqx_lo, eqx_hi = CHECKED["equinox"]
    assert f"jax>={jax_lo},<={jax_hi}" in dependencies, dependencies
    assert f"jaxlib>={jax_lo},<={jax_hi}" in dependencies, dependencies
    assert f"equinox>={eqx_lo},<={eqx_hi}" in dependencies, dependencies
    assert {d.split("[")[0].split(">")[0].split("=")[0] for d in dependencies} == {
        "jax",
        "jaxlib",
        "equinox",
        "numpy",
    }


@pytest.mark.parametrize(
    "package, version",
    [
        ("jax", "0.4.37"),
        ("jax", "0.13.0"),
        ("jax", "0.12.1.dev20270101"),
        ("equinox", "0.13.2"),
        ("equinox", "0.14.0"),
    ],
)
def test_a_version_outside_the_checked_range_is_refused_by_name(monkeypatch, package, version):
    monkeypatch.delenv(private_api.UNCHECKED_ENV, raising=False)
    real = private_api.installed_version
    monkeypatch.setattr(private_api, "installed_version", lambda p: version if p == package else real(p))
    oldest, newest = CHECKED[package]
    hooks = [hook for hook, owner in CORE_HOOKS.items() if owner == package]
    assert hooks
    for hook in hooks:
        with pytest.raises(PrivateAPIError) as info:
            private_api.check_core_hook(hook)
        message = str(info.value)
        assert f"{hook[0]}.{hook[1]}" in message and f"the installed {package} is {version}" in message
        assert f"checked on {package} {oldest} to {newest}" in message
    # the hooks of the other package do not care
    for hook in set(CORE_HOOKS) - set(hooks):
        private_api.check_core_hook(hook)


def test_the_environment_variable_turns_the_version_refusal_into_a_warning(monkeypatch):
    monkeypatch.setattr(private_api, "installed_version", lambda p: "99.0")
    monkeypatch.setenv(private_api.UNCHECKED_ENV, "1")
    with pytest.warns(RuntimeWarning, match=r"the installed jax is 99\.0"):
        module = private_api.check_core_hook(private_api.JAX_TRACE_CONTEXT)
    assert module is importlib.import_module(private_api.JAX_TRACE_CONTEXT[0])
    monkeypatch.setenv(private_api.UNCHECKED_ENV, "0")
    with pytest.raises(PrivateAPIError):
        private_api.check_core_hook(private_api.JAX_TRACE_CONTEXT)


@pytest.mark.parametrize("hook", list(CORE_HOOKS), ids=lambda hook: ".".join(hook[:2]))
def test_a_missing_name_is_refused_by_name_even_when_unchecked_versions_are_allowed(monkeypatch, hook):
    monkeypatch.setenv(private_api.UNCHECKED_ENV, "1")
    module = importlib.import_module(hook[0])
    gone = hook[-1]
    monkeypatch.delattr(module, gone)
    package = CORE_HOOKS[hook]
    with pytest.raises(PrivateAPIError) as info:
        private_api.check_core_hook(hook)
    message = str(info.value)
    assert message.endswith(f"{package} {private_api.installed_version(package)} has no {hook[0]}.{gone}.")
    assert "checked on {} {} to {}".format(package, *CHECKED[package]) in message


def test_a_missing_module_is_refused_by_name(monkeypatch):
    hook = ("jax._src.no_such_module", "trace_context")
    monkeypatch.setitem(CORE_HOOKS, hook, "jax")
    with pytest.raises(PrivateAPIError, match=r"has no module jax\._src\.no_such_module"):
        private_api.check_core_hook(hook)


def test_a_version_that_is_not_one_is_refused():
    with pytest.raises(PrivateAPIError, match=r"version='unknown' is not allowed"):
        private_api.release("unknown")
    assert private_api.release("0.12.0.1") == (0, 12, 0, 1)
    assert private_api.release("0.13.0rc1") == (0, 13, 0)


@pytest.mark.parametrize(
    "public, module, name",
    [
        ("cached_filter_pmap", "equinox._filters", "_ARRAY_TYPES"),
        ("cached_filter_jit", "equinox._jit", "last_error_info"),
        ("cached_filter_pmap", "jax._src.tree_util", "broadcast_prefix"),
        ("cached_filter_jit", "jax._src.config", "trace_context"),
    ],
)
def test_importing_a_fix_without_its_hook_names_the_hook(public, module, name):
    # A fresh interpreter: the fix resolves its hooks when it is first imported.
    code = textwrap.dedent(
        f"""
        import importlib, equinox, jaxperf  # JAX and Equinox whole; then the hook goes
        del importlib.import_module({module!r}).{name}
        try:
            getattr(jaxperf, {public!r})
        except jaxperf.private_api.PrivateAPIError as err:
            print("refused:", err)
        """
    )
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (
        "refused: jaxperf's core uses the private" in done.stdout
        and f"has no {module}.{name}." in done.stdout
    )


def test_arrays_and_tracers_carry_their_type_as_aval():
    """The drop-ins' cache key reads ``x.aval`` (an attribute, not documented API) because
    ``jax.typeof(x)`` costs several times more per leaf; it must be the same object, for
    concrete arrays and for tracers (a JAX without it falls back to jax.typeof, slower)."""
    import jax
    import jax.numpy as jnp

    x = jnp.ones(3)
    assert x.aval is jax.typeof(x) or x.aval == jax.typeof(x)
    seen = []
    jax.jit(lambda t: seen.append(t.aval == jax.typeof(t)) or t)(x)
    assert seen == [True]
