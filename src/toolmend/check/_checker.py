"""The global checklist: deterministic checks of tool calls against the offered tools' schemas.

>>> from toolmend import Tool, ToolCall
>>> weather = Tool(name="get_weather", parameters={"type": "object",
...     "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
...     "required": ["city"]})
>>> [f.code for f in check([ToolCall(name="get_weather", arguments={"days": "3"})], [weather])]
['invalid_type', 'missing_required']
>>> checker = Checker([weather])           # compile once, reuse for many calls
>>> checker.check([ToolCall(name="get_weather", arguments={"city": "Oslo"})])
[]

What is checked, per call: the tool exists (``wrong_tool_name``, with the closest real names);
every required parameter is there (``missing_required``), every given one is declared
(``redundant_parameter``, naming a near-miss key); each value has its JSON type
(``invalid_type``), is not empty (``empty_value``) and meets ``enum`` / ``const`` / bounds /
lengths / ``pattern`` (``invalid_value``) — recursively through nested objects and arrays. Over
the list: identical repeated calls (``duplicate_call``) and, when given, the expected number of
calls (``wrong_tool_count``).

The validation itself is JSON Schema in the dialect the schema's ``$schema`` names (draft 4 to
2020-12; 2020-12 when it names none) as ``jsonschema`` implements it (``$ref`` and ``$defs``,
recursive schemas, ``anyOf`` / ``oneOf`` / ``allOf`` / ``not``, ``prefixItems``,
``dependentRequired`` ...; docs/checker.md lists where toolmend's rules differ); this module turns its errors into findings with codes, the whole
path (``points[0].y``) and suggestions. A schema that is not valid JSON Schema, or refers
outside itself, is a :class:`~toolmend.SpecError` (see :mod:`toolmend.check._spec`). Clean calls
take a generated fast path (:mod:`toolmend.check._fast`) that proves them clean without the
validator.

Type rules, chosen to agree with BFCL: an integer is a number (so an int is fine where BFCL says
``float``), a float is never an integer (``5.0`` for an ``integer`` is a type error), a bool is
neither. A ``null`` for an optional parameter counts as leaving it out (OpenAI strict mode sends
optional values that way); for a required one it is an ``empty_value``.

References (:class:`toolmend.Ref`, NesTools' ``API_call_n``) are not literals. A reference must
name an output bound by an *earlier* call when the calls declare outputs at all
(``invalid_value`` otherwise). When the producing tool declares a ``returns`` schema, the output's
declared type must be one the parameter accepts (integer into number is fine); a reference to an
output whose type is unknown satisfies any type. A ``{"$ref": ...}`` object in a plain call is a
literal value like any other (see :class:`toolmend.ToolCall`).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from jsonschema import ValidationError
from jsonschema.exceptions import best_match

from toolmend._schema import ErrorCode, Finding, Loc, Tool, ToolCall, refs, resolve
from toolmend.check._coerce import NO_COERCION, coerce, json_type
from toolmend.check._names import closest, key_alias
from toolmend.check._spec import (
    MAX_VALUE_DEPTH,
    NONEMPTY,
    CompiledSpec,
    Missing,
    RefValue,
    Unexpected,
    compile_parameters,
    value_too_deep,
)
from toolmend.formats._tools import load_tool

__all__ = ["Checker", "check", "format_path"]

Bound = dict[str, tuple[int, tuple[str, ...]]]

# Checker.cached: compiled checkers by a digest of their tools' content, least recently used
# first, each with the bytes of content it counts against Checker.CACHE_BYTES (and its view).
_CACHE: OrderedDict[bytes, tuple[Checker, int, Callable[..., Any] | None]] = OrderedDict()
_CACHE_SIZE = 0
_CACHE_LOCK = threading.Lock()

_VALUE_KEYWORDS = frozenset(
    {
        "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength",
        "maxLength", "pattern", "minItems", "maxItems", "multipleOf", "uniqueItems", "format",
        "contains", "minContains", "maxContains", "minProperties", "maxProperties", "propertyNames",
        "not", "oneOf", "anyOf", "allOf", "if", "then", "else", "dependentSchemas", "unevaluatedItems",
        "items", "prefixItems", "additionalProperties", "unevaluatedProperties", "patternProperties",
    }
)  # fmt: skip
_RANGE = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}
_ARTICLE = {"integer": "an integer", "array": "an array", "object": "an object"}
_FIRST = ("invalid_type", "empty_value")
_KEYS = ("missing_required", "redundant_parameter")


def format_path(loc: Loc) -> str:
    """``("filters", 0, "max")`` → ``"filters[0].max"``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


def _a(type_name: str) -> str:
    return _ARTICLE.get(type_name, f"a {type_name}")


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _types(schema: Any) -> list[str]:
    t = schema.get("type") if isinstance(schema, Mapping) else None
    names = [t] if isinstance(t, str) else list(t) if isinstance(t, list) else []
    return [n for n in names if n != "null"]


def _describe(types: Sequence[str]) -> str:
    return " or ".join(types) if types else "any value"


def _show(value: Any) -> Any:
    return value.target if isinstance(value, RefValue) else value


@dataclass(slots=True, eq=False)
class _Call:
    """What one call's findings are written against: its index, tool and arguments."""

    index: int
    tool: str
    args: Mapping[str, Any]
    out: list[Finding]

    def add(
        self, code: ErrorCode, loc: Loc, message: str, suggestion: str | None = None, **data: Any
    ) -> None:
        data["loc"] = list(loc)
        self.out.append(
            Finding(code=code, message=message, call=self.index, path=format_path(loc),
                    suggestion=suggestion, data=data)
        )  # fmt: skip

    def where(self, loc: Loc) -> str:
        return self.tool if not loc else f"'{format_path(loc)}' of {self.tool}"


def _name(loc: Loc) -> str:
    return format_path(loc) or "arguments"


def _finding(err: ValidationError, call: _Call) -> None:
    """The finding for one validator error (one per error; combinators pick their best branch)."""
    loc: Loc = tuple(err.absolute_path)
    kw = err.validator
    value: Any = err.instance
    schema: Any = err.schema if isinstance(err.schema, Mapping) else {}
    path = _name(loc)
    if isinstance(err, Missing):
        sub = (schema.get("properties") or {}).get(err.key)
        desc = sub.get("description") if isinstance(sub, Mapping) else None
        types = _types(sub)
        hint = f"Add '{err.key}' ({_describe(types)})" + (
            f": {_short(desc, 100)[1:-1]}" if isinstance(desc, str) else "."
        )
        call.add("missing_required", (*loc, err.key),
                 f"required parameter '{err.key}' of {call.where(loc)} is missing", hint, expected=types)  # fmt: skip
        return
    if isinstance(err, Unexpected):
        known = list(err.known)
        free = [k for k in known if k not in value]
        alias = key_alias(err.key, free) or key_alias(err.key, known)
        if alias is not None:
            message = f"{call.where(loc)} has no parameter '{err.key}'; did you mean '{alias}'?"
            hint = f"Rename '{err.key}' to '{alias}'."
        else:
            message = f"{call.where(loc)} has no parameter '{err.key}'"
            hint = f"Remove '{err.key}'; it takes: {', '.join(known)}." if known else f"Remove '{err.key}'."
        call.add("redundant_parameter", (*loc, err.key), message, hint, alias=alias)
        return
    if value is None and kw not in (NONEMPTY,):
        types = _types(schema)
        call.add("empty_value", loc, f"'{path}' is null; {_a(_describe(types))} is needed",
                 "Give a real value taken from the request.", expected=types)  # fmt: skip
        return
    if kw == "type":
        types = _types(schema)
        if isinstance(value, RefValue):
            call.add("invalid_type", loc,
                     f"'{path}' should be {_a(_describe(types))}, but {value.target} is {_a(' or '.join(value.types))}",
                     "Refer to an output of the right type.", expected=types, got=list(value.types),
                     ref=value.target)  # fmt: skip
            return
        fixed = coerce(value, tuple(types))
        hint = (
            f"Use {_short(fixed)} instead of {_short(value)}."
            if fixed is not NO_COERCION
            else f"Pass {_a(_describe(types))}."
        )
        call.add("invalid_type", loc,
                 f"'{path}' should be {_a(_describe(types))}, got {json_type(value)} {_short(value)}",
                 hint, expected=types, got=json_type(value), nested=len(loc) > 1,
                 original_type=schema.get("x-original-type"))  # fmt: skip
        return
    if kw == NONEMPTY:
        call.add("empty_value", loc, f"'{path}' is an empty string",
                 "Fill it with the value the request gives, or leave it out if it is optional.")  # fmt: skip
        return
    if kw in ("anyOf", "oneOf"):
        _combinator(err, call, loc)
        return
    value = _show(value)
    if kw == "enum":
        allowed = list(err.validator_value)  # type: ignore[arg-type]
        near = [
            e for e in allowed if isinstance(e, str) and isinstance(value, str) and e.lower() == value.lower()
        ]
        hint = f"Use {near[0]!r}." if len(near) == 1 else f"Use one of {_short(allowed, 120)}."
        call.add("invalid_value", loc, f"'{path}' must be one of {_short(allowed, 120)}, got {_short(value)}",
                 hint, keyword="enum", allowed=allowed)  # fmt: skip
    elif kw == "const":
        const = err.validator_value
        call.add("invalid_value", loc, f"'{path}' must be {const!r}, got {_short(value)}",
                 f"Use {const!r}.", keyword="const")  # fmt: skip
    elif kw in _RANGE:
        bad = f"{_RANGE[kw]} {err.validator_value}"
        call.add("invalid_value", loc, f"'{path}' must be {bad}, got {value!r}", f"Give a value {bad}.",
                 keyword="range")  # fmt: skip
    elif kw in ("minLength", "maxLength"):
        lo, hi = schema.get("minLength"), schema.get("maxLength")
        call.add("invalid_value", loc, f"'{path}' has length {len(value)}, allowed {lo}..{hi}",
                 "Give a value of the allowed length.", keyword="length")  # fmt: skip
    elif kw == "pattern":
        call.add("invalid_value", loc,
                 f"'{path}' does not match the pattern {err.validator_value!r}: {_short(value)}",
                 "Write the value in the format the pattern describes.", keyword="pattern")  # fmt: skip
    elif kw in ("minItems", "maxItems"):
        lo, hi = schema.get("minItems"), schema.get("maxItems")
        call.add("invalid_value", loc, f"'{path}' has {len(value)} items, allowed {lo}..{hi}",
                 "Give the allowed number of items.", keyword="items")  # fmt: skip
    else:
        code: ErrorCode = "invalid_value" if kw in _VALUE_KEYWORDS or kw is None else "invalid_type"
        call.add(code, loc, f"'{path}': {err.message}",
                 "Change the value so that it fits the parameter's schema.", keyword=str(kw))  # fmt: skip


def _combinator(err: ValidationError, call: _Call, loc: Loc) -> None:
    branches: dict[Any, list[ValidationError]] = {}
    for sub in err.context or ():
        branch = sub.relative_schema_path[0] if sub.relative_schema_path else id(sub)
        branches.setdefault(branch, []).append(sub)
    if not branches:  # oneOf: more than one branch fits
        call.add("invalid_value", loc, f"'{_name(loc)}' fits more than one of the allowed shapes",
                 "Give a value that fits exactly one of them.", keyword=str(err.validator))  # fmt: skip
        return
    typed = [
        [t for e in errs if e.validator == "type" and not e.relative_path for t in _types(e.schema)]
        for errs in branches.values()
    ]
    if len(branches) == len(err.validator_value) and all(typed):  # type: ignore[arg-type]
        union = list(dict.fromkeys(t for ts in typed for t in ts))
        _finding(_retyped(err, union), call)
        return
    best = best_match(err.context or ())
    if best is not None:
        _finding(best, call)


def _retyped(err: ValidationError, types: list[str]) -> ValidationError:
    """A ``type`` error standing for every branch of a combinator that wanted another type."""
    out = ValidationError(
        f"{err.instance!r} is not of type {types}", validator="type", validator_value=types,
        instance=err.instance, schema={**err.schema, "type": types}, path=err.absolute_path,  # type: ignore[dict-item]
    )  # fmt: skip
    return out


def _position(args: Any, loc: Sequence[Any]) -> list[int]:
    """Where ``loc`` sits in the arguments, so findings read in argument order; absent keys last."""
    key: list[int] = []
    node = args
    for part in loc:
        if isinstance(node, Mapping):
            keys = list(node)
            key.append(keys.index(part) if part in node else len(keys))
            node = node.get(part)
        elif isinstance(node, list | tuple) and isinstance(part, int) and part < len(node):
            key.append(part)
            node = node[part]
        else:
            key.append(0)
            node = None
    return key


def _tidy(found: list[Finding], args: Any) -> list[Finding]:
    """One finding per problem: a wrong type or empty value hides the value checks on the same spot."""
    blocked = {f.path for f in found if f.code in _FIRST}
    out: list[Finding] = []
    seen: set[tuple[str, str]] = set()
    for f in found:
        key = (f.code, f.path)
        if key in seen or (f.path in blocked and f.code not in (*_FIRST, *_KEYS)):
            continue
        if f.code in _FIRST and any((c, f.path) in seen for c in _FIRST):
            continue
        seen.add(key)
        out.append(f)
    out.sort(key=lambda f: _position(args, f.data.get("loc") or ()))
    return out


def _canonical(call: ToolCall) -> str:
    return call.name + "\x00" + json.dumps(call.arguments, sort_keys=True, default=str)


def _output_types(tool: Tool) -> dict[str, tuple[str, ...]]:
    returns = tool.returns or {}
    props = returns.get("properties")
    if not isinstance(props, Mapping):
        return {}
    out: dict[str, tuple[str, ...]] = {}
    for name, schema in props.items():
        t = schema.get("type") if isinstance(schema, Mapping) else None
        out[name] = (t,) if isinstance(t, str) else tuple(x for x in (t or []) if isinstance(x, str))
    return out


class Checker:
    """The checklist for one set of tools; schemas are verified and compiled on first use and reused.

    >>> from toolmend import ToolCall
    >>> c = Checker([{"name": "add", "parameters": {"type": "object",
    ...     "properties": {"a": {"type": "integer"}}, "required": ["a"]}}])
    >>> [(f.code, f.path) for f in c.check([ToolCall(name="add", arguments={"a": 1, "b": 2})])]
    [('redundant_parameter', 'b')]

    ``tools`` may be :class:`~toolmend.Tool` objects or raw specs in any dialect
    :func:`toolmend.formats._tools.load_tool` understands. A tool whose parameters are not a valid
    JSON Schema raises :class:`~toolmend.SpecError` when it is first needed; :meth:`verify`
    compiles them all up front.
    """

    # Slots: a clean call reads ``_fast`` from the object itself rather than from a separate
    # table of attribute values, one memory access fewer on a checker the caller has not
    # touched lately (the common case: a guard checks one call between two model replies).
    __slots__ = ("_tools", "_specs", "_outputs", "_fast", "__weakref__")

    def __init__(self, tools: Iterable[Tool | Mapping[str, Any]]) -> None:
        self._tools: dict[str, Tool] = {}
        for t in tools:
            tool = t if isinstance(t, Tool) else load_tool(t)
            self._tools[tool.name] = tool
        self._specs: dict[str, CompiledSpec] = {}
        self._outputs: dict[str, dict[str, tuple[str, ...]]] = {}
        # The proven-clean tests of compiled tools whose clean answer needs no depth walk.
        self._fast: dict[str, Callable[[Any], bool]] = {}

    CACHE_BYTES: ClassVar[int] = 32 * 2**20
    """What :meth:`cached` keeps, in bytes of the tools' content (their canonical JSON). A
    compiled checker takes a few times its tools' size in memory, so this bounds that too."""

    @classmethod
    def cached(
        cls,
        tools: Sequence[Tool | Mapping[str, Any]],
        *,
        view: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None,
        check: Callable[[Sequence[Tool | Mapping[str, Any]]], None] | None = None,
    ) -> Checker:
        """The checker for ``tools``, compiled once per content: an agent, a proxy or a benchmark
        sends the same tool list again and again, and compiling costs far more than a check.

        Two lists with equal content (same specs, key order aside) get the same object; the
        least recently used are dropped once the content kept passes :attr:`CACHE_BYTES`. A list
        larger than that alone is compiled and not kept. ``view`` turns each raw spec into the
        one to check against (it is part of the key), and ``check`` runs on the tools once,
        before they are first compiled: what it raises propagates, and nothing is kept.

        >>> spec = {"name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}
        >>> Checker.cached([spec]) is Checker.cached([dict(reversed(list(spec.items())))])
        True
        >>> Checker.cached([spec]) is Checker.cached([{**spec, "name": "g"}])
        False
        """
        raw = [t.model_dump(mode="json") if isinstance(t, Tool) else t for t in tools]
        try:
            text = json.dumps(raw, sort_keys=True, ensure_ascii=False, default=repr, allow_nan=True)
        except (TypeError, ValueError):  # keys that are not strings, or a cycle: not from JSON
            text = repr(raw)
        # The view by identity (two lambdas share a name); the entry keeps it alive, so that
        # its id is not reused while the entry exists.
        label = "" if view is None else f"{view.__module__}.{view.__qualname__}@{id(view)}\n"
        content = (label + text).encode("utf-8", "surrogatepass")
        key = hashlib.blake2b(content, digest_size=20).digest()
        with _CACHE_LOCK:
            hit = _CACHE.get(key)
            if hit is not None:
                _CACHE.move_to_end(key)
                return hit[0]
        if check is not None:
            check(tools)
        checker = cls([view(t) for t in raw] if view is not None else tools)
        size = len(content)
        with _CACHE_LOCK:
            if key in _CACHE:  # another thread compiled the same list meanwhile
                return _CACHE[key][0]
            if size <= cls.CACHE_BYTES:
                _CACHE[key] = (checker, size, view)
                global _CACHE_SIZE
                _CACHE_SIZE += size
                while _CACHE_SIZE > cls.CACHE_BYTES:
                    _, (_, dropped, _) = _CACHE.popitem(last=False)
                    _CACHE_SIZE -= dropped
        return checker

    @property
    def tools(self) -> dict[str, Tool]:
        """The tools by name."""
        return self._tools

    def spec(self, name: str) -> CompiledSpec | None:
        """The compiled schema of tool ``name`` (``None`` for a tool not offered)."""
        spec = self._specs.get(name)
        if spec is None:
            tool = self._tools.get(name)
            if tool is None:
                return None
            spec = self._specs[name] = compile_parameters(name, tool.parameters)
            if spec.fast_unbound is not None and not spec.recursive:
                self._fast[name] = spec.fast_unbound  # check_call binds no references
        return spec

    def verify(self) -> None:
        """Compile every tool now; raises :class:`~toolmend.SpecError` for the first broken one."""
        for name in self._tools:
            self.spec(name)

    def check(
        self, calls: Sequence[ToolCall | Mapping[str, Any]], expected_count: int | None = None
    ) -> list[Finding]:
        """Every finding for ``calls``, in call order (list-level findings last).

        ``expected_count`` adds a ``wrong_tool_count`` finding when the number of calls differs;
        when it is given and not exceeded, identical repeated calls are taken as intended and
        not reported as ``duplicate_call``.
        """
        items = [c if isinstance(c, ToolCall) else ToolCall.model_validate(c) for c in calls]
        bound = self._bind(items)
        out: list[Finding] = []
        seen: dict[str, int] = {}
        # A repeat is presumed intended when the caller expects at least this many calls
        # (BFCL parallel_158 asks for two samples from the same distribution).
        check_repeats = len(items) > 1 and (expected_count is None or len(items) > expected_count)
        for i, call in enumerate(items):
            self._check_call(call, i, out, bound)
            if check_repeats:
                key = _canonical(call)
                first = seen.setdefault(key, i)
                if first != i:
                    out.append(
                        Finding(
                            code="duplicate_call",
                            message=f"call {i} repeats call {first}: {call.name} with the same arguments",
                            call=i,
                            suggestion="Drop the repeated call.",
                            data={"first": first, "loc": []},
                        )
                    )
        if expected_count is not None and len(items) != expected_count:
            out.append(
                Finding(
                    code="wrong_tool_count",
                    message=f"expected {expected_count} call(s), got {len(items)}",
                    suggestion="Make exactly one call per step the request asks for."
                    if len(items) > expected_count
                    else "Add the calls the request still needs.",
                    data={"expected": expected_count, "got": len(items), "loc": []},
                )
            )
        return out

    def check_call(self, call: ToolCall, index: int = 0) -> list[Finding]:
        """Findings for one call on its own (no duplicate, count or reference-binding checks).

        :meth:`check_arguments` gives the same findings from the tool's name and a parsed dict.
        """
        fields = call.__dict__  # read once: a pydantic attribute read is slow
        try:
            # A tool not compiled yet (or without a fast path) is a KeyError: the slow path
            # compiles it, and puts its test in _fast for the next call.
            if self._fast[fields["name"]](fields["arguments"]):
                return []
        except Exception:  # noqa: S110 - unknown tool, or a value the test cannot take: the full check decides
            pass
        return self._check_one(call, index)

    def check_arguments(self, name: str, arguments: dict[str, Any], index: int = 0) -> list[Finding]:
        """Findings for one call given as what a parser hands over: the tool's name and its
        arguments, already parsed (no :class:`~toolmend.ToolCall` built for a clean call).

        The findings are those of ``check_call(ToolCall(name=name, arguments=arguments),
        index)``. A clean call costs one lookup of the tool's generated test and the test itself;
        only a call that the test cannot prove clean builds the ``ToolCall`` (which keeps
        ``{"$ref": ...}`` objects as the literal values they are in a plain call and refuses
        arguments nested deeper than ``ToolCall.MAX_DEPTH`` with pydantic's
        ``ValidationError``) for the full check. So a
        clean call is not walked for depth: a value too deep for a ``ToolCall`` in a free-form
        parameter passes here, where building the ``ToolCall`` would have refused it.

        >>> c = Checker([{"name": "add", "parameters": {"type": "object",
        ...     "properties": {"a": {"type": "integer"}}, "required": ["a"]}}])
        >>> c.check_arguments("add", {"a": 1})
        []
        >>> [(f.code, f.path) for f in c.check_arguments("add", {"a": "1"})]
        [('invalid_type', 'a')]
        >>> [f.code for f in c.check_arguments("sum", {"a": 1})]
        ['wrong_tool_name']
        """
        try:
            # As in check_call: a tool not compiled yet, or without a fast path, is a KeyError.
            if self._fast[name](arguments):
                return []
        except Exception:  # noqa: S110 - unknown tool, or a value the test cannot take: the full check decides
            pass
        return self._check_one(ToolCall(name=name, arguments=arguments), index)

    def _check_one(self, call: ToolCall, index: int) -> list[Finding]:
        out: list[Finding] = []
        self._check_call(call, index, out, None)
        return out

    def _bind(self, calls: list[ToolCall]) -> Bound | None:
        if not any(c.outputs for c in calls):
            return None
        bound: Bound = {}
        for i, call in enumerate(calls):
            tool = self._tools.get(call.name)
            types = self._output_types(tool) if tool is not None else {}
            fields = call.output_fields or list(types)
            for j, name in enumerate(call.outputs):
                out_type = types.get(fields[j], ()) if j < len(fields) else ()
                bound.setdefault(name, (i, out_type))
        return bound

    def _output_types(self, tool: Tool) -> dict[str, tuple[str, ...]]:
        types = self._outputs.get(tool.name)
        if types is None:
            types = self._outputs[tool.name] = _output_types(tool)
        return types

    def _check_call(self, call: ToolCall, index: int, out: list[Finding], bound: Bound | None) -> None:
        spec = self.spec(call.name)
        if spec is None:
            near = closest(call.name, self._tools)
            if near:
                hint = f"Did you mean {near[0]!r}?"
            else:
                names = list(self._tools)
                hint = f"Call one of: {', '.join(names[:8])}{' ...' if len(names) > 8 else ''}."
            out.append(
                Finding(
                    code="wrong_tool_name",
                    message=f"{call.name!r} is not one of the offered tools",
                    call=index,
                    suggestion=hint,
                    data={"closest": near, "loc": []},
                )
            )
            return
        args = call.arguments
        fast = spec.fast if bound is not None else spec.fast_unbound
        if fast is not None:
            try:
                clean = fast(args)
            except Exception:  # a value the generated test cannot take: the full check decides
                clean = False
            if clean and not (spec.recursive and value_too_deep(args)):
                return
        out.extend(_full_check(spec, _Call(index, call.name, args, []), bound))


def _full_check(spec: CompiledSpec, call: _Call, bound: Bound | None) -> list[Finding]:
    """Every finding for one call by the full validator (the fast path could not prove it clean)."""
    types: dict[str, tuple[str, ...]] = {}
    has_refs = False
    for loc, ref in refs(call.args):
        has_refs = True
        if bound is None:
            continue  # no call declares outputs: nothing to resolve references against
        produced = bound.get(ref.target)
        if produced is None or produced[0] >= call.index:
            call.add("invalid_value", loc, f"'{format_path(loc)}' refers to {ref.target}, which no earlier call produces",
                     "Refer only to outputs of calls made before this one.", keyword="ref", ref=ref.target)  # fmt: skip
        else:
            types[ref.target] = produced[1]
    if spec.recursive and value_too_deep(call.args):
        call.add("invalid_value", (), f"the arguments of {call.tool} are nested deeper than {MAX_VALUE_DEPTH} levels",
                 "Give a flatter value.", keyword="depth")  # fmt: skip
        return call.out
    instance = (
        resolve(call.args, lambda ref: RefValue(ref.target, types.get(ref.target, ())))
        if has_refs
        else call.args
    )
    for err in spec.validator.iter_errors(instance):
        _finding(err, call)
    return _tidy(call.out, call.args)


def check(
    calls: Sequence[ToolCall | Mapping[str, Any]],
    tools: Iterable[Tool | Mapping[str, Any]],
    expected_count: int | None = None,
) -> list[Finding]:
    """Check ``calls`` against ``tools``; a one-shot :meth:`Checker.check` (compile-and-check).

    Reuse a :class:`Checker` when checking many outputs against the same tools.
    """
    return Checker(tools).check(calls, expected_count)
