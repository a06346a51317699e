"""A tool's parameter schema made ready to check calls against: verified, closed and compiled once.

:func:`compile_parameters` refuses what cannot be checked safely, with a :class:`~toolmend.SpecError`
that names the tool and the JSON pointer:

- a schema that is not valid JSON Schema (Draft 2020-12): an unknown type name, ``required``
  that is not a list, a regular expression that does not compile;
- a ``$ref`` that leaves the document (``https:``, ``file:``, another file's name) or names
  nothing in it: a tool spec is untrusted input, so it can make toolmend fetch or read nothing;
- nesting deeper than :data:`MAX_SCHEMA_DEPTH`, and a ``$ref`` cycle that never descends into
  the value (``{"$ref": "#"}``), which would recurse for ever.

Then it writes toolmend's rules for tool calls into a copy of the schema, so that the full
validator and the fast path share one meaning:

- an object that declares properties is closed (a tool takes no keys it does not declare)
  unless the schema opens it (``additionalProperties``, ``patternProperties``);
- an empty string is an empty value wherever a parameter's value goes, unless ``enum`` or
  ``const`` allows it (keyword ``x-toolmend-nonempty``);
- ``"nullable": true`` (OpenAPI) admits ``null``;
- an integer is never a float and a bool is never a number (BFCL's rules, in the type checker);
- ``null`` for an optional property counts as leaving it out.

>>> spec = compile_parameters("f", {"type": "object", "properties": {"p": {"$ref": "#/$defs/P"}},
...     "$defs": {"P": {"type": "integer"}}})
>>> spec.validator.is_valid({"p": 3}), spec.validator.is_valid({"p": 3.0}), spec.validator.is_valid({"q": 1})
(True, False, False)
>>> compile_parameters("f", {"type": "object", "properties": {"p": {"$ref": "https://x.org/s"}}})
Traceback (most recent call last):
toolmend._errors.SpecError: tool 'f': schema at /properties/p/$ref: only references inside the tool's own schema are followed (they start with '#'); got 'https://x.org/s'
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from jsonschema import Draft202012Validator, SchemaError, ValidationError, validators
from jsonschema._utils import find_additional_properties, find_evaluated_property_keys_by_schema
from jsonschema.protocols import Validator
from referencing import Registry
from referencing.exceptions import NoSuchResource, Unresolvable

from toolmend._errors import SpecError
from toolmend._jsontext import depth

__all__ = [
    "MAX_SCHEMA_DEPTH",
    "MAX_VALUE_DEPTH",
    "NONEMPTY",
    "CompiledSpec",
    "Missing",
    "RefValue",
    "Unexpected",
    "compile_parameters",
]

MAX_SCHEMA_DEPTH = 48
"""Deepest JSON nesting a tool schema may have (objects and lists both count)."""
MAX_VALUE_DEPTH = 48
"""Deepest argument a recursive schema is checked through; deeper is a finding, not a crash."""
NONEMPTY = "x-toolmend-nonempty"

# Keywords that check the value they are on, so that a reference to an earlier call's output
# (whose content is unknown until run time) only has its type checked.
_PASS_REFS = frozenset({"type", "$ref", "$dynamicRef", "allOf", "anyOf"})
_IN_PLACE = ("allOf", "anyOf", "oneOf")
_IN_PLACE_ONE = ("not", "if", "then", "else")
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SUBSCHEMA_ONE = (
    "additionalProperties", "unevaluatedProperties", "items", "contains", "propertyNames",
    "unevaluatedItems", "not", "if", "then", "else",
)  # fmt: skip
_SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")


_DRAFT: dict[str, Callable[..., Any]] = dict(Draft202012Validator.VALIDATORS)


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
_TYPE_CHECKER = Draft202012Validator.TYPE_CHECKER.redefine_many(
    {name: _typed(name, fn) for name, fn in _TYPES.items()}
)


def _properties(validator: Any, properties: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not isinstance(instance, Mapping):
        return
    required = schema.get("required", ())
    for key, sub in properties.items():
        if key in instance and (instance[key] is not None or key in required):
            yield from validator.descend(instance[key], sub, path=key, schema_path=key)


def _required(validator: Any, required: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if isinstance(instance, Mapping):
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


def _additional(validator: Any, extra: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not isinstance(instance, Mapping):
        return
    if extra is False:
        keys = list(find_additional_properties(instance, schema))
        yield from _unexpected(keys, schema.get("properties") or {})
    else:
        yield from _DRAFT["additionalProperties"](validator, extra, instance, schema)


def _unevaluated(validator: Any, extra: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not isinstance(instance, Mapping):
        return
    if extra is False:
        seen = find_evaluated_property_keys_by_schema(validator, instance, schema)
        yield from _unexpected([k for k in instance if k not in seen], seen)
    else:
        yield from _DRAFT["unevaluatedProperties"](validator, extra, instance, schema)


def _nonempty(validator: Any, on: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if on and isinstance(instance, str) and not instance:
        yield ValidationError("is an empty string")


def _skip_refs(fn: Callable[..., Any]) -> Callable[..., Any]:
    def keyword(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        if isinstance(instance, RefValue):
            return iter(())
        return fn(validator, value, instance, schema)

    return keyword


_KEYWORDS: dict[str, Callable[..., Any]] = {
    **_DRAFT,
    "properties": _properties,
    "required": _required,
    "dependentRequired": _dependent_required,
    "additionalProperties": _additional,
    "unevaluatedProperties": _unevaluated,
    NONEMPTY: _nonempty,
}
# extend() leaves the global dialect table alone: jsonschema's own Draft202012Validator stays the
# validator for the 2020-12 meta-schema URI.
ToolValidator: type[Validator] = validators.extend(
    Draft202012Validator,
    validators={k: fn if k in _PASS_REFS else _skip_refs(fn) for k, fn in _KEYWORDS.items()},
    type_checker=_TYPE_CHECKER,
)
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


def _pointer(parts: Any) -> str:
    out = "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)
    return out or "/"


def _fail(tool: str, where: Any, message: str) -> SpecError:
    return SpecError(f"tool {tool!r}: schema at {_pointer(where)}: {message}")


def _walk(schema: Any) -> Iterator[tuple[tuple[str | int, ...], dict[str, Any]]]:
    """Every schema object in the document with its location, without recursion."""
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), schema)]
    while stack:
        loc, node = stack.pop()
        if not isinstance(node, dict):
            continue
        yield loc, node
        for key in _SUBSCHEMA_MAPS:
            sub = node.get(key)
            if isinstance(sub, dict):
                stack.extend(((*loc, key, k), v) for k, v in sub.items())
        for key in _SUBSCHEMA_ONE:
            if key in node:
                stack.append(((*loc, key), node[key]))
        for key in _SUBSCHEMA_LISTS:
            sub = node.get(key)
            if isinstance(sub, list):
                stack.extend(((*loc, key, i), v) for i, v in enumerate(sub))


def value_too_deep(value: Any) -> bool:
    return depth(value, MAX_VALUE_DEPTH) > MAX_VALUE_DEPTH


def _meta_check(tool: str, schema: dict[str, Any]) -> None:
    try:
        import jsonschema_rs
    except ImportError:  # pragma: no cover - jsonschema-rs is a dependency; the slow check stays right
        quick_ok = False
    else:
        quick_ok = jsonschema_rs.meta.is_valid(schema)
    if not quick_ok:
        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError as exc:
            raise _fail(tool, exc.path, exc.message) from None
    for loc, node in _walk(schema):
        pattern = node.get("pattern")
        regexes = [("pattern", pattern)] if isinstance(pattern, str) else []
        if isinstance(node.get("patternProperties"), dict):
            regexes += [(("patternProperties", p), p) for p in node["patternProperties"]]  # type: ignore[misc]
        for key, text in regexes:
            try:
                re.compile(text)
            except re.error as exc:
                where = (*loc, *key) if isinstance(key, tuple) else (*loc, key)
                raise _fail(tool, where, f"{text!r} is not a valid regular expression ({exc})") from None


def _resolve(tool: str, root: dict[str, Any], loc: tuple[str | int, ...], ref: Any) -> Any:
    if not isinstance(ref, str) or not ref.startswith("#"):
        raise _fail(
            tool,
            loc,
            f"only references inside the tool's own schema are followed (they start with '#'); got {ref!r}",
        )
    validator = ToolValidator(root, registry=_LOCAL_ONLY)
    try:
        return validator._resolver.lookup(ref).contents  # type: ignore[attr-defined]
    except Unresolvable:
        raise _fail(tool, loc, f"{ref!r} names nothing in the tool's schema") from None


def _check_refs(tool: str, schema: dict[str, Any]) -> bool:
    """Refuse references that leave the document or loop in place; say whether any recursion exists."""
    nodes = list(_walk(schema))
    where = {id(node): loc for loc, node in nodes}
    in_place: dict[int, list[int]] = {}
    any_ref = False
    for loc, node in nodes:
        if "$id" in node and loc:
            raise _fail(tool, (*loc, "$id"), "'$id' is allowed only at the top of a tool's schema")
        edges: list[Any] = []
        for key in ("$ref", "$dynamicRef"):
            if key in node:
                any_ref = True
                edges.append(_resolve(tool, schema, (*loc, key), node[key]))
        for key in _IN_PLACE:
            if isinstance(node.get(key), list):
                edges.extend(node[key])
        edges.extend(node[key] for key in _IN_PLACE_ONE if key in node)
        if isinstance(node.get("dependentSchemas"), dict):
            edges.extend(node["dependentSchemas"].values())
        in_place[id(node)] = [id(e) for e in edges if isinstance(e, dict)]
    # A cycle of in-place applicators validates the same value for ever.
    state: dict[int, int] = {}
    for start in in_place:
        if state.get(start):
            continue
        stack = [(start, iter(in_place[start]))]
        state[start] = 1
        while stack:
            node_id, children = stack[-1]
            child = next(children, None)
            if child is None:
                state[node_id] = 2
                stack.pop()
            elif state.get(child) == 1:
                raise _fail(
                    tool,
                    where.get(child, ()),
                    "this reference loops back to itself without descending into the value",
                )
            elif not state.get(child):
                state[child] = 1
                stack.append((child, iter(in_place.get(child, []))))
    return any_ref


def _allows_empty(schema: Any, root: dict[str, Any]) -> bool:
    """Whether some ``enum`` or ``const`` in ``schema`` (through its references) admits ``""``."""
    seen: set[int] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict) or id(node) in seen:
            continue
        seen.add(id(node))
        if node.get("const") == "" or (isinstance(node.get("enum"), list) and "" in node["enum"]):
            return True
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            target: Any = root
            for part in ref[2:].split("/"):
                part = part.replace("~1", "/").replace("~0", "~")
                target = target.get(part) if isinstance(target, dict) else None
            stack.append(target)
        stack.extend(sub for _, sub in _walk(node) if sub is not node)
    return False


def _types_of(node: Mapping[str, Any]) -> list[str] | None:
    t = node.get("type")
    return [t] if isinstance(t, str) else list(t) if isinstance(t, list) else None


def _composed(schema: dict[str, Any]) -> set[int]:
    """Schema objects that are parts of a many-part ``allOf`` (directly or by reference): closing
    one of them would refuse the keys its siblings declare."""
    out: set[int] = set()
    for _, node in _walk(schema):
        parts = node.get("allOf")
        if isinstance(parts, list) and len(parts) > 1:
            for part in parts:
                seen = 0
                while isinstance(part, dict) and id(part) not in out and seen < MAX_SCHEMA_DEPTH:
                    out.add(id(part))
                    ref = part.get("$ref")
                    part = _lookup(schema, ref) if isinstance(ref, str) else None
                    seen += 1
    return out


def _lookup(root: dict[str, Any], ref: str) -> Any:
    if not ref.startswith("#/"):
        return None
    target: Any = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        target = target.get(part) if isinstance(target, dict) else None
    return target


_APPLIERS = ("$ref", "$dynamicRef", "allOf", "anyOf", "oneOf", "not", "if", "dependentSchemas")
_OPENERS = ("additionalProperties", "patternProperties", "unevaluatedProperties")


def _prepare(original: dict[str, Any]) -> dict[str, Any]:
    schema = copy.deepcopy(original)
    composed = _composed(schema)
    value_slots: list[Any] = []
    for loc, node in _walk(schema):
        if node.get("nullable") is True:
            types = _types_of(node)
            if types is not None and "null" not in types:
                node["type"] = [*types, "null"]
        props = node.get("properties")
        # An object is closed when it declares what it takes; the tool's own parameter list
        # even when it declares none (``"properties": {}``: a tool without parameters). With
        # no ``properties`` at all (bare ``{"type": "object"}``) any arguments are allowed.
        closable = (props or (not loc and isinstance(props, dict))) and id(node) not in composed
        if closable and not any(k in node for k in _OPENERS):
            if any(k in node for k in _APPLIERS):
                node["unevaluatedProperties"] = False
            else:
                node["additionalProperties"] = False
        if isinstance(props, dict):
            value_slots.extend(props.values())
        for key in ("additionalProperties", "items"):
            value_slots.append(node.get(key))
        if isinstance(node.get("prefixItems"), list):
            value_slots.extend(node["prefixItems"])
    for slot in value_slots:
        if isinstance(slot, dict) and NONEMPTY not in slot:
            types = _types_of(slot)
            if (types is None or "string" in types) and not _allows_empty(slot, schema):
                slot[NONEMPTY] = True
    return schema


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
    _meta_check(tool, original)
    recursive = _check_refs(tool, original)
    prepared = _prepare(original)
    validator = ToolValidator(prepared, registry=_LOCAL_ONLY)
    return CompiledSpec(prepared, validator, recursive, *build_fast_path(prepared, validator))
