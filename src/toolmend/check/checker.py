"""The global checklist: deterministic checks of tool calls against the offered tools' schemas.

>>> from toolmend.schema import Tool, ToolCall
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
calls (``wrong_tool_count``). Keywords beyond those (``anyOf``, ``oneOf``, ``$ref``,
``prefixItems``, ``multipleOf`` ...) are delegated to a jsonschema validator compiled once.

Type rules, chosen to agree with BFCL: an integer is a number (so an int is fine where BFCL says
``float``), a float is never an integer (``5.0`` for an ``integer`` is a type error), a bool is
neither. A ``null`` for an optional parameter counts as leaving it out (OpenAI strict mode sends
optional values that way); for a required one it is an ``empty_value``.

References (:class:`toolmend.Ref`, NesTools' ``API_call_n``) are not literals. A reference must
name an output bound by an *earlier* call when the calls declare outputs at all
(``invalid_value`` otherwise). When the producing tool declares a ``returns`` schema, the output's
declared type must be one the parameter accepts (integer into number is fine); a reference to an
output whose type is unknown satisfies any type.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.protocols import Validator

from toolmend.check.coerce import NO_COERCION, coerce, json_type, matches_type
from toolmend.check.names import closest, key_alias
from toolmend.formats.tools import load_tool
from toolmend.schema import ErrorCode, Finding, Ref, Tool, ToolCall

__all__ = ["Checker", "check", "format_path"]

Loc = tuple[str | int, ...]

# Keywords the fast path understands; any other (non ``x-``) keyword sends the node's value
# through a compiled jsonschema validator as well.
_HANDLED = frozenset(
    {
        "type", "description", "title", "default", "examples", "example", "properties", "required",
        "additionalProperties", "items", "enum", "const", "minimum", "maximum", "exclusiveMinimum",
        "exclusiveMaximum", "minLength", "maxLength", "pattern", "minItems", "maxItems", "format",
        "nullable", "$schema", "$id", "$defs", "definitions", "$comment", "deprecated", "readOnly",
        "writeOnly", "optional",
    }
)  # fmt: skip
_VALUE_KEYWORDS = frozenset(
    {
        "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength",
        "maxLength", "pattern", "minItems", "maxItems", "multipleOf", "uniqueItems", "format",
        "contains", "minContains", "maxContains", "minProperties", "maxProperties", "propertyNames",
    }
)  # fmt: skip
_PY_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (dict,),
    "null": (type(None),),
}
_ARTICLE = {"integer": "an integer", "array": "an array", "object": "an object"}


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


@dataclass(slots=True, eq=False)
class _Node:
    """A compiled schema node: what the fast path needs, precomputed."""

    schema: Mapping[str, Any]
    types: tuple[str, ...] = ()
    exact_types: frozenset[type] = frozenset()
    nullable: bool = False
    enum: list[Any] | None = None
    has_const: bool = False
    const: Any = None
    bounds: tuple[Any, Any, Any, Any] | None = None  # minimum, maximum, exclusiveMin, exclusiveMax
    lengths: tuple[int | None, int | None] | None = None
    pattern: re.Pattern[str] | None = None
    items_count: tuple[int | None, int | None] | None = None
    properties: dict[str, _Node] | None = None
    required: tuple[str, ...] = ()
    closed: bool = False
    additional: _Node | None = None
    items: _Node | None = None
    prefix: list[_Node] | None = None
    extra: Validator | None = None
    allows_empty: bool = False
    leaf: bool = False  # only a type to check: the hot path stops after the type test

    def describe(self) -> str:
        return " or ".join(self.types) if self.types else "any value"


class _Compiler:
    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self._root_validator: Validator | None = None

    def validator(self, schema: Mapping[str, Any]) -> Validator:
        if self._root_validator is None:
            self._root_validator = Draft202012Validator(dict(self.root))
        return self._root_validator.evolve(schema=dict(schema))

    def node(self, schema: Any) -> _Node:
        if not isinstance(schema, Mapping):
            return _Node(schema={}, leaf=True)
        node = _Node(schema=schema)
        raw_type = schema.get("type")
        types = [raw_type] if isinstance(raw_type, str) else list(raw_type or [])
        node.nullable = "null" in types or schema.get("nullable") is True
        node.types = tuple(t for t in types if t in _PY_TYPES and t != "null")
        exact: set[type] = set()
        for t in node.types:
            exact.update(_PY_TYPES[t])
        node.exact_types = frozenset(exact)
        if isinstance(schema.get("enum"), list):
            node.enum = list(schema["enum"])
        if "const" in schema:
            node.has_const, node.const = True, schema["const"]
        node.allows_empty = (node.enum is not None and "" in node.enum) or (
            node.has_const and node.const == ""
        )
        bounds = tuple(schema.get(k) for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"))
        if any(isinstance(b, int | float) and not isinstance(b, bool) for b in bounds):
            node.bounds = bounds  # type: ignore[assignment]
        if "minLength" in schema or "maxLength" in schema:
            node.lengths = (schema.get("minLength"), schema.get("maxLength"))
        if isinstance(schema.get("pattern"), str):
            try:
                node.pattern = re.compile(schema["pattern"])
            except re.error:
                node.pattern = None  # a broken pattern in a spec constrains nothing
        if "minItems" in schema or "maxItems" in schema:
            node.items_count = (schema.get("minItems"), schema.get("maxItems"))
        props = schema.get("properties")
        is_object = "object" in node.types or isinstance(props, Mapping)
        if is_object:
            node.properties = (
                {k: self.node(v) for k, v in props.items()} if isinstance(props, Mapping) else {}
            )
            req = schema.get("required")
            node.required = tuple(r for r in req if isinstance(r, str)) if isinstance(req, list) else ()
            extra_props = schema.get("additionalProperties")
            if isinstance(extra_props, Mapping):
                node.additional = self.node(extra_props)
            # Tool calls have no use for keys the tool does not declare, so declared properties
            # close the object unless the schema opens it again; a free-form object stays open.
            node.closed = (
                bool(node.properties) and extra_props is not True and "patternProperties" not in schema
            )
        items = schema.get("items")
        if isinstance(items, Mapping):
            node.items = self.node(items)
        elif isinstance(items, list):
            node.prefix = [self.node(s) for s in items]
        unhandled = [k for k in schema if k not in _HANDLED and not k.startswith("x-")]
        if unhandled:
            node.extra = self.validator(schema)
        node.leaf = (
            node.enum is None
            and not node.has_const
            and node.bounds is None
            and node.lengths is None
            and node.pattern is None
            and node.items_count is None
            and node.properties is None
            and node.items is None
            and node.prefix is None
            and node.extra is None
        )
        return node


@dataclass(slots=True, eq=False)
class _Plan:
    tool: Tool
    root: _Node
    param_names: tuple[str, ...]
    output_types: dict[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(slots=True, eq=False)
class _Ctx:
    """Per-call state: the call index and tool, the findings so far, and bound references."""

    call: int
    tool: str
    out: list[Finding]
    bound: dict[str, tuple[int, tuple[str, ...]]] | None


def _fail(
    ctx: _Ctx,
    code: ErrorCode,
    loc: Loc,
    message: str,
    suggestion: str | None = None,
    **data: Any,
) -> None:
    data["loc"] = list(loc)
    ctx.out.append(
        Finding(
            code=code,
            message=message,
            call=ctx.call,
            path=format_path(loc),
            suggestion=suggestion,
            data=data,
        )
    )


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _same(a: Any, b: Any) -> bool:
    # Plain == says True == 1; an enum of integers must not accept a boolean.
    return a == b and isinstance(a, bool) == isinstance(b, bool)


def _check_value(node: _Node, value: Any, loc: Loc, ctx: _Ctx) -> None:
    vtype = type(value)
    if node.leaf and vtype in node.exact_types and (vtype is not str or node.allows_empty or value):
        return  # the hot path: a declared type and nothing more to check
    if isinstance(value, Ref):
        _check_ref(node, value, loc, ctx)
        return
    if value is None:
        if node.nullable or not node.types:
            return
        _fail(ctx, "empty_value", loc, f"'{format_path(loc)}' is null; {_a(node.describe())} is needed",
              "Give a real value taken from the request.", expected=list(node.types))  # fmt: skip
        return
    if node.types and vtype not in node.exact_types and not any(matches_type(value, t) for t in node.types):
        fixed = coerce(value, node.types)
        hint = (
            f"Use {_short(fixed)} instead of {_short(value)}."
            if fixed is not NO_COERCION
            else f"Pass {_a(node.describe())}."
        )
        _fail(ctx, "invalid_type", loc,
              f"'{format_path(loc)}' should be {_a(node.describe())}, got {json_type(value)} {_short(value)}",
              hint, expected=list(node.types), got=json_type(value), nested=len(loc) > 1,
            original_type=node.schema.get("x-original-type"))  # fmt: skip
        return
    if vtype is str and not value and not node.allows_empty:
        _fail(ctx, "empty_value", loc, f"'{format_path(loc)}' is an empty string",
              "Fill it with the value the request gives, or leave it out if it is optional.")  # fmt: skip
        return
    if node.enum is not None and not any(_same(value, e) for e in node.enum):
        near = [
            e
            for e in node.enum
            if isinstance(e, str) and isinstance(value, str) and e.lower() == value.lower()
        ]
        hint = f"Use {near[0]!r}." if len(near) == 1 else f"Use one of {_short(node.enum, 120)}."
        _fail(ctx, "invalid_value", loc, f"'{format_path(loc)}' must be one of {_short(node.enum, 120)}, got {_short(value)}",
              hint, keyword="enum", allowed=node.enum)  # fmt: skip
        return
    if node.has_const and not _same(value, node.const):
        _fail(ctx, "invalid_value", loc, f"'{format_path(loc)}' must be {node.const!r}, got {_short(value)}",
              f"Use {node.const!r}.", keyword="const")  # fmt: skip
        return
    if node.bounds is not None and isinstance(value, int | float) and not isinstance(value, bool):
        _check_bounds(node, value, loc, ctx)
    if vtype is str or isinstance(value, str):
        if node.lengths is not None:
            lo, hi = node.lengths
            if (isinstance(lo, int) and len(value) < lo) or (isinstance(hi, int) and len(value) > hi):
                _fail(ctx, "invalid_value", loc, f"'{format_path(loc)}' has length {len(value)}, allowed {lo}..{hi}",
                      "Give a value of the allowed length.", keyword="length")  # fmt: skip
        if node.pattern is not None and node.pattern.search(value) is None:
            _fail(ctx, "invalid_value", loc,
                  f"'{format_path(loc)}' does not match the pattern {node.pattern.pattern!r}: {_short(value)}",
                  "Write the value in the format the pattern describes.", keyword="pattern")  # fmt: skip
    elif isinstance(value, list | tuple):
        _check_array(node, value, loc, ctx)
    elif isinstance(value, Mapping) and node.properties is not None:
        _check_object(node, value, loc, ctx)
    if node.extra is not None:
        _check_extra(node, value, loc, ctx)


def _check_bounds(node: _Node, value: float, loc: Loc, ctx: _Ctx) -> None:
    assert node.bounds is not None
    lo, hi, xlo, xhi = node.bounds
    bad = None
    if isinstance(lo, int | float) and value < lo:
        bad = f">= {lo}"
    elif isinstance(hi, int | float) and value > hi:
        bad = f"<= {hi}"
    elif isinstance(xlo, int | float) and value <= xlo:
        bad = f"> {xlo}"
    elif isinstance(xhi, int | float) and value >= xhi:
        bad = f"< {xhi}"
    if bad:
        _fail(ctx, "invalid_value", loc, f"'{format_path(loc)}' must be {bad}, got {value!r}",
              f"Give a value {bad}.", keyword="range")  # fmt: skip


def _check_array(node: _Node, value: Sequence[Any], loc: Loc, ctx: _Ctx) -> None:
    if node.items_count is not None:
        lo, hi = node.items_count
        if (isinstance(lo, int) and len(value) < lo) or (isinstance(hi, int) and len(value) > hi):
            _fail(ctx, "invalid_value", loc, f"'{format_path(loc)}' has {len(value)} items, allowed {lo}..{hi}",
                  "Give the allowed number of items.", keyword="items")  # fmt: skip
    if node.items is not None:
        item = node.items
        for i, v in enumerate(value):
            _check_value(item, v, (*loc, i), ctx)
    elif node.prefix is not None:
        for i, (sub, v) in enumerate(zip(node.prefix, value, strict=False)):
            _check_value(sub, v, (*loc, i), ctx)


def _check_object(node: _Node, value: Mapping[str, Any], loc: Loc, ctx: _Ctx) -> None:
    props = node.properties
    assert props is not None
    for key, v in value.items():
        child = props.get(key)
        if child is None:
            if node.additional is not None:
                _check_value(node.additional, v, (*loc, key), ctx)
            elif node.closed:
                _redundant(node, key, value, loc, ctx)
            continue
        if v is None and key not in node.required:
            continue
        _check_value(child, v, (*loc, key), ctx)
    for key in node.required:
        if key not in value:
            sub = props.get(key)
            what = sub.describe() if sub is not None else "any value"
            desc = sub.schema.get("description") if sub is not None else None
            hint = f"Add '{key}' ({what})" + (
                f": {_short(desc, 100)[1:-1]}" if isinstance(desc, str) else "."
            )
            where = f"{ctx.tool}" if not loc else f"'{format_path(loc)}' of {ctx.tool}"
            _fail(ctx, "missing_required", (*loc, key), f"required parameter '{key}' of {where} is missing",
                  hint, expected=list(sub.types) if sub is not None else [])  # fmt: skip


def _redundant(node: _Node, key: str, value: Mapping[str, Any], loc: Loc, ctx: _Ctx) -> None:
    assert node.properties is not None
    free = [k for k in node.properties if k not in value]
    alias = key_alias(key, free) or key_alias(key, node.properties)
    where = ctx.tool if not loc else f"'{format_path(loc)}' of {ctx.tool}"
    if alias is not None:
        message = f"{where} has no parameter '{key}'; did you mean '{alias}'?"
        hint = f"Rename '{key}' to '{alias}'."
    else:
        message = f"{where} has no parameter '{key}'"
        names = ", ".join(node.properties)
        hint = f"Remove '{key}'; it takes: {names}." if names else f"Remove '{key}'."
    _fail(ctx, "redundant_parameter", (*loc, key), message, hint, alias=alias)


def _check_extra(node: _Node, value: Any, loc: Loc, ctx: _Ctx) -> None:
    assert node.extra is not None
    plain = _unref(value)
    for err in node.extra.iter_errors(plain):
        keyword = str(err.validator)
        if keyword in _HANDLED:
            continue
        code: ErrorCode = "invalid_value" if keyword in _VALUE_KEYWORDS else "invalid_type"
        sub = (*loc, *err.absolute_path)
        _fail(ctx, code, sub, f"'{format_path(sub)}': {err.message}",
              "Change the value so that it fits the parameter's schema.", keyword=keyword)  # fmt: skip


def _unref(value: Any) -> Any:
    if isinstance(value, Ref):
        return value.target
    if isinstance(value, Mapping):
        return {k: _unref(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_unref(v) for v in value]
    return value


def _check_ref(node: _Node, ref: Ref, loc: Loc, ctx: _Ctx) -> None:
    if ctx.bound is None:
        return  # no call declares outputs: nothing to resolve references against
    produced = ctx.bound.get(ref.target)
    if produced is None or produced[0] >= ctx.call:
        _fail(ctx, "invalid_value", loc,
              f"'{format_path(loc)}' refers to {ref.target}, which no earlier call produces",
              "Refer only to outputs of calls made before this one.", keyword="ref", ref=ref.target)  # fmt: skip
        return
    out_types = produced[1]
    if not out_types or not node.types:
        return
    ok = any(t in node.types or (t == "integer" and "number" in node.types) for t in out_types)
    if not ok:
        _fail(ctx, "invalid_type", loc,
              f"'{format_path(loc)}' should be {_a(node.describe())}, but {ref.target} is {_a(' or '.join(out_types))}",
              "Refer to an output of the right type.", expected=list(node.types), got=list(out_types), ref=ref.target)  # fmt: skip


def _canonical(call: ToolCall) -> str:
    return call.name + "\x00" + json.dumps(_unref(call.arguments), sort_keys=True, default=str)


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
    """The checklist for one set of tools; schemas are compiled on first use and reused.

    >>> from toolmend.schema import ToolCall
    >>> c = Checker([{"name": "add", "parameters": {"type": "object",
    ...     "properties": {"a": {"type": "integer"}}, "required": ["a"]}}])
    >>> [(f.code, f.path) for f in c.check([ToolCall(name="add", arguments={"a": 1, "b": 2})])]
    [('redundant_parameter', 'b')]

    ``tools`` may be :class:`~toolmend.Tool` objects or raw specs in any dialect
    :func:`toolmend.formats.tools.load_tool` understands.
    """

    def __init__(self, tools: Iterable[Tool | Mapping[str, Any]]) -> None:
        self._tools: dict[str, Tool] = {}
        for t in tools:
            tool = t if isinstance(t, Tool) else load_tool(t)
            self._tools[tool.name] = tool
        self._plans: dict[str, _Plan] = {}

    @property
    def tools(self) -> dict[str, Tool]:
        """The tools by name."""
        return self._tools

    def plan(self, name: str) -> _Plan | None:
        plan = self._plans.get(name)
        if plan is None:
            tool = self._tools.get(name)
            if tool is None:
                return None
            root = _Compiler(tool.parameters).node(tool.parameters)
            if root.properties is None:
                root.properties = {}
            extra = tool.parameters.get("additionalProperties")
            # A tool's own parameter list is closed even when empty: a tool without parameters
            # takes no arguments.
            root.closed = extra is not True and root.additional is None
            plan = _Plan(tool, root, tuple(tool.properties), _output_types(tool))
            self._plans[name] = plan
        return plan

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
        """Findings for one call on its own (no duplicate, count or reference-binding checks)."""
        out: list[Finding] = []
        self._check_call(call, index, out, None)
        return out

    def _bind(self, calls: list[ToolCall]) -> dict[str, tuple[int, tuple[str, ...]]] | None:
        if not any(c.outputs for c in calls):
            return None
        bound: dict[str, tuple[int, tuple[str, ...]]] = {}
        for i, call in enumerate(calls):
            plan = self.plan(call.name)
            types = plan.output_types if plan is not None else {}
            fields = call.output_fields or list(types)
            for j, name in enumerate(call.outputs):
                out_type = types.get(fields[j], ()) if j < len(fields) else ()
                bound.setdefault(name, (i, out_type))
        return bound

    def _check_call(
        self,
        call: ToolCall,
        index: int,
        out: list[Finding],
        bound: dict[str, tuple[int, tuple[str, ...]]] | None,
    ) -> None:
        plan = self.plan(call.name)
        if plan is None:
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
        _check_object(plan.root, call.arguments, (), _Ctx(index, call.name, out, bound))


def check(
    calls: Sequence[ToolCall | Mapping[str, Any]],
    tools: Iterable[Tool | Mapping[str, Any]],
    expected_count: int | None = None,
) -> list[Finding]:
    """Check ``calls`` against ``tools``; a one-shot :meth:`Checker.check` (compile-and-check).

    Reuse a :class:`Checker` when checking many outputs against the same tools.
    """
    return Checker(tools).check(calls, expected_count)
