"""Every use of a private API (``jax._src``, ``equinox._*``) in jaxperf, in one place.

Each hook is a small function that imports the private name at call time, so
that importing jaxperf never depends on it, and each is pinned by
``tests/test_private_api.py``: an upgrade that moves or renames one fails there,
loudly and by name, instead of deep inside a study.

The hooks the public fixes (the core, ``pip install jaxperf``) use are listed in
:data:`CORE_HOOKS` with the package they come from, and :data:`CHECKED` holds the oldest
and newest version of each package they were checked on (``tests/test_core_envs.py`` runs
the fixes' tests, ``tests/core``, in clean environments at both ends; pyproject.toml
states the same ranges). A core hook refuses, with a :class:`PrivateAPIError` that names
the hook, the installed version and the checked range, when the installed version is
outside that range or the name is missing: at import of the fix that uses it, not as an
``AttributeError`` deep in a call. ``JAXPERF_UNCHECKED_PRIVATE_API=1`` turns the version
refusal into a warning (to try a newer JAX or Equinox); a missing name always refuses.
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
    """A private JAX or Equinox name that jaxperf's core uses is missing, or the installed
    version is outside the range the name was checked on."""


#: package -> (oldest, newest) version the core's private hooks were checked on, both
#: inclusive; pyproject.toml's dependency ranges say the same (tests/core/test_private_hooks.py)
CHECKED: dict[str, tuple[str, str]] = {
    "jax": ("0.6.0", "0.12.0.1"),
    "equinox": ("0.13.3", "0.13.8"),
}
#: the environment variable that turns a version outside :data:`CHECKED` into a warning
UNCHECKED_ENV = "JAXPERF_UNCHECKED_PRIVATE_API"


def installed_version(package: str) -> str:
    """The version of ``package`` (``"jax"`` or ``"equinox"``) that Python imports."""
    return str(importlib.import_module(package).__version__)


def release(version: str) -> tuple[int, ...]:
    """The release numbers a version starts with (``"0.12.0.1"`` -> ``(0, 12, 0, 1)``; a
    pre-release or dev suffix is dropped: ``"0.13.0.dev20260101"`` -> ``(0, 13, 0)``)."""
    found = re.match(r"\d+(?:\.\d+)*", version)
    if found is None:
        raise PrivateAPIError(f"version={version!r} is not allowed: expected a version such as '0.12.0'.")
    return tuple(int(part) for part in found.group().split("."))


def check_core_hook(hook: tuple[str, ...]) -> Any:
    """The module of core hook ``hook`` = ``(module, name, ...)`` after checking that its
    package's installed version is in :data:`CHECKED` and that every name exists."""
    module_name, *names = hook
    package = CORE_HOOKS[hook]
    oldest, newest = CHECKED[package]
    version = installed_version(package)
    where = ", ".join(f"{module_name}.{name}" for name in names)
    checked = f"checked on {package} {oldest} to {newest}"
    if not release(oldest) <= release(version) <= release(newest):
        message = (
            f"jaxperf's core uses the private {package} hook {where}, {checked}; the installed "
            f"{package} is {version}. Install {package}>={oldest},<={newest} (pyproject.toml's range), "
            f"or set {UNCHECKED_ENV}=1 to try this {package} anyway."
        )
        if os.environ.get(UNCHECKED_ENV, "") not in ("1", "true", "yes"):
            raise PrivateAPIError(message)
        warnings.warn(message, RuntimeWarning, stacklevel=3)
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise PrivateAPIError(
            f"jaxperf's core uses the private {package} hook {where}, {checked}: {package} {version} "
            f"has no module {module_name} ({err})."
        ) from None
    missing = [name for name in names if not hasattr(module, name)]
    if missing:
        raise PrivateAPIError(
            f"jaxperf's core uses the private {package} hook {where}, {checked}: {package} {version} "
            f"has no {', '.join(f'{module_name}.{name}' for name in missing)}."
        )
    return module


# --- shared harness (backend) ---------------------------------------------

JAX_BACKENDS_INITIALIZED = ("jax._src.xla_bridge", "backends_are_initialized")


def jax_backends_initialized() -> bool:
    """Whether JAX has started its backends (after which platforms and CPU device counts are fixed)."""
    module, name = JAX_BACKENDS_INITIALIZED
    return bool(getattr(importlib.import_module(module), name)())


# --- dispatch study (equinox#192) -----------------------------------------

EQUINOX_ARRAY_TYPES = ("equinox._filters", "_ARRAY_TYPES")
#: the helpers ``_PmapWrapper._call`` runs, in its order (the stage timers copy that call)
EQUINOX_PMAP_STAGE_HELPERS = (
    "_common_preprocess",
    "_named_in_axes",
    "_resolve_axes",
    "_filter_pmap_cache",
    "_postprocess",
)
JAX_BROADCAST_PREFIX = ("jax._src.tree_util", "broadcast_prefix")
JAX_TRACE_CONTEXT = ("jax._src.config", "trace_context")


def equinox_array_types() -> tuple[type, ...]:
    """The types ``eqx.is_array`` tests for (numpy arrays and scalars, ``jax.Array`` and
    JAX's literal array types), for an inline ``isinstance`` on a hot path."""
    return tuple(getattr(check_core_hook(EQUINOX_ARRAY_TYPES), EQUINOX_ARRAY_TYPES[1]))


def equinox_pmap_stage_helpers() -> dict[str, Callable[..., Any]]:
    """The private helpers of Equinox 0.13's ``_PmapWrapper._call``, by name: the dispatch
    study's stage timers call them one by one to time each stage of a filter_pmap call."""
    module = importlib.import_module("equinox._vmap_pmap")
    return {name: getattr(module, name) for name in EQUINOX_PMAP_STAGE_HELPERS}


def jax_broadcast_prefix() -> Callable[..., list[Any]]:
    """``jax._src.tree_util.broadcast_prefix``: what ``jax.pmap`` itself uses to expand an
    ``in_axes`` prefix to one axis per leaf."""
    return getattr(check_core_hook(JAX_BROADCAST_PREFIX), JAX_BROADCAST_PREFIX[1])


def jax_trace_context() -> Callable[[], Any]:
    """``jax._src.config.trace_context``: the hashable tuple of every config value that makes
    JAX retrace (x64, default device, matmul precision, ...), as JAX's own caches key on it."""
    return getattr(check_core_hook(JAX_TRACE_CONTEXT), JAX_TRACE_CONTEXT[1])


# --- public fixes: cached_filter_jit, cached_filter_pmap ------------------------

JAX_TRACEBACK_EXCLUSION = ("jax._src.traceback_util", "register_exclusion")
#: what ``eqx.filter_jit``'s ``_call`` uses to turn an ``eqx.error_if`` failure into
#: Equinox's message: the message template, the (msg, stack) the failing check left, the
#: logging filter that hides JAX's "pure_callback failed" record meanwhile
EQUINOX_JIT_ERROR = ("equinox._jit", "_on_error_msg", "last_error_info", "_FilterCallback")


#: the private hooks the public fixes use -> the package each comes from (its range: CHECKED)
CORE_HOOKS: dict[tuple[str, ...], str] = {
    EQUINOX_ARRAY_TYPES: "equinox",
    JAX_BROADCAST_PREFIX: "jax",
    JAX_TRACE_CONTEXT: "jax",
    JAX_TRACEBACK_EXCLUSION: "jax",
    EQUINOX_JIT_ERROR: "equinox",
}


def check_core_hooks() -> None:
    """Check every core hook (version and names), as importing the fixes does one by one."""
    for hook in CORE_HOOKS:
        check_core_hook(hook)


def jax_traceback_exclusion(path: str) -> None:
    """Hide the frames of the file ``path`` from JAX's filtered tracebacks and from the stack
    ``eqx.error_if`` records at trace time, as JAX and Equinox hide their own."""
    getattr(check_core_hook(JAX_TRACEBACK_EXCLUSION), JAX_TRACEBACK_EXCLUSION[1])(path)


def equinox_jit_error_message(jit_id: bytes) -> str | None:
    """The message ``eqx.filter_jit`` raises as ``EquinoxRuntimeError`` for the last failed
    ``eqx.error_if`` (None if none failed), with the stack cut, as Equinox cuts it, at the
    frame whose ``__equinox_jit_id__`` local is ``jit_id``."""
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


def equinox_callback_log_filter() -> Any:
    """A fresh ``logging.Filterer`` that drops JAX's "jax.pure_callback failed" record, which
    Equinox installs on ``jax._src.callback``'s logger while a ``filter_jit`` call runs."""
    return getattr(check_core_hook(EQUINOX_JIT_ERROR), EQUINOX_JIT_ERROR[-1])()


# --- loop study (jax#20909) -----------------------------------------------

MOSAIC_GPU_PALLAS_CALL_MODULE = "jax._src.pallas.mosaic_gpu.pallas_call"
MOSAIC_GPU_REGISTRATION = (
    "jax._src.pallas.mosaic_gpu.pallas_call_registration",
    "_emit_mosaic_gpu_custom_call",
)


def mosaic_gpu_pallas_call() -> Callable[..., Any]:
    """JAX's Mosaic GPU ``pallas_call`` shim (built on ``plgpu.kernel``).

    jax 0.12's ``pl.pallas_call`` registers no Mosaic GPU lowering rule (a
    bare AssertionError); this private module runs the same kernel body.
    """
    return importlib.import_module(MOSAIC_GPU_PALLAS_CALL_MODULE).pallas_call


@contextlib.contextmanager
def mosaic_lowering_hook(compiler: str, on_module: Callable[[Any], None]) -> Iterator[None]:
    """Call ``on_module(mlir_module)`` with the kernel module each Mosaic GPU lowering emits
    (``compiler`` must be ``"mosaic_gpu"``). Wraps the function Pallas' registration calls to
    emit the custom call (the module is only carried as bytes otherwise), for the duration;
    restored after.
    """
    if compiler != "mosaic_gpu":
        raise ValueError(f"compiler={compiler!r} is not allowed: expected 'mosaic_gpu'.")
    module_name, name = MOSAIC_GPU_REGISTRATION
    module = importlib.import_module(module_name)
    original = getattr(module, name)

    def hook(ctx: Any, args: Any, lowering_result: Any, *rest: Any, **kwargs: Any) -> Any:
        on_module(lowering_result.module)
        return original(ctx, args, lowering_result, *rest, **kwargs)

    setattr(module, name, hook)
    try:
        yield
    finally:
        setattr(module, name, original)


# --- loops tool: Triton -------------------------------------------------------

TRITON_LOWERING_MODULE = "jax._src.pallas.triton.lowering"
TRITON_LOWERING_FUNCTION = "lower_jaxpr_to_triton_module"


@contextlib.contextmanager
def triton_lowering_hook(on_module: Callable[[Any], None]) -> Iterator[None]:
    """Call ``on_module(result)`` for each module Pallas' Triton lowering builds.

    No public API returns the Triton module (the custom call carries it as
    MLIR bytecode only), so the lowering function that Pallas' registration
    calls, ``jax._src.pallas.triton.lowering.lower_jaxpr_to_triton_module``,
    is wrapped for the duration and restored after. ``result.module`` is the
    MLIR module. Needs JAX only, not the triton package.
    """
    lowering = importlib.import_module(TRITON_LOWERING_MODULE)
    original = getattr(lowering, TRITON_LOWERING_FUNCTION)

    def recording(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        on_module(result)
        return result

    setattr(lowering, TRITON_LOWERING_FUNCTION, recording)
    try:
        yield
    finally:
        setattr(lowering, TRITON_LOWERING_FUNCTION, original)


# --- runs ahead: eqx.filter_jit's per-call block (issue 21) --------------------

EQUINOX_JIT_MODULE = "equinox._jit"
EQUINOX_ERRORS_MODULE = "equinox._errors"
#: what the proposed change touches: in equinox._jit, the call and the jitted wrapper's builder;
#: in equinox._errors, the traced check and the filter_jit every eqx.error_if goes through
EQUINOX_JIT_NAMES = ("_call", "_filter_jit_cache")
EQUINOX_ERRORS_NAMES = ("_error", "branched_error_if_impl", "branched_error_if_impl_jit")


def equinox_jit_modules() -> tuple[Any, Any]:
    """The modules ``equinox._jit`` and ``equinox._errors``: ``_call`` blocks on the marker that
    ``_filter_jit_cache``'s wrapped function returns; ``_error`` is what ``eqx.error_if`` traces."""
    jit_module = importlib.import_module(EQUINOX_JIT_MODULE)
    errors_module = importlib.import_module(EQUINOX_ERRORS_MODULE)
    for module, names in ((jit_module, EQUINOX_JIT_NAMES), (errors_module, EQUINOX_ERRORS_NAMES)):
        for name in names:
            getattr(module, name)  # AttributeError here, by name, if Equinox moved it
    return jit_module, errors_module


@contextlib.contextmanager
def equinox_attributes_replaced(module: Any, replacements: dict[str, Any]) -> Iterator[None]:
    """Set ``module.<name> = value`` for each of ``replacements`` for the duration; each
    original (which must exist) is restored after, even on an error."""
    originals = {name: getattr(module, name) for name in replacements}
    for name, value in replacements.items():
        setattr(module, name, value)
    try:
        yield
    finally:
        for name, value in originals.items():
            setattr(module, name, value)
