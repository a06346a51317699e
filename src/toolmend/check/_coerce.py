"""Safe value conversions between JSON types, used for repair and for the checker's suggestions.

A conversion is *safe* when it cannot change what the value means: ``"5"`` → ``5``,
``5.0`` → ``5``, ``"true"`` → ``True``, ``7`` → ``"7"``, a JSON-encoded list or object in a
string → the list or object, a lone value → a one-element list, a one-element list → its value.
Anything else (``"five"`` → ``5``, ``1`` → ``True``, rounding ``2.5``) is a guess and is refused.

>>> coerce("5", ("integer",))
5
>>> coerce("yes", ("boolean",)) is NO_COERCION
True
>>> coerce("Paris", ("array",))
['Paris']
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["NO_COERCION", "coerce", "json_type", "matches_type"]


class _NoCoercion:
    def __repr__(self) -> str:
        return "NO_COERCION"


NO_COERCION: Final = _NoCoercion()
"""Returned by :func:`coerce` when no safe conversion exists."""

_INT_TEXT = re.compile(r"^\s*[+-]?\d+\s*$")
_NUM_TEXT = re.compile(r"^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$")


def json_type(value: Any) -> str:
    """The JSON type name of a Python value (``bool`` is ``boolean``, never ``integer``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def matches_type(value: Any, json_type_name: str) -> bool:
    """Whether ``value`` is of the JSON type; integers count as numbers, floats never as integers
    (BFCL's rule: an int is accepted for a float, not the reverse)."""
    if json_type_name == "string":
        return isinstance(value, str)
    if json_type_name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if json_type_name == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if json_type_name == "boolean":
        return isinstance(value, bool)
    if json_type_name == "array":
        return isinstance(value, list | tuple)
    if json_type_name == "object":
        return isinstance(value, Mapping)
    if json_type_name == "null":
        return value is None
    return True


def _to(value: Any, target: str) -> Any:
    if target == "integer":
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            if _INT_TEXT.match(value):
                return int(value)
            if _NUM_TEXT.match(value):
                number = float(value)
                if math.isfinite(number) and number.is_integer():
                    return int(number)
    elif target == "number":
        if isinstance(value, str) and _NUM_TEXT.match(value):
            if _INT_TEXT.match(value):
                return int(value)
            number = float(value)
            if math.isfinite(number):
                return number
    elif target == "boolean":
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
    elif target == "string":
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
    elif target in ("array", "object"):
        if isinstance(value, str) and value.strip()[:1] in ("[", "{"):
            try:
                parsed = json.loads(value)
            except ValueError:
                parsed = None
            if matches_type(parsed, target):
                return parsed
        if target == "array" and value is not None and not isinstance(value, list | tuple | Mapping):
            return [value]
    return NO_COERCION


def coerce(value: Any, types: tuple[str, ...]) -> Any:
    """``value`` converted safely to the first of ``types`` it can become, else :data:`NO_COERCION`."""
    for target in types:
        if matches_type(value, target):
            return value
    for target in types:
        out = _to(value, target)
        if out is not NO_COERCION:
            return out
    # A scalar wrapped in a one-element list is the scalar, if the scalar fits.
    if isinstance(value, list | tuple) and len(value) == 1 and "array" not in types:
        inner = value[0]
        if not isinstance(inner, list | tuple | Mapping):
            return coerce(inner, types)
    return NO_COERCION
