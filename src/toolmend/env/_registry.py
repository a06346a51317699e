"""A registry of executable Python tools, each with its :class:`~toolmend.Tool` spec.

The spec is built from the function itself: the signature gives the parameters (pydantic
turns the annotations — ``Literal`` enums, ``Annotated[int, Field(ge=1)]`` bounds, patterns,
nested models and lists — into JSON Schema), the return annotation gives ``Tool.returns``, and
a Google-style docstring gives the descriptions::

    tools = ToolRegistry()

    @tools.tool
    def weather_current(city: str, unit: Literal["c", "f"] = "c") -> Weather:
        '''Current weather in a city.

        Args:
            city: City name, e.g. "Lisbon".
            unit: Temperature unit.
        '''

Parameters named in ``inject`` (such as a world's ``state``) are left out of the spec and
supplied by the environment at call time. Tools defined elsewhere register with an explicit
spec through :meth:`ToolRegistry.add`.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, get_type_hints

from pydantic import BaseModel, TypeAdapter, create_model

from toolmend._errors import ConfigError, SpecError
from toolmend._schema import Tool

__all__ = ["RegisteredTool", "ToolRegistry", "schema_from_function"]

ToolFn = Callable[..., Any]


@dataclass
class RegisteredTool:
    """A tool spec and the function that executes it."""

    spec: Tool
    fn: ToolFn
    inject: frozenset[str] = frozenset()
    args_model: type[BaseModel] | None = None
    """Validates and coerces arguments for functions registered from their signature."""

    def invoke(self, arguments: dict[str, Any], context: dict[str, Any]) -> Any:
        """Call the function with ``arguments`` plus the injected context values.

        Raises pydantic's ``ValidationError`` when the arguments do not fit the signature.
        """
        if self.args_model is not None:
            validated = self.args_model.model_validate(arguments)
            values = validated.__dict__  # the validated fields, read without attribute lookups
            kwargs = {name: values[name] for name in validated.model_fields_set}
        else:
            kwargs = dict(arguments)
        for name in self.inject:
            if name not in context:
                raise ConfigError(f"tool {self.spec.name!r} needs {name!r} in the environment's context")
            kwargs[name] = context[name]
        return self.fn(**kwargs)


@dataclass
class ToolRegistry:
    """Name → executable tool. Iterating gives the names; :attr:`tools` the specs."""

    inject: frozenset[str] = frozenset()
    """Parameter names every decorated function receives from the environment's context."""
    _items: dict[str, RegisteredTool] = field(default_factory=dict)

    def tool(
        self,
        fn: ToolFn | None = None,
        *,
        name: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Any:
        """Decorator registering ``fn`` with a spec built from its signature and docstring.

        Use bare (``@tools.tool``) or with options (``@tools.tool(metadata={"cacheable": False})``).
        """

        def deco(f: ToolFn) -> ToolFn:
            spec, model = schema_from_function(f, name=name, inject=self.inject)
            if metadata:
                spec = spec.model_copy(update={"metadata": {**spec.metadata, **metadata}})
            self._put(RegisteredTool(spec=spec, fn=f, inject=self.inject, args_model=model))
            return f

        return deco(fn) if fn is not None else deco

    def add(self, spec: Tool, fn: ToolFn, *, inject: Iterable[str] = ()) -> None:
        """Register ``fn`` under an explicit spec; it is called with the arguments as keywords."""
        self._put(RegisteredTool(spec=spec, fn=fn, inject=frozenset(inject)))

    def _put(self, item: RegisteredTool) -> None:
        if item.spec.name in self._items:
            raise ConfigError(f"tool {item.spec.name!r} is already registered")
        self._items[item.spec.name] = item

    def get(self, name: str) -> RegisteredTool | None:
        """The registered tool called ``name``, if any."""
        return self._items.get(name)

    @property
    def tools(self) -> list[Tool]:
        """Every spec, in registration order."""
        return [item.spec for item in self._items.values()]

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$")
_SECTION = re.compile(r"^\s*(Returns|Raises|Yields|Examples?|Notes?):\s*$")
_ARG_LINE = re.compile(r"^\s+(\*{0,2}\w+)\s*(?:\([^)]*\))?:\s*(.*)$")


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Summary (text before the first section) and per-argument descriptions."""
    lines = inspect.cleandoc(doc).splitlines() if doc else []
    summary: list[str] = []
    args: dict[str, str] = {}
    mode, current = "summary", None
    for line in lines:
        if _ARGS_HEADER.match(line):
            mode = "args"
            continue
        if _SECTION.match(line):
            mode = "other"
            continue
        if mode == "summary":
            summary.append(line)
        elif mode == "args":
            m = _ARG_LINE.match("    " + line if not line.startswith(" ") else line)
            indent = len(line) - len(line.lstrip())
            if m and indent <= 4:
                current = m.group(1)
                args[current] = m.group(2).strip()
            elif current and line.strip():
                args[current] = f"{args[current]} {line.strip()}"
    return " ".join(" ".join(summary).split()), args


def _inline(schema: Any, defs: dict[str, Any]) -> Any:
    """Replace ``$ref`` with the definition and drop pydantic's titles, recursively.

    Tool specs are read by models and by checkers that do not resolve references, so every
    schema is made self-contained.
    """
    if isinstance(schema, dict):
        if "$ref" in schema:
            target = defs[schema["$ref"].rsplit("/", 1)[-1]]
            merged = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
            return _inline(merged, defs)
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key in ("title", "$defs"):
                continue
            if key == "properties" and isinstance(value, dict):
                out[key] = {k: _inline(v, defs) for k, v in value.items()}
            else:
                out[key] = _inline(value, defs)
        return _drop_optional_null(out)
    if isinstance(schema, list):
        return [_inline(v, defs) for v in schema]
    return schema


def _drop_optional_null(schema: dict[str, Any]) -> dict[str, Any]:
    # ``x: int | None = None`` means "optional", not "may be null": show the plain type.
    branches = schema.get("anyOf")
    if isinstance(branches, list) and len(branches) == 2 and {"type": "null"} in branches:
        rest = next(b for b in branches if b != {"type": "null"})
        merged = {**rest, **{k: v for k, v in schema.items() if k != "anyOf"}}
        if merged.get("default", 0) is None:
            merged.pop("default")
        return merged
    return schema


def _self_contained(schema: dict[str, Any]) -> dict[str, Any]:
    result = _inline(schema, schema.get("$defs", {}))
    assert isinstance(result, dict)
    return result


def schema_from_function(
    fn: ToolFn, *, name: str | None = None, inject: Iterable[str] = ()
) -> tuple[Tool, type[BaseModel]]:
    """The :class:`~toolmend.Tool` spec of ``fn`` and a pydantic model validating its arguments.

    >>> def add(a: int, b: int = 1) -> int:
    ...     '''Add two integers.
    ...
    ...     Args:
    ...         a: First addend.
    ...     '''
    ...     return a + b
    >>> spec, _ = schema_from_function(add)
    >>> spec.parameters["properties"]["a"], spec.required, spec.returns
    ({'type': 'integer', 'description': 'First addend.'}, ['a'], {'type': 'integer'})
    """
    skip = set(inject)
    tool_name = name or fn.__name__
    try:
        hints = get_type_hints(fn, include_extras=True)
    except NameError as exc:
        raise SpecError(f"tool {tool_name!r}: cannot resolve annotation ({exc})") from exc
    summary, arg_docs = _parse_docstring(inspect.getdoc(fn) or "")
    fields: dict[str, Any] = {}
    for pname, param in inspect.signature(fn).parameters.items():
        if pname in skip:
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise SpecError(f"tool {tool_name!r}: parameter {pname!r} must be a plain keyword parameter")
        if pname not in hints:
            raise SpecError(f"tool {tool_name!r}: parameter {pname!r} has no type annotation")
        default = ... if param.default is param.empty else param.default
        fields[pname] = (hints[pname], default)
    model = create_model(f"{tool_name}_args", **fields)
    params = _self_contained(model.model_json_schema())
    params.pop("description", None)
    params.setdefault("required", [])
    for pname, text in arg_docs.items():
        prop = params.get("properties", {}).get(pname)
        if isinstance(prop, dict) and text:
            # The docstring says what this parameter is for; a type's own description (a
            # shared ``Date`` type's format) follows it.
            own = prop.get("description")
            prop["description"] = f"{text} {own}" if own and own not in text else text
    params["properties"] = {k: _order(v) for k, v in params.get("properties", {}).items()}
    returns: dict[str, Any] | None = None
    ret = hints.get("return")
    if ret is not None and ret is not type(None):
        try:
            returns = _self_contained(TypeAdapter(ret).json_schema(mode="serialization"))
        except Exception as exc:  # pydantic raises several error types for unsupported types
            raise SpecError(f"tool {tool_name!r}: return type has no JSON Schema ({exc})") from exc
    spec = Tool(name=tool_name, description=summary, parameters=params, returns=returns)
    return spec, model


def _order(prop: dict[str, Any]) -> dict[str, Any]:
    # type first, description second: easier to read in prompts.
    head: dict[str, Any] = {k: prop[k] for k in ("type", "description") if k in prop}
    return {**head, **{k: v for k, v in prop.items() if k not in head}}
