"""The proposed change to Equinox: ``eqx.filter_jit`` blocks only when its function checks errors.

Equinox 0.13.8's ``_filter_jit_cache`` makes every compiled call also return
``marker = jnp.array(0)``, and ``_call`` waits for that marker (``block_until_ready``)
before returning, so that a failing ``eqx.error_if`` raises inside ``filter_jit``'s
``try`` with Equinox's readable message. The wait is unconditional: a function with no
error check waits too, and a training loop can never run ahead of its steps.

Equinox knows at trace time whether the function has a check: ``eqx.error_if`` traces
``_error`` (in ``raise`` or ``breakpoint`` mode), and an inner ``filter_jit`` called
while tracing an outer one returns its marker as a tracer. The change (:data:`CHANGES`)
counts both while tracing the function, and returns ``marker = None`` when the count did
not move; ``_call``'s existing ``isinstance(marker, jax.Array)`` test then skips the wait.
A function with a check still waits, and raises as before, at the call.

Not covered: a check inside a plain ``jax.jit`` function whose trace JAX had already
cached from an earlier, separate trace (its ``_error`` is not traced again). That
function then runs ahead, and its error surfaces at the next synchronisation as JAX's
own ``JaxRuntimeError``, as with ``jax.jit`` today.

:func:`fixed_filter_jit` shows the change working, in this process only: it recompiles
Equinox's own ``_call`` and ``_filter_jit_cache`` from their installed source with
:data:`CHANGES` applied (under new names, in ``equinox._jit``'s namespace, so they read
its globals, ``last_error_info`` included), and swaps them, a counting ``_error`` and an
``eqx.error_if`` filter_jit built by the changed cache into Equinox around each call; an
unpatched ``eqx.filter_jit`` elsewhere in the process stays as shipped.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import inspect
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ... import private_api

COUNTER = "_error_checks_traced"
SUFFIX = "_jaxperf_fixed"

#: (function, Equinox 0.13.8 text, replacement): the whole change, in equinox/_jit.py and equinox/_errors.py
CHANGES: tuple[tuple[str, str, str], ...] = (
    (
        "_filter_jit_cache",
        "        out = fun(*args, **kwargs)\n        dynamic_out, static_out = partition(out, is_array)\n"
        "        marker = jnp.array(0)\n",
        "        checks_before = _error_checks_traced[0]\n"
        "        out = fun(*args, **kwargs)\n        dynamic_out, static_out = partition(out, is_array)\n"
        "        # Only a function that traced an error check needs `_call` to wait for it.\n"
        "        marker = jnp.array(0) if _error_checks_traced[0] != checks_before else None\n",
    ),
    (
        "_call",
        "            # We need to include the explicit `isinstance(marker, jax.Array)` check due\n",
        "            if isinstance(marker, jax.core.Tracer):\n"
        "                # A nested filter_jit with an error check: the function tracing it has one too.\n"
        "                _error_checks_traced[0] += 1\n"
        "            # We need to include the explicit `isinstance(marker, jax.Array)` check due\n",
    ),
    (
        "_error",
        '    if on_error == "raise":\n\n        def raises(_index):\n',
        '    if on_error in ("raise", "breakpoint"):\n'
        "        _jit._error_checks_traced[0] += 1\n"
        '    if on_error == "raise":\n\n        def raises(_index):\n',
    ),
)
#: the counter's definition, added to equinox/_jit.py beside ``last_error_info``
COUNTER_LINE = "# How many error checks have been traced (read by `_filter_jit_cache` around a trace).\n_error_checks_traced = [0]\n"
_COUNTER_AFTER = "last_error_info: None | tuple[str, list[bytes | str]] = None\n"


def fixed_source(name: str) -> str:
    """The installed source of ``equinox._jit.<name>`` (``_call`` or ``_filter_jit_cache``) with
    its change applied and the function renamed ``<name>_jaxperf_fixed``. Raises RuntimeError
    when the text to change is not there (another Equinox: read its source first)."""
    jit_module, _ = private_api.equinox_jit_modules()
    source = textwrap.dedent(inspect.getsource(inspect.unwrap(getattr(jit_module, name))))
    for function, old, new in CHANGES:
        if function == name:
            if source.count(old) != 1:
                raise RuntimeError(
                    f"equinox._jit.{name} no longer contains {old.strip()!r}: the change does not apply"
                )
            source = source.replace(old, new)
    return source.replace(f"def {name}(", f"def {name}{SUFFIX}(", 1)


def fix_diff() -> str:
    """The change as a unified diff of the installed ``equinox/_jit.py`` and ``equinox/_errors.py``."""
    jit_module, errors_module = private_api.equinox_jit_modules()
    parts = []
    for module, label in ((jit_module, "equinox/_jit.py"), (errors_module, "equinox/_errors.py")):
        text = Path(inspect.getsourcefile(module) or "").read_text()
        changed = text
        if module is jit_module:
            changed = changed.replace(_COUNTER_AFTER, _COUNTER_AFTER + "\n" + COUNTER_LINE, 1)
        for function, old, new in CHANGES:
            if (function == "_error") == (module is errors_module):
                changed = changed.replace(old, new, 1)
        parts.append(
            "".join(
                difflib.unified_diff(
                    text.splitlines(keepends=True),
                    changed.splitlines(keepends=True),
                    f"a/{label}",
                    f"b/{label}",
                    n=1,
                )
            )
        )
    return "".join(parts)


@functools.cache
def _fixed() -> dict[str, Any]:
    """Equinox's ``_call`` and ``_filter_jit_cache`` recompiled with the change into
    ``equinox._jit``'s own namespace (new names; the shipped ones untouched), the counter
    there, and a counting ``_error``."""
    jit_module, errors_module = private_api.equinox_jit_modules()
    namespace = vars(jit_module)
    namespace.setdefault(COUNTER, [0])
    for name in ("_filter_jit_cache", "_call"):
        exec(compile(fixed_source(name), f"<equinox._jit.{name}, changed>", "exec"), namespace)  # noqa: S102
    original_error = errors_module._error

    def counting_error(x: Any, pred: Any, index: Any, **kwargs: Any) -> Any:
        if kwargs.get("on_error") in ("raise", "breakpoint"):
            namespace[COUNTER][0] += 1
        return original_error(x, pred, index, **kwargs)

    return {
        "_call": namespace[f"_call{SUFFIX}"],
        "_filter_jit_cache": namespace[f"_filter_jit_cache{SUFFIX}"],
        "_error": counting_error,
    }


@contextlib.contextmanager
def changed_equinox() -> Iterator[None]:
    """Equinox with the change, inside the block: ``_call``, ``_filter_jit_cache``, ``_error`` and
    ``eqx.error_if``'s own filter_jit swapped in ``equinox._jit`` and ``equinox._errors``."""
    jit_module, errors_module = private_api.equinox_jit_modules()
    fixed = _fixed()
    with private_api.equinox_attributes_replaced(
        jit_module, {"_call": fixed["_call"], "_filter_jit_cache": fixed["_filter_jit_cache"]}
    ):
        with private_api.equinox_attributes_replaced(errors_module, {"_error": fixed["_error"]}):
            checks_jit = _error_if_jit(jit_module, errors_module)
            with private_api.equinox_attributes_replaced(
                errors_module, {"branched_error_if_impl_jit": checks_jit}
            ):
                yield


_ERROR_IF_JIT: list[Any] = []


def _error_if_jit(jit_module: Any, errors_module: Any) -> Any:
    """``eqx.error_if``'s filter_jit as the changed Equinox builds it (once, inside the change).
    ``equinox._jit.filter_jit`` itself, not ``eqx.filter_jit``, which a caller may have replaced."""
    if not _ERROR_IF_JIT:
        _ERROR_IF_JIT.append(jit_module.filter_jit(errors_module.branched_error_if_impl))
    return _ERROR_IF_JIT[0]


def fixed_filter_jit(fun: Callable[..., Any] | None = None, *, donate: str = "none") -> Any:
    """``eqx.filter_jit(fun, donate=donate)`` as the changed Equinox builds and calls it (a
    decorator too). Each call enters :func:`changed_equinox`; so does ``.lower(...)``."""
    if fun is None:
        return functools.partial(fixed_filter_jit, donate=donate)
    jit_module, _ = private_api.equinox_jit_modules()
    with changed_equinox():
        wrapper = jit_module.filter_jit(fun, donate=donate)

    @functools.wraps(fun)
    def call(*args: Any, **kwargs: Any) -> Any:
        with changed_equinox():
            return wrapper(*args, **kwargs)

    def lower(*args: Any, **kwargs: Any) -> Any:
        with changed_equinox():
            return wrapper.lower(*args, **kwargs)

    call.lower = lower  # type: ignore[attr-defined]
    return call
