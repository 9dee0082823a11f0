"""Equinox's multi-process ``filter_pmap`` bug: the repro, the cause, the fix.

Across processes (``jax.process_count() > 1``) ``jax.pmap`` turns its global
outputs back into host-local arrays in ``global_array_to_host_local_array``,
which looks the output specs up in a cache (``_get_out_shardings``, a
``util.cache``) keyed on the ``out_axes`` pytree. A list in ``out_axes`` is
unhashable: ``TypeError: unhashable type: 'list'``. One process never takes
that path, so the bug only shows on a pod or cluster.

``eqx.filter_pmap`` (0.13.8, ``equinox/_vmap_pmap.py``, ``_filter_pmap_cache``)
builds its inner ``jax.pmap`` with
``out_axes = (list(range(-max_out_size, max_out_size)), None, None)`` and
returns a matching list from the wrapped function. The proposed fix makes
both tuples (:data:`FIX`); :func:`fixed` applies it to a copy of that
function, within the study only, to show that it works.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import re
import textwrap
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import private_api
from ..paths import PROJECT_ROOT

#: (Equinox 0.13.8 line, the fix): out_axes and the wrapped function's output, tuples not lists.
FIX: tuple[tuple[str, str], ...] = (
    (
        "return _pmapd, _dynamic_nonpmapd, Static(_static_nonpmapd)",
        "return tuple(_pmapd), _dynamic_nonpmapd, Static(_static_nonpmapd)",
    ),
    (
        "out_axes = (list(range(-max_out_size, max_out_size)), None, None)",
        "out_axes = (tuple(range(-max_out_size, max_out_size)), None, None)",
    ),
)


def _cache_source() -> tuple[str, Any]:
    """The source of Equinox's ``_filter_pmap_cache`` (with its decorator) and its module globals."""
    original = private_api.equinox_pmap_cache()
    inner = inspect.unwrap(original)
    return textwrap.dedent(inspect.getsource(inner)), inner.__globals__


def fixed_source() -> str:
    """``_filter_pmap_cache``'s source with :data:`FIX` applied. Raises RuntimeError when a
    line to fix is not there (another Equinox: read its source before patching)."""
    source, _ = _cache_source()
    for old, new in FIX:
        if source.count(old) != 1:
            raise RuntimeError(
                f"equinox's _filter_pmap_cache no longer contains {old!r}: the fix does not apply"
            )
        source = source.replace(old, new)
    return source


def fix_diff() -> str:
    """The fix as a unified diff of the installed ``equinox/_vmap_pmap.py`` (file line numbers)."""
    path = inspect.getsourcefile(inspect.unwrap(private_api.equinox_pmap_cache()))
    text = Path(path).read_text()
    fixed_text = text
    for old, new in FIX:
        fixed_text = fixed_text.replace(old, new)
    return "".join(
        difflib.unified_diff(
            text.splitlines(keepends=True),
            fixed_text.splitlines(keepends=True),
            fromfile="a/equinox/_vmap_pmap.py",
            tofile="b/equinox/_vmap_pmap.py",
            n=1,
        )
    )


@functools.cache
def _fixed_cache() -> Callable[..., Any]:
    """Equinox's own ``_filter_pmap_cache``, recompiled from its fixed source in its own module's
    namespace (so it has a compile cache of its own)."""
    _, module_globals = _cache_source()
    namespace = dict(module_globals)
    exec(compile(fixed_source(), "<equinox _filter_pmap_cache, fixed>", "exec"), namespace)  # noqa: S102
    return namespace[private_api.EQUINOX_PMAP_CACHE]


def fixed(pmapped: Callable[..., Any]) -> Callable[..., Any]:
    """``pmapped`` (an ``eqx.filter_pmap``), called with the fix in place for each call only,
    so that an unpatched ``eqx.filter_pmap`` elsewhere in the same process stays as shipped."""
    replacement = _fixed_cache()

    def call(*args: Any) -> Any:
        with private_api.equinox_pmap_cache_replaced(replacement):
            return pmapped(*args)

    return call


def attempt(fn: Callable[[], Any]) -> dict[str, Any]:
    """Run ``fn``; return ``{"ok": True}`` or the error's type, message and traceback
    (:func:`traceback_text`: the library's frames only, paths relative)."""
    try:
        fn()
    except Exception as err:  # noqa: BLE001 -- the record is the point
        lines = str(err).strip().splitlines()
        return {
            "ok": False,
            "error_type": type(err).__name__,
            "error": lines[-1][:300] if lines else "",
            "traceback": traceback_text(err),
        }
    return {"ok": True}


def traceback_text(err: BaseException) -> str:
    """``err``'s traceback as a bug report wants it: from the first frame outside jaxperf
    (the study's own wrappers say nothing to Equinox), paths from ``site-packages/`` or
    from the project root, never naming a folder of this machine."""
    frames = traceback.extract_tb(err.__traceback__)
    own = str(Path(__file__).resolve().parents[1])
    kept = [f for f in frames if not str(Path(f.filename).resolve()).startswith(own)] or list(frames)
    text = "Traceback (most recent call last):\n" + "".join(traceback.format_list(kept))
    text += "".join(traceback.format_exception_only(type(err), err))
    text = re.sub(r'File "[^"]*?/site-packages/', 'File "site-packages/', text)
    return text.replace(f'File "{PROJECT_ROOT}/', 'File "')


def repro_cases() -> dict[str, Callable[[], Any]]:
    """The minimal repro, as callables to :func:`attempt` in every process of a job:
    plain ``jax.pmap`` with a list and with a tuple ``out_axes``, and ``eqx.filter_pmap``
    as shipped and fixed. Each maps over this process's local devices."""
    import equinox as eqx
    import jax
    import jax.numpy as jnp

    def ones() -> jax.Array:
        return jnp.ones((jax.local_device_count(), 3))

    def double_in_a_list(x: jax.Array) -> list[jax.Array]:
        return [x * 2]

    def double_in_a_tuple(x: jax.Array) -> tuple[jax.Array]:
        return (x * 2,)

    def double(x: jax.Array) -> jax.Array:
        return x * 2

    return {
        "jax.pmap(out_axes=[0])": lambda: jax.block_until_ready(
            jax.pmap(double_in_a_list, out_axes=[0])(ones())
        ),
        "jax.pmap(out_axes=(0,))": lambda: jax.block_until_ready(
            jax.pmap(double_in_a_tuple, out_axes=(0,))(ones())
        ),
        "eqx.filter_pmap": lambda: jax.block_until_ready(eqx.filter_pmap(double)(ones())),
        "eqx.filter_pmap, fixed": lambda: jax.block_until_ready(fixed(eqx.filter_pmap(double))(ones())),
    }


REPRO_SCRIPT = """\
# Run as 2 processes: python repro.py 0 & python repro.py 1
import sys

import equinox as eqx
import jax
import jax.numpy as jnp

port = sys.argv[2] if len(sys.argv) > 2 else "12355"
jax.config.update("jax_num_cpu_devices", 2)
jax.distributed.initialize(f"127.0.0.1:{port}", num_processes=2, process_id=int(sys.argv[1]))
x = jnp.ones((jax.local_device_count(), 3))

cases = {
    "jax.pmap, out_axes=(0,)": lambda: jax.pmap(lambda x: (x * 2,), out_axes=(0,))(x),
    "jax.pmap, out_axes=[0]": lambda: jax.pmap(lambda x: [x * 2], out_axes=[0])(x),
    "eqx.filter_pmap": lambda: eqx.filter_pmap(lambda x: x * 2)(x),
}
for name, case in cases.items():
    try:
        jax.block_until_ready(case())
        print(f"{name}: works")
    except TypeError as err:
        print(f"{name}: TypeError: {err}")  # out_axes=[0] and filter_pmap: unhashable type: 'list'
"""
