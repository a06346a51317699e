"""The checker's fast path: a Python function generated per tool that proves a call clean.

Most calls an agent makes are clean, and a clean call needs no findings, only a yes. For each
tool's prepared schema (:mod:`toolmend.check.spec`) this module writes the yes/no test as plain
Python (``type(v) is str and v``, a frozenset lookup for an ``enum``) and compiles it once. It
answers ``True`` only when the full validator would report nothing; on ``False`` the checker
runs the full validator for the findings, so a ``False`` costs time, never correctness.

Keywords the generator does not write itself (``multipleOf``, ``if``, ``patternProperties`` ...)
are delegated, for that subschema, to the same jsonschema validator the full checker uses, so
the meaning never forks. A reference to an earlier call's output (:class:`toolmend.Ref`) is never
proved clean here: it needs the call list, which only the full checker has.
``tests/check/test_fast_path.py`` asserts with generated schemas and values that the two agree.

>>> from toolmend.check.spec import compile_parameters
>>> fast = compile_parameters("f", {"type": "object", "properties": {"n": {"type": "integer",
...     "minimum": 1}}, "required": ["n"]}).fast
>>> fast({"n": 2}), fast({"n": 0}), fast({"n": 2.0}), fast({})
(True, False, False, False)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from jsonschema._utils import equal

from toolmend.check.spec import NONEMPTY, ToolValidator

__all__ = ["build_fast_path"]

_PY = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (dict,),
    "null": (type(None),),
}
_WRITTEN = frozenset(
    {
        "type", "properties", "required", "additionalProperties", "items", "prefixItems", "enum",
        "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength",
        "maxLength", "pattern", "minItems", "maxItems", "$ref", "allOf", "anyOf", "oneOf", "not",
        NONEMPTY, "$defs", "definitions", "$id", "$schema", "$comment", "$anchor",
    }
)  # fmt: skip
_ASSERTING = frozenset(ToolValidator.VALIDATORS) - {"format"}  # formats are annotations here
_SCALARS = (str, int, float, bool, type(None))


def _plain(value: Any) -> bool:
    """Whether ``value`` is plain JSON data (no :class:`~toolmend.Ref` anywhere inside)."""
    kind = type(value)
    if kind in _SCALARS:
        return True
    if kind is dict:
        return all(_plain(v) for v in value.values())
    if kind is list or kind is tuple:
        return all(_plain(v) for v in value)
    return False


def _enum(value: Any, allowed: list[Any]) -> bool:
    return any(equal(e, value) for e in allowed)


class _Writer:
    def __init__(self, root: dict[str, Any], validator: Any) -> None:
        self.root = root
        self.validator = validator
        self.env: dict[str, Any] = {"_plain": _plain, "_enum": _enum, "_equal": equal, "_M": object()}
        self.defs: list[str] = []
        self.funcs: dict[int, str] = {}
        self.count = 0

    def name(self, prefix: str, value: Any = None) -> str:
        self.count += 1
        name = f"{prefix}{self.count}"
        if value is not None:
            self.env[name] = value
        return name

    def function(self, schema: Any) -> str:
        """The name of a generated ``def`` testing ``schema`` (memoised, so recursion works)."""
        key = id(schema)
        if key not in self.funcs:
            name = self.funcs[key] = self.name("s")
            body: list[str] = []
            self.emit(schema, "x", body, 1)
            self.defs.append("\n".join([f"def {name}(x):", *body, "    return True"]))
        return self.funcs[key]

    def emit(self, schema: Any, var: str, out: list[str], depth: int) -> None:
        pad = "    " * depth
        if schema is True:
            out.append(f"{pad}if not _plain({var}): return False")
            return
        if schema is False or not isinstance(schema, dict):
            out.append(f"{pad}return False")
            return
        if any(k in _ASSERTING and k not in _WRITTEN for k in schema) or (
            isinstance(schema.get("$ref"), str) and not schema["$ref"].startswith("#/")
        ):
            sub = self.name("v", self.validator.evolve(schema=schema).is_valid)
            out.append(f"{pad}if not (_plain({var}) and {sub}({var})): return False")
            return
        types = schema.get("type")
        names = [types] if isinstance(types, str) else types if isinstance(types, list) else None
        py: tuple[type, ...] = tuple(t for n in names or () for t in _PY[n])
        if py:
            only_str = py == (str,)
            if only_str and schema.get(NONEMPTY):
                out.append(f"{pad}if type({var}) is not str or not {var}: return False")
            else:
                allowed = self.name("t", frozenset(py))
                out.append(f"{pad}if type({var}) not in {allowed}: return False")
        elif not _covers(schema):
            out.append(f"{pad}if not _plain({var}): return False")
        if schema.get(NONEMPTY) and py != (str,):
            out.append(f'{pad}if {var} == "" and type({var}) is str: return False')
        self.values(schema, var, out, pad)
        if any(k in schema for k in ("properties", "required", "additionalProperties")):
            self.object(schema, var, out, depth)
        if any(k in schema for k in ("items", "prefixItems")) or (py and list in py):
            self.array(schema, var, out, depth)
        self.applicators(schema, var, out, depth)

    def values(self, schema: dict[str, Any], var: str, out: list[str], pad: str) -> None:
        if "enum" in schema:
            enum = schema["enum"]
            if all(type(e) is str for e in enum):
                allowed = self.name("e", frozenset(enum))
                out.append(f"{pad}if type({var}) is not str or {var} not in {allowed}: return False")
            else:
                out.append(f"{pad}if not _enum({var}, {self.name('e', list(enum))}): return False")
        if "const" in schema:
            out.append(f"{pad}if not _equal({var}, {self.name('c', [schema['const']])}[0]): return False")
        checks = []
        for key, op in (
            ("minimum", "<"),
            ("maximum", ">"),
            ("exclusiveMinimum", "<="),
            ("exclusiveMaximum", ">="),
        ):
            if key in schema:
                checks.append(f"{var} {op} {self.name('n', schema[key])}")
        if checks:
            nums = self.name("t", frozenset((int, float)))
            out.append(f"{pad}if type({var}) in {nums} and ({' or '.join(checks)}): return False")
        for key, op, kinds in (
            ("minLength", "<", "str"), ("maxLength", ">", "str"),
            ("minItems", "<", "list"), ("maxItems", ">", "list"),
        ):  # fmt: skip
            if key in schema:
                test = f"type({var}) is str" if kinds == "str" else f"type({var}) in {self._arrays()}"
                out.append(f"{pad}if {test} and len({var}) {op} {self.name('n', schema[key])}: return False")
        if "pattern" in schema:
            regex = self.name("p", re.compile(schema["pattern"]))
            out.append(f"{pad}if type({var}) is str and {regex}.search({var}) is None: return False")

    def _arrays(self) -> str:
        if "_ARR" not in self.env:
            self.env["_ARR"] = frozenset((list, tuple))
        return "_ARR"

    def object(self, schema: dict[str, Any], var: str, out: list[str], depth: int) -> None:
        pad, inner = "    " * depth, "    " * (depth + 1)
        props = schema.get("properties") or {}
        required = [r for r in schema.get("required", ()) if isinstance(r, str)]
        extra = schema.get("additionalProperties", True)
        out.append(f"{pad}if type({var}) is dict:")
        known = self.name("k", frozenset(props))
        if required:
            out.append(f"{inner}if not {self.name('r', frozenset(required))} <= {var}.keys(): return False")
        if extra is False:
            out.append(f"{inner}if not {var}.keys() <= {known}: return False")
        elif isinstance(extra, dict):
            key, item = self.name("q"), self.name("y")
            out.append(f"{inner}for {key}, {item} in {var}.items():")
            out.append(f"{inner}    if {key} not in {known}:")
            self.emit(extra, item, out, depth + 2)
        else:
            key, item = self.name("q"), self.name("y")
            out.append(f"{inner}for {key}, {item} in {var}.items():")
            out.append(f"{inner}    if {key} not in {known} and not _plain({item}): return False")
        for prop, sub in props.items():
            item = self.name("y")
            out.append(f"{inner}{item} = {var}.get({prop!r}, _M)")
            skip = "" if prop in required else f" and {item} is not None"
            out.append(f"{inner}if {item} is not _M{skip}:")
            body: list[str] = []
            self.emit(sub, item, body, depth + 2)
            out.extend(body or [f"{inner}    pass"])

    def array(self, schema: dict[str, Any], var: str, out: list[str], depth: int) -> None:
        pad, inner = "    " * depth, "    " * (depth + 1)
        prefix = schema.get("prefixItems") or []
        items = schema.get("items", True)
        out.append(f"{pad}if type({var}) in {self._arrays()}:")
        out.append(f"{inner}pass")
        for i, sub in enumerate(prefix):
            item = self.name("y")
            out.append(f"{inner}if len({var}) > {i}:")
            out.append(f"{inner}    {item} = {var}[{i}]")
            self.emit(sub, item, out, depth + 2)
        rest = f"{var}[{len(prefix)}:]" if prefix else var
        if items is False:
            out.append(f"{inner}if len({var}) > {len(prefix)}: return False")
        else:
            item = self.name("y")
            out.append(f"{inner}for {item} in {rest}:")
            body: list[str] = []
            self.emit(items, item, body, depth + 2)
            out.extend(body or [f"{inner}    pass"])

    def applicators(self, schema: dict[str, Any], var: str, out: list[str], depth: int) -> None:
        pad = "    " * depth
        ref = schema.get("$ref")
        if isinstance(ref, str):
            target = self.validator._resolver.lookup(ref).contents
            out.append(f"{pad}if not {self.function(target)}({var}): return False")
        for part in schema.get("allOf", ()):
            self.emit(part, var, out, depth)
        if "anyOf" in schema:
            tests = " or ".join(f"{self.function(p)}({var})" for p in schema["anyOf"])
            out.append(f"{pad}if not ({tests}): return False")
        if "oneOf" in schema:
            tests = " + ".join(f"{self.function(p)}({var})" for p in schema["oneOf"])
            out.append(f"{pad}if ({tests}) != 1: return False")
        if "not" in schema:
            out.append(f"{pad}if not _plain({var}) or {self.function(schema['not'])}({var}): return False")


def _covers(schema: dict[str, Any]) -> bool:
    """Whether the generated code checks every part of the value without a type (enum/const)."""
    return "enum" in schema or "const" in schema


def build_fast_path(schema: dict[str, Any], validator: Any) -> Callable[[Any], bool] | None:
    """A compiled test that is ``True`` only for arguments the full checker finds clean.

    ``None`` when the schema holds something the generator cannot write (an anchor reference).
    """
    writer = _Writer(schema, validator)
    try:
        entry = writer.function(schema)
    except Exception:  # an exotic reference: the full validator handles it alone
        return None
    source = "\n\n".join(writer.defs)
    namespace = dict(writer.env)
    try:
        code = compile(source, "<toolmend fast path>", "exec")
    except (SyntaxError, RecursionError, MemoryError):  # nesting beyond what Python compiles
        return None
    exec(code, namespace)  # noqa: S102 - generated by us; spec strings enter only as repr() literals
    test: Callable[[Any], bool] = namespace[entry]
    return test
