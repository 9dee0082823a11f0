"""A reader's step from ``package.module:factory``: what the CLI and notebook 10 call.
A factory returns ``{"step": ..., "args": (...), ...}`` or ``(step, args[, loader])``; every
way this can go wrong is a one-line :class:`FactoryError` (a ``ValueError``), with the full
traceback kept on it (``.details``) for the JSON output.
"""

from __future__ import annotations

import importlib
import inspect
import traceback
from collections.abc import Callable
from typing import Any

from ..errors import bad_value

#: what a factory's dict may hold, besides "step" and "args" ("paths": more candidate paths,
#: ``{name: builder(step, args, carry, batch_at)}``, as ``diagnose``'s ``extra_paths``)
OPTIONAL = ("loader", "carry", "batch_at", "paths")
PARAMETER = "step_factory"


class FactoryError(ValueError):
    """A factory that does not import, raises, or returns the wrong thing; ``details``: traceback."""

    def __init__(self, line: str, details: str = "") -> None:
        super().__init__(line)
        self.details = details


def _raised(spec: str, doing: str, err: BaseException, parameter: str) -> FactoryError:
    text = str(err).strip().splitlines()[0][:300] if str(err).strip() else ""
    line = f"{parameter}={spec!r}: {doing} raised {type(err).__name__}" + (f": {text}" if text else "")
    return FactoryError(line, "".join(traceback.format_exception(err)))


def load(spec: str, parameter: str = PARAMETER) -> Callable[..., Any]:
    """The function ``package.module:name`` names."""
    if not isinstance(spec, str) or spec.count(":") != 1 or not all(spec.split(":")):
        raise bad_value(parameter, spec, "'package.module:function' (a module on sys.path, then a colon)")
    module_name, name = spec.split(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as err:  # ImportError, or an error raised while importing it
        error = _raised(spec, f"importing {module_name!r}", err, parameter)
        if isinstance(err, ImportError):
            error.args = (error.args[0] + " (is its folder on sys.path, e.g. the current directory?)",)
        raise error from err
    found = getattr(module, name, None)
    if not callable(found):
        raise bad_value(parameter, spec, f"a function: {module_name!r} has no callable {name!r}")
    return found


def build(spec: str, kwargs: dict[str, Any] | None = None, parameter: str = PARAMETER) -> dict[str, Any]:
    """The factory's result for ``kwargs``: a dict with ``step``, ``args`` (a tuple) and optional keys."""
    factory = load(spec, parameter)
    try:  # the arguments are checked against the signature: a TypeError inside is the factory's own
        inspect.signature(factory).bind(**(kwargs or {}))
    except TypeError as err:
        raise FactoryError(
            str(bad_value(f"{parameter} arguments", kwargs, f"arguments {spec} accepts ({err})"))
        ) from err
    except ValueError:  # no signature to read: the call itself says
        pass
    try:
        made = factory(**(kwargs or {}))
    except Exception as err:  # noqa: BLE001 -- whatever the reader's code raises, one line
        raise _raised(spec, f"{spec.split(':')[1]}()", err, parameter) from err
    if isinstance(made, tuple) and len(made) in (2, 3):
        made = dict(zip(("step", "args", "loader"), made))
    if not isinstance(made, dict) or "step" not in made or "args" not in made:
        raise bad_value(  # a ValueError: the CLI's one line
            f"{parameter}()",
            type(made).__name__,
            'a dict with "step" and "args" (and optionally "loader", "carry", "batch_at", "paths"), '
            "or a tuple (step, args) or (step, args, loader)",
        )
    unknown = set(made) - {"step", "args", *OPTIONAL}
    if unknown:
        raise bad_value(f"{parameter}()", sorted(unknown), f"keys among step, args, {', '.join(OPTIONAL)}")
    args = made["args"]
    if not isinstance(args, (tuple, list)):
        raise bad_value(
            f"{parameter}()['args']", type(args).__name__, "a tuple of the step's positional arguments"
        )
    paths = made.get("paths")
    if paths is not None and not (isinstance(paths, dict) and all(callable(b) for b in paths.values())):
        raise bad_value(
            f"{parameter}()['paths']", paths, "a dict {name: builder(step, args, carry, batch_at)}, or None"
        )
    return {**made, "args": tuple(args)}
