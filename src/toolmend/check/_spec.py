"""A tool's parameter schema made ready to check calls against: verified, closed and compiled once.

:func:`compile_parameters` refuses what cannot be checked safely, with a :class:`~toolmend.SpecError`
that names the tool and the JSON pointer:

- a ``$schema`` that is not one of the dialects toolmend bundles (draft 4, 6, 7, 2019-09,
  2020-12; none given means 2020-12): a meta-schema is never fetched or opened;
- a schema that is not valid JSON Schema of its dialect: an unknown type name, ``required``
  that is not a list, a regular expression that does not compile;
- a regular expression that needs a backtracking engine (a backreference or a lookaround):
  patterns run on RE2, in time linear in the text, so no value can stall the checker;
- a ``$ref`` that leaves the document (``https:``, ``file:``, another file's name) or names
  nothing in it: a tool spec is untrusted input, so it can make toolmend fetch or read nothing.
  Resources embedded in the document (``$id``, ``$anchor``, ``$dynamicAnchor``) are found;
- nesting deeper than :data:`MAX_SCHEMA_DEPTH`, and a ``$ref`` cycle that never descends into
  the value (``{"$ref": "#"}``), which would recurse for ever.

The schema's dialect decides its meaning (draft-07 tuple ``items: [...]``, ``dependencies``,
``$ref`` beside other keywords). Then toolmend's rules for tool calls are written into a copy of
the schema, so that the full validator and the fast path share one meaning. Each rule only
adds a finding, and only where adding one cannot turn a failure into a pass: never inside
``not``, a ``oneOf`` branch, an ``if`` or a ``contains`` that ``maxContains`` bounds.

- an object closes (a tool takes no keys it does not declare) where a value starts (the
  arguments, a property's value, an array's items ...) and some part of its schema declares
  ``properties``; the keys it takes are those that the spec's annotation rules say are evaluated
  there (``properties`` and ``patternProperties`` of every part that applies: ``allOf``, ``$ref``
  and its siblings, the ``anyOf`` / ``oneOf`` branches that match, ``if`` / ``then`` / ``else``,
  ``dependentSchemas``). A schema that sets ``additionalProperties`` or
  ``unevaluatedProperties`` itself keeps its own rule;
- an empty string is an empty value wherever a parameter's value goes, unless ``enum``,
  ``const`` or the schema's own ``default`` gives it (keyword ``x-toolmend-nonempty``);
- ``"nullable": true`` (OpenAPI) admits ``null``;
- an integer is never a float and a bool is never a number (BFCL's rules, in the type checker);
- ``null`` for an optional property counts as leaving it out.

>>> spec = compile_parameters("f", {"type": "object", "properties": {"p": {"$ref": "#/$defs/P"}},
...     "$defs": {"P": {"type": "integer"}}})
>>> spec.validator.is_valid({"p": 3}), spec.validator.is_valid({"p": 3.0}), spec.validator.is_valid({"q": 1})
(True, False, False)
>>> compile_parameters("f", {"type": "object", "properties": {"p": {"$ref": "https://x.org/s"}}})
Traceback (most recent call last):
toolmend._errors.SpecError: tool 'f': schema at /properties/p/$ref: only references inside the tool's own schema are followed (toolmend fetches nothing); got 'https://x.org/s'
>>> compile_parameters("f", {"$schema": "file:///dev/zero", "type": "object"})
Traceback (most recent call last):
toolmend._errors.SpecError: tool 'f': schema at /$schema: unknown dialect 'file:///dev/zero'; toolmend knows draft 4, 6, 7, 2019-09 and 2020-12 and fetches no meta-schema
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import urldefrag, urljoin

import re2
from jsonschema import (
    Draft4Validator,
    Draft6Validator,
    Draft7Validator,
    Draft201909Validator,
    Draft202012Validator,
    SchemaError,
    ValidationError,
    validators,
)
from jsonschema.protocols import Validator
from referencing import Registry
from referencing.exceptions import NoSuchResource, Unresolvable, Unretrievable

from toolmend._errors import SpecError
from toolmend._jsontext import depth

__all__ = [
    "CLOSED",
    "DIALECTS",
    "MAX_SCHEMA_DEPTH",
    "MAX_VALUE_DEPTH",
    "NONEMPTY",
    "CompiledSpec",
    "Missing",
    "RefValue",
    "Unexpected",
    "compile_parameters",
    "regex",
]

MAX_SCHEMA_DEPTH = 48
"""Deepest JSON nesting a tool schema may have (objects and lists both count)."""
MAX_VALUE_DEPTH = 48
"""Deepest argument a recursive schema is checked through; deeper is a finding, not a crash."""
NONEMPTY = "x-toolmend-nonempty"
CLOSED = "x-toolmend-closed"
"""Keyword toolmend writes where an object closes through composition; its value lists the
keys the schema declares (for the message), the keys taken are those evaluated."""

LATEST = "https://json-schema.org/draft/2020-12/schema"
DIALECTS: dict[str, type[Validator]] = {
    LATEST: Draft202012Validator,
    "https://json-schema.org/draft/2019-09/schema": Draft201909Validator,
    "http://json-schema.org/draft-07/schema#": Draft7Validator,
    "http://json-schema.org/draft-06/schema#": Draft6Validator,
    "http://json-schema.org/draft-04/schema#": Draft4Validator,
}
"""The dialects a tool schema may declare in ``$schema``, by their meta-schema URI (each
bundled with jsonschema, so none is ever fetched)."""
# Written either scheme, with or without the empty fragment.
_DIALECT_KEYS = {uri.split("://", 1)[1].rstrip("#"): uri for uri in DIALECTS}

# Keywords that check the value they are on, so that a reference to an earlier call's output
# (whose content is unknown until run time) only has its type checked.
_PASS_REFS = frozenset({"type", "$ref", "$dynamicRef", "$recursiveRef", "allOf", "anyOf"})
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SUBSCHEMA_ONE = (
    "additionalProperties", "unevaluatedProperties", "items", "contains", "propertyNames",
    "unevaluatedItems", "additionalItems", "not", "if", "then", "else",
)  # fmt: skip
_SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
_REFS = ("$ref", "$dynamicRef", "$recursiveRef")


class RefValue:
    """Stands for a :class:`toolmend.Ref` while validating: of the producing call's output types."""

    __slots__ = ("target", "types")

    def __init__(self, target: str, types: tuple[str, ...]) -> None:
        self.target = target
        self.types = types

    def __repr__(self) -> str:  # as the Ref it stands for, in a message about a value holding one
        return f"Ref(target={self.target!r})"

    def is_type(self, name: str) -> bool:
        return not self.types or name in self.types or (name == "number" and "integer" in self.types)


class Missing(ValidationError):
    """A required (or dependent-required) key is absent; ``key`` names it."""

    key: str = ""


class Unexpected(ValidationError):
    """A key the object does not take; ``key`` names it and ``known`` the keys it does take."""

    key: str = ""
    known: tuple[str, ...] = ()


# --- regular expressions: linear time --------------------------------------------------------

_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a refused pattern is a SpecError, not a line on stderr


class PatternError(ValueError):
    """A pattern toolmend does not run: not a regular expression, or one needing backtracking."""


# ECMA-262's long Unicode property names (``\p{Letter}``) → the short ones RE2 knows.
_CATEGORIES = {
    "Letter": "L", "Cased_Letter": "L", "Uppercase_Letter": "Lu", "Lowercase_Letter": "Ll",
    "Titlecase_Letter": "Lt", "Modifier_Letter": "Lm", "Other_Letter": "Lo", "Mark": "M",
    "Combining_Mark": "M", "Nonspacing_Mark": "Mn", "Spacing_Mark": "Mc", "Enclosing_Mark": "Me",
    "Number": "N", "Decimal_Number": "Nd", "digit": "Nd", "Letter_Number": "Nl", "Other_Number": "No",
    "Punctuation": "P", "punct": "P", "Connector_Punctuation": "Pc", "Dash_Punctuation": "Pd",
    "Open_Punctuation": "Ps", "Close_Punctuation": "Pe", "Initial_Punctuation": "Pi",
    "Final_Punctuation": "Pf", "Other_Punctuation": "Po", "Symbol": "S", "Math_Symbol": "Sm",
    "Currency_Symbol": "Sc", "Modifier_Symbol": "Sk", "Other_Symbol": "So", "Separator": "Z",
    "Space_Separator": "Zs", "Line_Separator": "Zl", "Paragraph_Separator": "Zp", "Other": "C",
    "Control": "Cc", "cntrl": "Cc", "Format": "Cf", "Surrogate": "Cs", "Private_Use": "Co",
    "Unassigned": "Cn",
}  # fmt: skip
_PROPERTY = re.compile(
    r"(?<!\\)((?:\\\\)*)\\([pP])\{(?:(?:General_Category|gc|Script|sc|Script_Extensions|scx)=)?([A-Za-z_]+)\}"
)


def _short_properties(pattern: str) -> str:
    return _PROPERTY.sub(lambda m: f"{m[1]}\\{m[2]}{{{_CATEGORIES.get(m[3], m[3])}}}", pattern)


@lru_cache(maxsize=8192)
def regex(pattern: str) -> Any:
    """``pattern`` compiled by RE2, whose matching time is linear in the text.

    RE2 has no backreferences and no lookaround (they need backtracking, which is what lets
    ``^(a+)+$`` take exponential time); such a pattern is a :class:`PatternError`. Its ``\\d``,
    ``\\w`` and ``$`` mean what they mean in ECMA-262 (ASCII digits and word characters; ``$``
    only at the very end), which JSON Schema's patterns follow.

    >>> regex("^(a+)+$").search("a" * 40 + "b") is None
    True
    """
    try:
        return re2.compile(
            _short_properties(pattern) if "\\p{" in pattern or "\\P{" in pattern else pattern,
            options=_RE2_OPTIONS,
        )
    except re2.error as exc:
        reason = (
            exc.args[0].decode(errors="replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        )
        if "perl operator" in reason or "escape sequence: \\" in reason and reason[-1:].isdigit():
            raise PatternError(
                f"{pattern!r} needs a backtracking engine ({reason}); toolmend runs patterns in "
                "linear time (RE2: no backreferences or lookaround)"
            ) from None
        raise PatternError(f"{pattern!r} is not a valid regular expression ({reason})") from None


def _search(pattern: str, text: str) -> bool:
    return regex(pattern).search(text) is not None


# --- toolmend's keyword implementations --------------------------------------------------------


def _is(kind: type | tuple[type, ...], *, not_bool: bool = False) -> Callable[[Any, Any], bool]:
    def check(_: Any, value: Any) -> bool:
        return isinstance(value, kind) and not (not_bool and isinstance(value, bool))

    return check


def _typed(name: str, inner: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    def check(checker: Any, value: Any) -> bool:
        return value.is_type(name) if isinstance(value, RefValue) else inner(checker, value)

    return check


_TYPES = {
    "integer": _is(int, not_bool=True),
    "number": _is((int, float), not_bool=True),
    "array": _is((list, tuple)),
    "object": _is(Mapping),
    "string": _is(str),
    "boolean": _is(bool),
    "null": lambda _, v: v is None,
}


def _properties(validator: Any, properties: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not isinstance(instance, Mapping):
        return
    required = schema.get("required", ())
    for key, sub in properties.items():
        if key in instance and (instance[key] is not None or key in required):
            yield from validator.descend(instance[key], sub, path=key, schema_path=key)


def _required(validator: Any, required: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if isinstance(instance, Mapping) and isinstance(required, list):
        for key in required:
            if key not in instance:
                err = Missing(f"{key!r} is a required property")
                err.key = key
                yield err


def _dependent_required(validator: Any, deps: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if isinstance(instance, Mapping):
        for key, needed in deps.items():
            for each in needed if key in instance else ():
                if each not in instance:
                    err = Missing(f"{each!r} is needed when {key!r} is given")
                    err.key = each
                    yield err


def _unexpected(keys: list[str], known: Any) -> Iterator[ValidationError]:
    for key in keys:
        err = Unexpected(f"{key!r} is not allowed")
        err.key, err.known = key, tuple(known)
        yield err


def _extra_keys(instance: Mapping[str, Any], schema: Any) -> list[str]:
    props = schema.get("properties") or {}
    patterns = [regex(p) for p in schema.get("patternProperties") or {}]
    return [k for k in instance if k not in props and not any(p.search(k) for p in patterns)]


def _additional(validator: Any, extra: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not isinstance(instance, Mapping):
        return
    keys = _extra_keys(instance, schema)
    if extra is False:
        yield from _unexpected(keys, schema.get("properties") or {})
    elif isinstance(extra, Mapping):
        for key in keys:
            yield from validator.descend(instance[key], extra, path=key)


def _pattern_properties(
    validator: Any, patterns: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not isinstance(instance, Mapping):
        return
    for pattern, sub in patterns.items():
        compiled = regex(pattern)
        for key, value in instance.items():
            if compiled.search(key) is not None:
                yield from validator.descend(value, sub, path=key, schema_path=pattern)


def _pattern(validator: Any, pattern: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if isinstance(instance, str) and not _search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _canonical(value: Any) -> Any:
    """A hashable key equal for values JSON Schema calls equal (``1 == 1.0``, ``True != 1``)."""
    if isinstance(value, bool):
        return (0, value)
    if isinstance(value, int | float):
        return (1, value)  # Python's hash and == already make 1 and 1.0 one key
    if isinstance(value, str):
        return (2, value)
    if value is None:
        return (3,)
    if isinstance(value, list | tuple):
        return (4, tuple(_canonical(v) for v in value))
    if isinstance(value, Mapping):
        return (5, frozenset((k, _canonical(v)) for k, v in value.items()))
    return (6, id(value))  # a stand-in for a reference: its content is unknown, so it is unique


def _unique(validator: Any, unique: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    # One hash per item (O(n) expected) rather than jsonschema's pairwise comparison of
    # unsortable items, which is quadratic in their number.
    if unique and isinstance(instance, list | tuple):
        seen: set[Any] = set()
        for item in instance:
            key = _canonical(item)
            if key in seen:
                yield ValidationError(f"{instance!r} has non-unique elements")
                return
            seen.add(key)


def _evaluated(validator: Any, instance: Mapping[str, Any], schema: Any, *, tested: bool = False) -> set[str]:
    """The keys of ``instance`` that ``schema`` evaluates (JSON Schema's annotation rules).

    ``tested``: a key that an ``if`` names counts even when the ``if`` fails (toolmend's
    closing rule: the tool plainly knows a key its schema tests for).
    """
    if not isinstance(schema, Mapping):
        return set()
    keys: set[str] = set()
    for keyword in _REFS:
        ref = schema.get(keyword)
        if isinstance(ref, str):
            resolved = validator._resolver.lookup(ref)
            sub = validator.evolve(schema=resolved.contents, _resolver=resolved.resolver)
            keys |= _evaluated(sub, instance, resolved.contents, tested=tested)
    props = schema.get("properties")
    if isinstance(props, Mapping):
        keys.update(k for k in instance if k in props)
    patterns = schema.get("patternProperties")
    if isinstance(patterns, Mapping):
        compiled = [regex(p) for p in patterns]
        keys.update(k for k in instance if any(p.search(k) for p in compiled))
    for keyword in ("additionalProperties", "unevaluatedProperties"):
        sub = schema.get(keyword)
        if sub is not None:
            keys.update(k for k, v in instance.items() if validator.evolve(schema=sub).is_valid(v))
    for keyword in ("dependentSchemas", "dependencies"):
        deps = schema.get(keyword)
        if isinstance(deps, Mapping):
            for key, sub in deps.items():
                if key in instance and isinstance(sub, Mapping):
                    keys |= _evaluated(validator, instance, sub, tested=tested)
    for keyword in ("allOf", "anyOf", "oneOf"):
        parts = [
            sub
            for sub in schema.get(keyword) or ()
            # Under toolmend's rule every part of an allOf declares its keys: a part that fails
            # reports its own finding.
            if (tested and keyword == "allOf") or validator.evolve(schema=sub).is_valid(instance)
        ]
        if tested and not parts and keyword != "allOf" and schema.get(keyword):
            # No branch fits: that is the finding; the keys the branches take are not extra.
            parts = list(schema[keyword])
        for sub in parts:
            keys |= _evaluated(validator, instance, sub, tested=tested)
    if "if" in schema:
        condition = schema["if"]
        if validator.evolve(schema=condition).is_valid(instance):
            keys |= _evaluated(validator, instance, condition, tested=tested)
            keys |= _evaluated(validator, instance, schema.get("then"), tested=tested)
        else:
            if tested and isinstance(condition, Mapping) and isinstance(condition.get("properties"), Mapping):
                keys.update(k for k in instance if k in condition["properties"])
            keys |= _evaluated(validator, instance, schema.get("else"), tested=tested)
    return keys


def _unevaluated(validator: Any, extra: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not isinstance(instance, Mapping):
        return
    seen = _evaluated(validator, instance, schema)
    keys = [k for k in instance if k not in seen]
    if extra is False:
        yield from _unexpected(keys, [k for k in instance if k in seen])
    else:
        for key in keys:
            yield from validator.descend(instance[key], extra, path=key)


def _closed(validator: Any, declared: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if isinstance(instance, Mapping):
        seen = _evaluated(validator, instance, schema, tested=True)
        yield from _unexpected([k for k in instance if k not in seen], declared)


def _nonempty(validator: Any, on: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if on and isinstance(instance, str) and not instance:
        yield ValidationError("is an empty string")


def _skip_refs(fn: Callable[..., Any]) -> Callable[..., Any]:
    def keyword(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        if isinstance(instance, RefValue):
            return iter(())
        return fn(validator, value, instance, schema)

    return keyword


def _tool_validator(base: type[Validator]) -> type[Validator]:
    own = dict(base.VALIDATORS)
    table: dict[str, Callable[..., Any]] = {
        **own,
        "properties": _properties,
        "required": _required,
        "additionalProperties": _additional,
        "patternProperties": _pattern_properties,
        "pattern": _pattern,
        "uniqueItems": _unique,
        NONEMPTY: _nonempty,
        CLOSED: _closed,
    }
    if "dependentRequired" in own:
        table["dependentRequired"] = _dependent_required
    if "unevaluatedProperties" in own:
        table["unevaluatedProperties"] = _unevaluated
    checker = base.TYPE_CHECKER.redefine_many({name: _typed(name, fn) for name, fn in _TYPES.items()})
    # extend() leaves the global dialect table alone: jsonschema's own classes stay the
    # validators for the meta-schema URIs.
    return validators.extend(
        base,
        validators={k: fn if k in _PASS_REFS else _skip_refs(fn) for k, fn in table.items()},
        type_checker=checker,
    )


_VALIDATORS: dict[str, type[Validator]] = {uri: _tool_validator(base) for uri, base in DIALECTS.items()}
ToolValidator: type[Validator] = _VALIDATORS[LATEST]
"""Draft 2020-12 with toolmend's rules for tool calls (see the module docs)."""


def _refuse(uri: str) -> Any:
    # Untrusted specs must not make toolmend fetch or open anything.
    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]


_LOCAL_ONLY: Registry[Any] = Registry(retrieve=_refuse)  # type: ignore[call-arg]


@dataclass(frozen=True, slots=True, eq=False)
class CompiledSpec:
    """A tool's verified schema with toolmend's rules written in, its validator and fast path."""

    schema: dict[str, Any]
    validator: Validator
    recursive: bool
    fast: Callable[[Any], bool] | None
    """Proves a call clean in any call list (a reference anywhere is left to the full check)."""
    fast_unbound: Callable[[Any], bool] | None
    """The same where no call declares outputs, so that references are not bound: then the full
    check ignores those in free-form values, and so does this test (it does not walk them)."""
    dialect: str = LATEST
    """The meta-schema URI of the schema's dialect."""


def _pointer(parts: Any) -> str:
    out = "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)
    return out or "/"


def _fail(tool: str, where: Any, message: str) -> SpecError:
    return SpecError(f"tool {tool!r}: schema at {_pointer(where)}: {message}")


Loc = tuple[str | int, ...]


def _children(node: dict[str, Any]) -> Iterator[tuple[str, Loc, Any]]:
    """The subschemas of ``node``: (keyword, relative location, subschema)."""
    for key in _SUBSCHEMA_MAPS:
        sub = node.get(key)
        if isinstance(sub, dict):
            yield from ((key, (key, k), v) for k, v in sub.items())
    deps = node.get("dependencies")
    if isinstance(deps, dict):
        yield from (
            ("dependencies", ("dependencies", k), v) for k, v in deps.items() if isinstance(v, dict | bool)
        )
    for key in _SUBSCHEMA_ONE:
        if key in node and not isinstance(node[key], list):
            yield key, (key,), node[key]
    for key in _SUBSCHEMA_LISTS:
        sub = node.get(key)
        if isinstance(sub, list):
            yield from ((key, (key, i), v) for i, v in enumerate(sub))


def _walk(schema: Any) -> Iterator[tuple[Loc, dict[str, Any]]]:
    """Every schema object in the document with its location, without recursion."""
    stack: list[tuple[Loc, Any]] = [((), schema)]
    while stack:
        loc, node = stack.pop()
        if not isinstance(node, dict):
            continue
        yield loc, node
        stack.extend(((*loc, *rel), sub) for _, rel, sub in _children(node))


def value_too_deep(value: Any) -> bool:
    return depth(value, MAX_VALUE_DEPTH) > MAX_VALUE_DEPTH


def _dialect(tool: str, schema: Mapping[str, Any], where: Loc = ()) -> str:
    """The meta-schema URI ``schema`` declares (2020-12 where it declares none)."""
    uri = schema.get("$schema", LATEST)
    if not isinstance(uri, str):
        raise _fail(tool, (*where, "$schema"), f"'$schema' must be a string, got {type(uri).__name__}")
    known = _DIALECT_KEYS.get(uri.strip().split("://", 1)[-1].rstrip("#"))
    if known is None:
        raise _fail(
            tool,
            (*where, "$schema"),
            f"unknown dialect {uri!r}; toolmend knows draft 4, 6, 7, 2019-09 and 2020-12 and fetches no meta-schema",
        )
    return known


def _meta_check(tool: str, schema: dict[str, Any], dialect: str, text: str) -> None:
    quick_ok = False
    # jsonschema-rs follows ``$schema``: it only ever sees the canonical URI of a bundled
    # meta-schema, and no document with a nested ``$schema`` at all.
    if text.count('"$schema"') <= 1:
        try:
            import jsonschema_rs
        except ImportError:  # pragma: no cover - jsonschema-rs is a dependency; the slow check stays right
            pass
        else:
            quick_ok = jsonschema_rs.meta.is_valid({**schema, "$schema": dialect})
    if not quick_ok:
        try:
            DIALECTS[dialect].check_schema(schema)
        except SchemaError as exc:
            raise _fail(tool, exc.path, exc.message) from None
    for loc, node in _walk(schema):
        # "$schema" names a dialect at the top of a resource; elsewhere it means nothing.
        is_resource = isinstance(node.get("$id"), str) or isinstance(node.get("id"), str)
        if loc and "$schema" in node and is_resource and _dialect(tool, node, loc) != dialect:
            raise _fail(tool, (*loc, "$schema"), "a tool's schema is written in one dialect throughout")
        pattern = node.get("pattern")
        regexes: list[tuple[Loc, str]] = [(("pattern",), pattern)] if isinstance(pattern, str) else []
        if isinstance(node.get("patternProperties"), dict):
            regexes += [(("patternProperties", p), p) for p in node["patternProperties"]]
        for key, text_ in regexes:
            try:
                regex(text_)
            except PatternError as exc:
                raise _fail(tool, (*loc, *key), str(exc)) from None


@dataclass(slots=True)
class _Graph:
    """Which schema applies which, found once per tool."""

    nodes: dict[int, dict[str, Any]]
    in_place: dict[int, list[tuple[str, Any]]]
    """Subschemas applied to the same value: (keyword, subschema); references resolved."""
    inside: dict[int, list[tuple[str, Any]]]
    """Subschemas applied to values inside it (a property's value, an item)."""
    any_ref: bool
    plain: bool
    """No embedded resource and no dynamic reference: every ``#/...`` means the root."""


_IN_PLACE_KEYS = frozenset(
    {"allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas", "dependencies"}
)
_INSIDE_KEYS = frozenset(
    {"properties", "patternProperties", "additionalProperties", "unevaluatedProperties", "items",
     "prefixItems", "additionalItems", "unevaluatedItems", "contains", "propertyNames"}
)  # fmt: skip


def _known_resource(resolver: Any, uri: str) -> bool:
    try:
        resolver.lookup(urldefrag(uri)[0])
    except (Unresolvable, Unretrievable, ValueError, TypeError, LookupError):
        return False
    return True


def _graph(tool: str, schema: dict[str, Any], dialect: str) -> _Graph:
    """Refuse references that leave the document or loop in place; map which schema applies which."""
    cls = _VALIDATORS[dialect]
    resolver = cls(schema, registry=_LOCAL_ONLY)._resolver  # type: ignore[attr-defined]
    id_key = "id" if dialect == "http://json-schema.org/draft-04/schema#" else "$id"
    old_refs = dialect not in (LATEST, "https://json-schema.org/draft/2019-09/schema")
    nodes: dict[int, dict[str, Any]] = {}
    in_place: dict[int, list[tuple[str, Any]]] = {}
    inside: dict[int, list[tuple[str, Any]]] = {}
    where: dict[int, Loc] = {}
    any_ref, plain = False, True
    stack: list[tuple[Loc, Any, str]] = [((), schema, "")]
    while stack:
        loc, node, base = stack.pop()
        if not isinstance(node, dict) or id(node) in nodes:
            continue
        nodes[id(node)], where[id(node)] = node, loc
        own_id = node.get(id_key)
        if isinstance(own_id, str) and not (old_refs and "$ref" in node):
            if loc and not own_id.startswith("#"):
                plain = False
            base = urldefrag(urljoin(base, own_id))[0]
        if loc and any(
            k in node for k in ("$dynamicRef", "$dynamicAnchor", "$recursiveRef", "$recursiveAnchor")
        ):
            plain = False
        edges = in_place[id(node)] = []
        deeper = inside[id(node)] = []
        for key in _REFS:
            ref = node.get(key)
            if not isinstance(ref, str):
                continue
            any_ref = True
            # As referencing reads it: a bare fragment belongs to the current resource (urljoin
            # would drop a "urn:" base).
            uri = base + ref if ref.startswith("#") else urljoin(base, ref)
            try:
                target = resolver.lookup(uri).contents
            except (Unresolvable, Unretrievable, ValueError, TypeError, LookupError):
                target = None
            if target is None and not _known_resource(resolver, uri):
                raise _fail(
                    tool,
                    (*loc, key),
                    "only references inside the tool's own schema are followed (toolmend fetches "
                    f"nothing); got {ref!r}",
                ) from None
            if target is None:
                raise _fail(tool, (*loc, key), f"{ref!r} names nothing in the tool's schema")
            edges.append(("$ref", target))
        for key, rel, sub in _children(node):
            stack.append(((*loc, *rel), sub, base))
            if old_refs and "$ref" in node:
                continue  # drafts before 2019-09 ignore every keyword beside "$ref"
            if key in _IN_PLACE_KEYS:
                edges.append((key, sub))
            elif key in _INSIDE_KEYS:
                deeper.append((key, sub))
    # A cycle of in-place applicators validates the same value for ever.
    state: dict[int, int] = {}
    for start in in_place:
        if state.get(start):
            continue
        walk = [(start, iter(in_place[start]))]
        state[start] = 1
        while walk:
            node_id, children = walk[-1]
            child = next(children, None)
            if child is None:
                state[node_id] = 2
                walk.pop()
                continue
            cid = id(child[1])
            if state.get(cid) == 1:
                raise _fail(
                    tool,
                    where.get(cid, ()),
                    "this reference loops back to itself without descending into the value",
                )
            if not state.get(cid) and cid in in_place:
                state[cid] = 1
                walk.append((cid, iter(in_place[cid])))
    return _Graph(nodes, in_place, inside, any_ref, plain)


# In-place keywords under which a stricter subschema can make the whole schema pass.
_FLIPS = frozenset({"not", "oneOf", "if"})


def _contexts(root: dict[str, Any], graph: _Graph) -> tuple[set[int], set[int], set[int]]:
    """(nodes reached where a stricter subschema only makes the whole stricter, nodes reached
    where it may not, nodes some schema applies in place)."""
    safe: set[int] = set()
    flipped: set[int] = set()
    targets: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, flips = stack.pop()
        if not isinstance(node, dict):
            continue
        seen = flipped if flips else safe
        if id(node) in seen or id(node) not in graph.nodes:
            continue
        seen.add(id(node))
        for key, sub in graph.in_place[id(node)]:
            if isinstance(sub, dict):
                targets.add(id(sub))
            stack.append((sub, flips or key in _FLIPS))
        for key, sub in graph.inside[id(node)]:
            if key == "propertyNames":
                continue  # names are strings: no object closes and no value is empty there
            stack.append((sub, flips or (key == "contains" and "maxContains" in node)))
    return safe - flipped, flipped, targets


def _closure(node: dict[str, Any], graph: _Graph) -> list[dict[str, Any]] | None:
    """The schemas that apply to the same value as ``node`` and may declare its keys (``None``
    when one of them lies outside the document, a bundled meta-schema)."""
    out: dict[int, dict[str, Any]] = {}
    stack = [node]
    while stack:
        each = stack.pop()
        if isinstance(each, bool) or id(each) in out:
            continue
        if not isinstance(each, dict) or id(each) not in graph.nodes:
            return None
        out[id(each)] = each
        stack.extend(sub for key, sub in graph.in_place[id(each)] if key != "not")
    return list(out.values())


def _allows_empty(schema: Any, graph: _Graph) -> bool:
    """Whether ``enum``, ``const`` or ``default`` in ``schema`` (in place) gives ``""``."""
    for node in _closure(schema, graph) or [schema]:
        if not isinstance(node, dict):
            continue
        if node.get("const") == "" or node.get("default") == "":
            return True
        if isinstance(node.get("enum"), list) and "" in node["enum"]:
            return True
    return False


def _types_of(node: Mapping[str, Any]) -> list[str] | None:
    t = node.get("type")
    return [t] if isinstance(t, str) else list(t) if isinstance(t, list) else None


_VALUE_SLOTS = frozenset({"properties", "additionalProperties", "items", "prefixItems", "additionalItems"})


_INERT = frozenset(
    {"$ref", "definitions", "$defs", "description", "title", "default", "examples", "$comment", "$schema"}
)


def _add(node: dict[str, Any], key: str, value: Any, old_refs: bool) -> None:
    """Set ``node[key]``; where the dialect ignores every keyword beside ``$ref`` (drafts 4 to
    7), the reference moves into an ``allOf`` first, when nothing else there asserts anything."""
    if old_refs and "$ref" in node:
        if not set(node) <= _INERT:
            return
        node["allOf"] = [{"$ref": node.pop("$ref")}]
    node[key] = value


def _prepare(schema: dict[str, Any], graph: _Graph, old_refs: bool) -> None:
    """Write toolmend's rules into ``schema`` (in place) where they can only add findings."""
    for node in graph.nodes.values():
        if node.get("nullable") is True:
            types = _types_of(node)
            if types is not None and "null" not in types:
                node["type"] = [*types, "null"]
    safe, _, targets = _contexts(schema, graph)
    starts = {id(schema)} | {id(sub) for n in safe for key, sub in graph.inside[n] if key != "propertyNames"}
    slots: list[Any] = []
    for node_id in safe:
        slots.extend(sub for key, sub in graph.inside[node_id] if key in _VALUE_SLOTS)
    # Two schemas for one value (``properties`` naming a key twice, in a schema and in its
    # ``anyOf`` branch) each see only their own keys: neither closes.
    shared: set[int] = set()
    for node_id in safe:
        parts = _closure(graph.nodes[node_id], graph) or []
        if len(parts) > 1:
            by_place: dict[Any, list[int]] = {}
            for part in parts:
                for key, sub in graph.inside[id(part)]:
                    place: Any = key if key not in ("properties", "prefixItems") else None
                    if key == "properties":
                        place = ("p", next(k for k, v in part["properties"].items() if v is sub))
                    elif key in ("prefixItems", "additionalItems", "unevaluatedItems", "contains"):
                        place = "items"
                    by_place.setdefault(place, []).append(id(sub))
            shared.update(i for ids in by_place.values() if len(ids) > 1 for i in ids)
    for node_id in starts & safe:
        node = graph.nodes[node_id]
        if (
            node_id in targets
            or node_id in shared
            or "additionalProperties" in node
            or "unevaluatedProperties" in node
        ):
            continue
        closure = _closure(node, graph)
        # Where a dynamic reference decides which schema applies, the keys it declares are
        # known only while validating: such an object stays open.
        if closure is None or any(k in part for part in closure for k in ("$dynamicRef", "$recursiveRef")):
            continue
        parts = closure
        declared = [
            k for part in parts if isinstance(part.get("properties"), dict) for k in part["properties"]
        ]
        # The tool's own parameter list closes even when it declares none (``"properties": {}``:
        # a tool without parameters). With no ``properties`` anywhere (bare ``{"type":
        # "object"}``) any keys are allowed.
        if not declared and not (node is schema and isinstance(node.get("properties"), dict)):
            continue
        if len(parts) == 1:
            _add(node, "additionalProperties", False, old_refs)
        else:
            _add(node, CLOSED, list(dict.fromkeys(declared)), old_refs)
    for slot in slots:
        if isinstance(slot, dict) and id(slot) in safe and NONEMPTY not in slot:
            types = _types_of(slot)
            if (types is None or "string" in types) and not _allows_empty(slot, graph):
                _add(slot, NONEMPTY, True, old_refs)


def _strip_dialects(schema: dict[str, Any]) -> None:
    # jsonschema picks a subschema's validator class by its "$schema" (its own classes, without
    # toolmend's rules): the dialect is settled, so the keyword goes.
    for _, node in _walk(schema):
        node.pop("$schema", None)


def compile_parameters(tool: str, parameters: Mapping[str, Any]) -> CompiledSpec:
    """Verify ``parameters`` and compile it for checking calls of ``tool`` (cached by content).

    Raises :class:`~toolmend.SpecError` naming the tool and the JSON pointer of the problem.
    """
    if depth(parameters, MAX_SCHEMA_DEPTH) > MAX_SCHEMA_DEPTH:  # before anything recursive meets it
        raise SpecError(f"tool {tool!r}: schema nested deeper than {MAX_SCHEMA_DEPTH} levels")
    try:
        key = json.dumps(parameters, default=repr)  # key order kept: messages list parameters as declared
    except (TypeError, ValueError, RecursionError):
        raise SpecError(f"tool {tool!r}: parameters are not plain JSON") from None
    return _compile(tool, key)


@lru_cache(maxsize=4096)
def _compile(tool: str, text: str) -> CompiledSpec:
    from toolmend.check._fast import build_fast_path

    original = json.loads(text)
    if not isinstance(original, dict):
        raise SpecError(f"tool {tool!r}: parameters must be a JSON object")
    dialect = _dialect(tool, original)
    _meta_check(tool, original, dialect, text)
    schema = copy.deepcopy(original)
    graph = _graph(tool, schema, dialect)
    _prepare(schema, graph, dialect not in (LATEST, "https://json-schema.org/draft/2019-09/schema"))
    _strip_dialects(schema)
    validator = _VALIDATORS[dialect](schema, registry=_LOCAL_ONLY)
    fast = build_fast_path(schema, validator, dialect) if graph.plain else (None, None)
    return CompiledSpec(schema, validator, graph.any_ref, *fast, dialect=dialect)
