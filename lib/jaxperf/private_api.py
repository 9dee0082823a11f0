"""Every use of a private API (``jax._src``, ``equinox._*``) in jaxperf, in one place.

Each hook imports its private name at call time and is pinned by ``tests/test_private_api.py``.
The public fixes' hooks (:data:`CORE_HOOKS`) were checked on the versions in :data:`CHECKED`
(``tests/test_core_envs.py`` runs ``tests/core`` at both ends); outside them, or where the name is
missing, a core hook refuses at import of the fix (:func:`check_core_hook`;
``JAXPERF_UNCHECKED_PRIVATE_API=1`` turns the version refusal into a warning).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import re
import warnings
from collections.abc import Callable, Iterator
from typing import Any


class PrivateAPIError(ImportError):
    """A private name the core uses is missing, or its package's version is outside :data:`CHECKED`."""


#: package -> (oldest, newest) version the core's hooks were checked on, both inclusive
CHECKED: dict[str, tuple[str, str]] = {"jax": ("0.6.0", "0.12.0.1"), "equinox": ("0.13.3", "0.13.8")}
#: the environment variable that turns a version outside :data:`CHECKED` into a warning
UNCHECKED_ENV = "JAXPERF_UNCHECKED_PRIVATE_API"


def installed_version(package: str) -> str:
    """The version of ``package`` (``"jax"`` or ``"equinox"``) that Python imports."""
    return str(importlib.import_module(package).__version__)


def release(version: str) -> tuple[int, ...]:
    """The release numbers a version starts with (``"0.13.0.dev1"`` -> ``(0, 13, 0)``)."""
    found = re.match(r"\d+(?:\.\d+)*", version)
    if found is None:
        raise PrivateAPIError(f"version={version!r} is not allowed: expected a version such as '0.12.0'.")
    return tuple(int(part) for part in found.group().split("."))


def check_core_hook(hook: tuple[str, ...]) -> Any:
    """The module of core hook ``(module, name, ...)``, once its version and names are checked: a
    :class:`PrivateAPIError` names the hook, the installed version and the checked range."""
    module_name, *names = hook
    package = CORE_HOOKS[hook]
    oldest, newest = CHECKED[package]
    version = installed_version(package)
    where = ", ".join(f"{module_name}.{name}" for name in names)
    uses = (
        f"jaxperf's core uses the private {package} hook {where}, checked on {package} {oldest} to {newest}"
    )
    if not release(oldest) <= release(version) <= release(newest):
        message = (
            f"{uses}; the installed {package} is {version}. Install {package}>={oldest},<={newest} "
            f"(pyproject.toml's range), or set {UNCHECKED_ENV}=1 to try this {package} anyway."
        )
        if os.environ.get(UNCHECKED_ENV, "") not in ("1", "true", "yes"):
            raise PrivateAPIError(message)
        warnings.warn(message, RuntimeWarning, stacklevel=3)
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise PrivateAPIError(f"{uses}: {package} {version} has no module {module_name} ({err}).") from None
    missing = ", ".join(f"{module_name}.{name}" for name in names if not hasattr(module, name))
    if missing:
        raise PrivateAPIError(f"{uses}: {package} {version} has no {missing}.")
    return module


JAX_BACKENDS_INITIALIZED = ("jax._src.xla_bridge", "backends_are_initialized")


def jax_backends_initialized() -> bool:
    """Whether JAX has started its backends (after which platforms and CPU device counts are fixed)."""
    module, name = JAX_BACKENDS_INITIALIZED
    return bool(getattr(importlib.import_module(module), name)())


EQUINOX_ARRAY_TYPES = ("equinox._filters", "_ARRAY_TYPES")
JAX_BROADCAST_PREFIX = ("jax._src.tree_util", "broadcast_prefix")
JAX_TRACE_CONTEXT = ("jax._src.config", "trace_context")


def equinox_array_types() -> tuple[type, ...]:
    """The types ``eqx.is_array`` tests for, for an inline ``isinstance`` on a hot path."""
    return tuple(getattr(check_core_hook(EQUINOX_ARRAY_TYPES), EQUINOX_ARRAY_TYPES[1]))


def jax_broadcast_prefix() -> Callable[..., list[Any]]:
    """``jax._src.tree_util.broadcast_prefix``, which ``jax.pmap`` uses to expand ``in_axes``."""
    return getattr(check_core_hook(JAX_BROADCAST_PREFIX), JAX_BROADCAST_PREFIX[1])


def jax_trace_context() -> Callable[[], Any]:
    """``jax._src.config.trace_context``: the config values JAX's own caches key on."""
    return getattr(check_core_hook(JAX_TRACE_CONTEXT), JAX_TRACE_CONTEXT[1])


JAX_TRACING_CONTEXT = ("jax._src.core", "trace_ctx")


def jax_tracing_context() -> Any:
    """``jax._src.core.trace_ctx``: its ``trace`` is the current trace, which Flax's tracers read."""
    return getattr(check_core_hook(JAX_TRACING_CONTEXT), JAX_TRACING_CONTEXT[1])


JAX_TRACEBACK_EXCLUSION = ("jax._src.traceback_util", "register_exclusion")
#: what ``eqx.filter_jit`` uses for an ``eqx.error_if`` failure: the message template, the
#: (msg, stack) the check left, the filter hiding JAX's "pure_callback failed" log record
EQUINOX_JIT_ERROR = ("equinox._jit", "_on_error_msg", "last_error_info", "_FilterCallback")


#: the primitive a ``pure_callback`` (every ``eqx.error_if`` that raises) is in a jaxpr
JAX_PURE_CALLBACK = ("jax._src.callback", "pure_callback_p")
#: the private hooks the public fixes use -> the package each comes from
CORE_HOOKS: dict[tuple[str, ...], str] = {
    JAX_PURE_CALLBACK: "jax",
    EQUINOX_ARRAY_TYPES: "equinox",
    JAX_BROADCAST_PREFIX: "jax",
    JAX_TRACE_CONTEXT: "jax",
    JAX_TRACING_CONTEXT: "jax",
    JAX_TRACEBACK_EXCLUSION: "jax",
    EQUINOX_JIT_ERROR: "equinox",
}


def jax_traceback_exclusion(path: str) -> None:
    """Hide the file ``path`` from JAX's filtered tracebacks and ``eqx.error_if``'s stacks."""
    getattr(check_core_hook(JAX_TRACEBACK_EXCLUSION), JAX_TRACEBACK_EXCLUSION[1])(path)


def equinox_jit_error_message(jit_id: bytes) -> str | None:
    """The ``EquinoxRuntimeError`` message for the last failed ``eqx.error_if`` (None if none), its
    stack cut, as Equinox cuts it, at the frame whose ``__equinox_jit_id__`` is ``jit_id``."""
    _, template, info, _ = EQUINOX_JIT_ERROR
    module = check_core_hook(EQUINOX_JIT_ERROR)
    last = getattr(module, info)
    if last is None:
        return None
    msg, stack = last
    pieces: list[str] = []
    for id_or_str in stack:
        if type(id_or_str) is str:
            pieces.append(id_or_str)
        elif id_or_str == jit_id:
            break
    return getattr(module, template).format(msg=msg, stack="".join(reversed(pieces)))


def equinox_error_checks(jitted: Any, args: Any) -> bool:
    """Whether ``jitted`` (a ``jax.jit``) on ``args`` calls back to ``equinox._errors`` (holds an
    ``eqx.error_if`` that raises), read off the trace JAX keeps of its call (nothing traced again);
    True where it cannot tell (a ``pure_callback`` whose function JAX no longer names counts)."""
    callback = getattr(check_core_hook(JAX_PURE_CALLBACK), JAX_PURE_CALLBACK[1])

    def calls_back(jaxpr: Any) -> bool:
        for eqn in jaxpr.eqns:
            fn = getattr(eqn.params.get("callback"), "callback_func", None)
            if (
                eqn.primitive is callback
                and getattr(fn, "__module__", "equinox._errors") == "equinox._errors"
            ):
                return True
            values = [v for p in eqn.params.values() for v in (p if isinstance(p, (tuple, list)) else [p])]
            if any(
                calls_back(getattr(v, "jaxpr", v)) for v in values if hasattr(getattr(v, "jaxpr", v), "eqns")
            ):
                return True
        return False

    try:
        return calls_back(jitted.trace(*args).jaxpr.jaxpr)
    except Exception:  # noqa: BLE001 -- unknown: keep watching for a failure
        return True


def equinox_callback_log_filter() -> Any:
    """A fresh Equinox filter dropping JAX's "jax.pure_callback failed" log record."""
    return getattr(check_core_hook(EQUINOX_JIT_ERROR), EQUINOX_JIT_ERROR[-1])()


MOSAIC_GPU_PALLAS_CALL_MODULE = "jax._src.pallas.mosaic_gpu.pallas_call"


def mosaic_gpu_pallas_call() -> Callable[..., Any]:
    """JAX's Mosaic GPU ``pallas_call`` shim: jax 0.12's ``pl.pallas_call`` registers no Mosaic GPU
    lowering rule (a bare AssertionError); this private module runs the same kernel body."""
    return importlib.import_module(MOSAIC_GPU_PALLAS_CALL_MODULE).pallas_call


TRITON_LOWERING_MODULE = "jax._src.pallas.triton.lowering"
TRITON_LOWERING_FUNCTION = "lower_jaxpr_to_triton_module"


@contextlib.contextmanager
def triton_lowering_hook(on_module: Callable[[Any], None]) -> Iterator[None]:
    """Call ``on_module(result)`` (``result.module``: the MLIR module) for each module Pallas' Triton
    lowering builds, for the duration: no public API returns it (the custom call carries it as
    bytecode only), so Pallas' ``lower_jaxpr_to_triton_module`` is wrapped. Needs JAX, not triton."""
    lowering = importlib.import_module(TRITON_LOWERING_MODULE)
    original = getattr(lowering, TRITON_LOWERING_FUNCTION)

    def recording(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        on_module(result)
        return result

    with equinox_attributes_replaced(lowering, {TRITON_LOWERING_FUNCTION: recording}):
        yield


@contextlib.contextmanager
def equinox_attributes_replaced(module: Any, replacements: dict[str, Any]) -> Iterator[None]:
    """Set ``module.<name> = value`` for each of ``replacements`` for the duration, then restore."""
    originals = {name: getattr(module, name) for name in replacements}
    for name, value in replacements.items():
        setattr(module, name, value)
    try:
        yield
    finally:
        for name, value in originals.items():
            setattr(module, name, value)
