"""The last resort of the environment: a response made up when neither the cache nor a real
tool can answer (CriticTool's "simulator response").

With a model, :class:`~toolmend.env.Environment` asks it (any ``async (tool, call) -> str``).
Without one, :func:`synthesize` builds a value that fits ``Tool.returns`` deterministically from
the call: same call, same value; every type, enum, bound, length, pattern-for-dates and required
field respected, so downstream code sees a well-formed answer.

>>> synthesize({"type": "object", "properties": {"n": {"type": "integer", "minimum": 5,
...     "maximum": 5}}, "required": ["n"]}, seed="x")
{'n': 5}
"""

from __future__ import annotations

import hashlib
import random
import re
import string
from typing import Any

__all__ = ["synthesize"]

_WORDS = ("alpha", "delta", "harbor", "maple", "orbit", "summit", "willow", "cobalt", "ember", "lumen")
_DATE_RE = re.compile(r"\\d\{4\}-\\d\{2\}-\\d\{2\}")
_TIME_RE = re.compile(r"^\^?\\d\{2\}:\\d\{2\}\$?$")


def synthesize(schema: dict[str, Any] | None, *, seed: str | int = 0) -> Any:
    """A value valid under ``schema``, the same for the same ``seed``.

    Unknown or missing schemas give a small object, so a model still sees something to parse.
    """
    rng = random.Random(int.from_bytes(hashlib.sha256(str(seed).encode()).digest()[:8], "big"))
    if not schema:
        return {"result": "ok", "id": _word(rng) + str(rng.randint(100, 999))}
    return _value(schema, rng, "value", depth=0)


def _word(rng: random.Random) -> str:
    return rng.choice(_WORDS)


def _value(schema: dict[str, Any], rng: random.Random, name: str, depth: int) -> Any:
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return rng.choice(schema["enum"])
    for key in ("anyOf", "oneOf"):
        branches = [b for b in schema.get(key, []) if isinstance(b, dict) and b.get("type") != "null"]
        if branches:
            return _value(branches[0], rng, name, depth)
    if isinstance(schema.get("allOf"), list):
        merged: dict[str, Any] = {}
        for part in schema["allOf"]:
            merged.update(part)
        return _value(merged, rng, name, depth)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind is None:
        kind = "object" if "properties" in schema else "string"
    if kind == "object":
        return _object(schema, rng, depth)
    if kind == "array":
        low = int(schema.get("minItems", 1 if depth < 2 else 0))
        high = max(low, min(int(schema.get("maxItems", low + 2)), low + 2))
        items = schema.get("items")
        item: dict[str, Any] = items if isinstance(items, dict) else {}
        return [_value(item, rng, name, depth + 1) for _ in range(rng.randint(low, high))]
    if kind == "integer":
        ilo, ihi = _bounds(schema, 0, 100)
        return rng.randint(int(ilo), int(ihi))
    if kind == "number":
        flo, fhi = _bounds(schema, 0.0, 100.0)
        return round(rng.uniform(flo, fhi), 2)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "null":
        return None
    return _string(schema, rng, name)


def _bounds(schema: dict[str, Any], low: float, high: float) -> tuple[float, float]:
    lo = float(schema.get("minimum", schema.get("exclusiveMinimum", low)))
    hi = float(schema.get("maximum", schema.get("exclusiveMaximum", max(high, lo + high))))
    if "exclusiveMinimum" in schema:
        lo += 1
    if "exclusiveMaximum" in schema:
        hi -= 1
    return lo, max(lo, hi)


def _object(schema: dict[str, Any], rng: random.Random, depth: int) -> dict[str, Any]:
    props = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    out: dict[str, Any] = {}
    for key, sub in props.items():
        # Optional fields are filled near the top, left out deeper down to keep answers small.
        if key in required or depth < 1:
            out[key] = _value(sub if isinstance(sub, dict) else {}, rng, key, depth + 1)
    return out


def _string(schema: dict[str, Any], rng: random.Random, name: str) -> str:
    pattern = str(schema.get("pattern", ""))
    fmt = schema.get("format")
    if fmt == "date" or _DATE_RE.search(pattern):
        return f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    if fmt == "date-time":
        return f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:00:00Z"
    if fmt == "time" or _TIME_RE.match(pattern):
        return f"{rng.randint(0, 23):02d}:{rng.choice((0, 15, 30, 45)):02d}"
    if fmt == "email" or "email" in name:
        return f"{_word(rng)}.{_word(rng)}@example.com"
    if name == "id" or name.endswith("_id"):
        text = f"{name[:3]}-{rng.randint(1000, 9999)}"
    else:
        text = f"{_word(rng)} {_word(rng)}"
    low = int(schema.get("minLength", 0))
    high = schema.get("maxLength")
    text = text + "".join(rng.choice(string.ascii_lowercase) for _ in range(max(0, low - len(text))))
    return text[: int(high)] if high is not None else text
