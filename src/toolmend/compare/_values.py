"""Equality of argument values under three modes: exact, BFCL-compatible and fuzzy.

>>> values_equal(3, 3.0)
True
>>> values_equal(True, 1)
False
>>> values_equal("New York, NY", "newyork ny", mode="bfcl")
True
>>> values_equal("Los Angeles", "Los Angles", mode="fuzzy")
True
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, Literal

from rapidfuzz import fuzz

__all__ = ["CompareMode", "canonical_json", "normalize_bfcl_string", "values_equal"]

CompareMode = Literal["exact", "bfcl", "fuzzy"]

# BFCL's checker strips exactly these characters (and spaces) before comparing strings.
_BFCL_STRIP = re.compile(r"[ ,./\-_*^]")


def normalize_bfcl_string(s: str) -> str:
    """Normalise a string the way BFCL's AST checker does before membership tests.

    Spaces and the characters ``, . / - _ * ^`` are removed, the rest is lowercased and single
    quotes become double quotes — so ``"April 1, 2024"`` and ``"april 1 2024"`` agree, while
    ``"NYC"`` and ``"New York"`` still do not.

    >>> normalize_bfcl_string("New York, NY")
    'newyorkny'
    >>> normalize_bfcl_string("it's")
    'it"s'
    """
    return _BFCL_STRIP.sub("", s).lower().replace("'", '"')


def _is_number(x: Any) -> bool:
    # bool is an int subclass in Python, but True is not the number 1 for a tool argument.
    return isinstance(x, int | float) and not isinstance(x, bool)


def values_equal(
    a: Any,
    b: Any,
    mode: CompareMode = "exact",
    *,
    threshold: float = 0.9,
    rel_tol: float = 1e-6,
) -> bool:
    """Whether two argument values agree, recursively over lists and dicts.

    - ``exact``: canonical equality. ``3 == 3.0``, but a bool never equals a number and a
      string never equals a number; lists compare in order, dicts by key set and values.
    - ``bfcl``: as BFCL's checker — strings (also inside lists and dict values) are compared
      after :func:`normalize_bfcl_string`; numbers by Python ``==`` with no tolerance.
    - ``fuzzy``: strings match when rapidfuzz's normalised ``ratio`` of the case-folded,
      stripped strings is at least ``threshold``; numbers (and numeric strings against
      numbers) match within relative tolerance ``rel_tol``.

    >>> values_equal([1, "a"], [1.0, "a"])
    True
    >>> values_equal({"unit": "celsius"}, {"unit": "Celsius"}, mode="bfcl")
    True
    >>> values_equal(100, 100.00001, mode="fuzzy")
    True
    """
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _is_number(a) and _is_number(b):
        if mode == "fuzzy":
            return math.isclose(a, b, rel_tol=rel_tol, abs_tol=0.0) or a == b
        return bool(a == b)
    if isinstance(a, str) and isinstance(b, str):
        if a == b:
            return True
        if mode == "bfcl":
            return normalize_bfcl_string(a) == normalize_bfcl_string(b)
        if mode == "fuzzy":
            return fuzz.ratio(a.strip().casefold(), b.strip().casefold()) / 100.0 >= threshold
        return False
    if mode == "fuzzy" and (_is_number(a) and isinstance(b, str) or _is_number(b) and isinstance(a, str)):
        num, text = (a, b) if _is_number(a) else (b, a)
        try:
            parsed = float(text.strip())
        except ValueError:
            return False
        return math.isclose(num, parsed, rel_tol=rel_tol, abs_tol=0.0) or num == parsed
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(
            values_equal(x, y, mode, threshold=threshold, rel_tol=rel_tol) for x, y in zip(a, b, strict=True)
        )
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(
            values_equal(a[k], b[k], mode, threshold=threshold, rel_tol=rel_tol) for k in a
        )
    if isinstance(a, list | tuple | Mapping | str) or isinstance(b, list | tuple | Mapping | str):
        return False
    # None, Ref and anything else: plain equality (Ref is a frozen model, equal by target).
    return bool(a == b)


def _normalise(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, str | int):
        return value
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer():
            return int(value)
        return value
    if isinstance(value, dict):
        return {str(k): _normalise(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_normalise(v) for v in value]
    return value


def canonical_json(value: Any) -> str:
    """Canonical JSON text of a value, for comparing and counting values as hashable keys:
    sorted keys, integral floats as ints (``1.0`` → ``1``), bools kept apart from numbers,
    tuples as lists, anything else through ``str``.

    >>> canonical_json({"b": [1.0, True], "a": None})
    '{"a": null, "b": [1, true]}'
    >>> canonical_json(1) == canonical_json(1.0), canonical_json(1) == canonical_json(True)
    (True, False)
    """
    return json.dumps(_normalise(value), sort_keys=True, ensure_ascii=False, default=str)
