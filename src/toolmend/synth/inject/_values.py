"""Wrong values of known kinds: a value of another JSON type, a value in a broken format, a
schema-valid filler, and the values the context offers to take a wrong one from.

>>> import random
>>> mistype(3, {"type": "integer"}, random.Random(0)) in ("3", 3.5)
True
>>> break_format("2025-07-25", {"type": "string", "pattern": r"^\\d{4}-\\d{2}-\\d{2}$"}, random.Random(0))[0]
'25/07/2025'
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator, Mapping
from typing import Any

from toolmend._schema import Ref, ToolCall, refs
from toolmend.check._coerce import matches_type

__all__ = [
    "break_format",
    "context_values",
    "has_ref",
    "literal_keys",
    "mistype",
    "ref_targets",
    "sample_value",
    "schema_types",
]

_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_TIME = re.compile(r"^(\d{2}):(\d{2})$")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")  # fmt: skip


def has_ref(value: Any) -> bool:
    """Whether a value holds a :class:`~toolmend.Ref` anywhere inside."""
    return next(refs(value), None) is not None


def ref_targets(value: Any) -> Iterator[str]:
    """The placeholders a value refers to (the part before any ``.path``)."""
    return (r.head for _, r in refs(value))


def schema_types(schema: Any) -> list[str]:
    """The JSON types a parameter schema declares (``[]`` = any)."""
    if not isinstance(schema, Mapping):
        return []
    t = schema.get("type")
    return [t] if isinstance(t, str) else [x for x in (t or []) if isinstance(x, str)]


def literal_keys(call: ToolCall, properties: Mapping[str, Any]) -> list[str]:
    """Keys of ``call`` given as literal values (no reference) of a declared, typed parameter."""
    return [
        k
        for k, v in call.arguments.items()
        if k in properties and schema_types(properties[k]) and v is not None and not has_ref(v)
    ]


def _fits(value: Any, types: list[str]) -> bool:
    return any(matches_type(value, t) for t in types)


def mistype(value: Any, schema: Mapping[str, Any], rng: random.Random) -> Any:
    """``value`` turned into another JSON type, the way models slip: numbers and booleans as
    strings, a list where one item is due, a serialised list or object; ``None`` when no such
    change leaves the declared types (a parameter of any type)."""
    types = schema_types(schema)
    if not types:
        return None
    options: list[Any] = []
    if isinstance(value, bool):
        options = ["true" if value else "false", int(value)]
    elif isinstance(value, int):
        options = [str(value), value + 0.5]
    elif isinstance(value, float):
        options = [str(value), [value]]
    elif isinstance(value, str):
        options = [[value], {"value": value}]
        if re.fullmatch(r"-?\d+", value.strip()):
            options.insert(0, int(value))
    elif isinstance(value, list):
        options = [json.dumps(value, default=str)]
        if len(value) == 1:
            options.insert(0, value[0])
    elif isinstance(value, Mapping):
        options = [json.dumps(value, default=str), list(value.values())]
    usable = [o for o in options if not _fits(o, types)]
    return usable[rng.randrange(len(usable))] if usable else None


def _reformat(value: str) -> list[str]:
    """Other ways of writing the same thing that a strict pattern rejects."""
    out: list[str] = []
    if m := _DATE.match(value):
        y, mo, d = m.groups()
        month = _MONTHS[int(mo) - 1] if 1 <= int(mo) <= 12 else mo
        out += [f"{d}/{mo}/{y}", f"{month} {int(d)}, {y}", f"{y}/{mo}/{d}", f"{mo}-{d}-{y}"]
    if m := _TIME.match(value):
        h, mi = int(m.group(1)), m.group(2)
        out += [f"{h % 12 or 12}:{mi} {'PM' if h >= 12 else 'AM'}", f"{h}h{mi}", f"{h:02d}{mi}"]
    if "@" in value:
        out += [value.replace("@", " at "), value.split("@", 1)[0]]
    if value.isupper():
        out.append(value.lower())
    out += [value.upper(), value.replace("/", "\\"), f"{value} ", value.replace("_", " ").title()]
    return out


def break_format(value: Any, schema: Mapping[str, Any], rng: random.Random) -> tuple[Any, str] | None:
    """A value of the right type that breaks the parameter's ``pattern``, ``enum``, bounds or
    length, and which of those it breaks; ``None`` when the schema constrains nothing of the kind."""
    if isinstance(value, str) and isinstance(schema.get("pattern"), str):
        try:
            pattern = re.compile(schema["pattern"])
        except re.error:
            pattern = None
        if pattern is not None:
            for candidate in _reformat(value):
                if candidate and pattern.search(candidate) is None:
                    return candidate, "pattern"
    enum = schema.get("enum")
    if isinstance(enum, list) and enum and not isinstance(value, bool):
        options: list[Any] = []
        if isinstance(value, str):
            options += [value.upper(), value.capitalize(), value + "s", value.replace("_", " ")]
        elif isinstance(value, int | float):
            options += [value + 1, -1]
        usable = [
            o
            for o in options
            if o not in enum and o != value and _fits(o, schema_types(schema) or ["string"])
        ]
        if usable:
            return usable[rng.randrange(len(usable))], "enum"
    if isinstance(value, int | float) and not isinstance(value, bool):
        step = 1 if isinstance(value, int) else 0.5
        for key, out_of_range in (
            ("minimum", lambda b: b - step),
            ("exclusiveMinimum", lambda b: b),
            ("maximum", lambda b: b + step),
            ("exclusiveMaximum", lambda b: b),
        ):
            bound = schema.get(key)
            if isinstance(bound, int | float) and not isinstance(bound, bool):
                wrong = out_of_range(bound)
                if "integer" in schema_types(schema):
                    wrong = (
                        int(wrong)
                        if wrong == int(wrong)
                        else int(wrong) - (1 if "min" in key.lower() else -1)
                    )
                return wrong, "range"
    if isinstance(value, str) and isinstance(schema.get("maxLength"), int):
        return value + "x" * (schema["maxLength"] - len(value) + 1), "length"
    if isinstance(value, list) and isinstance(schema.get("maxItems"), int) and value:
        return value + [value[-1]] * (schema["maxItems"] - len(value) + 1), "items"
    return None


def _sample_string(schema: Mapping[str, Any], rng: random.Random, pool: list[str]) -> str:
    pattern = schema.get("pattern")
    candidates = [*pool, "2025-07-01", "09:30", "someone@example.com", "ACME", "docs/notes.txt", "item"]
    if isinstance(pattern, str):
        try:
            compiled = re.compile(pattern)
        except re.error:
            compiled = None
        if compiled is not None:
            fitting = [c for c in candidates if compiled.search(c)]
            if fitting:
                return fitting[0] if fitting[0] in pool else rng.choice(fitting)
    lo = schema.get("minLength")
    plain = [c for c in pool if not isinstance(lo, int) or len(c) >= lo]
    return rng.choice(plain) if plain else "example"


def sample_value(schema: Any, rng: random.Random, pool: list[Any] | None = None) -> Any:
    """A value that satisfies ``schema`` (enum, const, bounds, simple patterns), preferring one
    from ``pool`` (values already in the conversation) when it fits."""
    pool = pool or []
    if not isinstance(schema, Mapping):
        return pool[0] if pool else "example"
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return rng.choice(schema["enum"])
    if schema.get("default") not in (None, "", [], {}):
        return schema["default"]
    types = schema_types(schema) or ["string"]
    kind = types[0]
    if kind in ("integer", "number"):
        lo = schema.get("minimum", schema.get("exclusiveMinimum", 1))
        hi = schema.get("maximum", schema.get("exclusiveMaximum", max(lo, 0) + 10))
        fits = [v for v in pool if matches_type(v, kind) and not isinstance(v, bool) and lo <= v <= hi]
        if fits:
            return fits[0]
        value = rng.randint(int(lo) + 1, max(int(lo) + 1, int(hi) - 1))
        return value if kind == "integer" else float(value)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "array":
        return [sample_value(schema.get("items"), rng, pool)]
    if kind == "object":
        props = schema.get("properties") or {}
        return {k: sample_value(props.get(k), rng, pool) for k in schema.get("required") or []}
    return _sample_string(schema, rng, [v for v in pool if isinstance(v, str)])


def _leaves(value: Any) -> Iterator[Any]:
    if isinstance(value, Mapping):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _leaves(v)
    elif value is not None and not isinstance(value, Ref):
        yield value


def context_values(calls: list[ToolCall], skip: tuple[int, str] | None, extra: list[Any]) -> list[Any]:
    """Literal values found elsewhere — other arguments of the calls, then ``extra`` (earlier
    outputs and responses) — in first-seen order without repeats; ``skip`` = (call, key) leaves
    out the value being replaced."""
    seen: list[Any] = []
    keys: set[str] = set()
    for i, call in enumerate(calls):
        for k, v in call.arguments.items():
            if skip == (i, k):
                continue
            for leaf in _leaves(v):
                _remember(leaf, seen, keys)
    for leaf in _leaves(extra):
        _remember(leaf, seen, keys)
    return seen


def _remember(value: Any, seen: list[Any], keys: set[str]) -> None:
    key = f"{type(value).__name__}:{value!r}"
    if key not in keys:
        keys.add(key)
        seen.append(value)
