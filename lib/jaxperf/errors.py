"""One helper for the study's input checks: errors name the parameter, the bad
value and what is allowed."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def bad_value(name: str, value: Any, allowed: str) -> ValueError:
    return ValueError(f"{name}={value!r} is not allowed: expected {allowed}.")


def check_choice(name: str, value: Any, choices: Iterable[Any]) -> Any:
    choices = tuple(choices)
    if value not in choices:
        raise bad_value(name, value, "one of " + ", ".join(repr(c) for c in choices))
    return value


def check_int(name: str, value: Any, *, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise bad_value(name, value, f"an integer >= {minimum}")
    return value


def check_ints(name: str, values: Any, *, minimum: int = 1) -> list[int]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise bad_value(name, values, f"a non-empty list of integers >= {minimum}")
    values = list(values)
    if not values:
        raise bad_value(name, values, f"a non-empty list of integers >= {minimum}")
    for v in values:
        check_int(f"{name}[...]", v, minimum=minimum)
    return values
