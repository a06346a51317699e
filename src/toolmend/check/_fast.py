"""The checker's fast path: a Python function generated per tool that proves a call clean.

Most calls an agent makes are clean, and a clean call needs no findings, only a yes. For each
tool's prepared schema (:mod:`toolmend.check._spec`) this module writes the yes/no test as plain
Python (``type(v) is str and v``, a frozenset lookup for an ``enum``) and compiles it once. It
answers ``True`` only when the full validator would report nothing; on ``False`` the checker
runs the full validator for the findings, so a ``False`` costs time, never correctness.

Keywords the generator does not write itself (``multipleOf``, ``if``, ``patternProperties`` ...)
are delegated, for that subschema, to the same jsonschema validator the full checker uses, so
the meaning never forks. A reference to an earlier call's output (:class:`toolmend.Ref`) is never
proved clean here: it needs the call list, which only the full checker has.
``tests/check/test_fast_path.py`` asserts with generated schemas and values that the two agree.

>>> from toolmend.check._spec import compile_parameters
>>> fast = compile_parameters("f", {"type": "object", "properties": {"n": {"type": "integer",
...     "minimum": 1}}, "required": ["n"]}).fast
>>> fast({"n": 2}), fast({"n": 0}), fast({"n": 2.0}), fast({})
(True, False, False, False)
"""

from __future__ import annotations

import builtins
import itertools
import math
from collections.abc import Callable
from typing import Any

from jsonschema._utils import equal

from toolmend.check._spec import LATEST, NONEMPTY, regex

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
# Types whose exact-type test the generator writes as ``type(v) is <name>``.
_NAMES = {str: "str", int: "int", float: "float", bool: "bool", list: "list", dict: "dict"}
_WRITTEN = frozenset(
    {
        "type", "properties", "required", "additionalProperties", "items", "prefixItems", "enum",
        "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength",
        "maxLength", "pattern", "minItems", "maxItems", "$ref", "allOf", "anyOf", "oneOf", "not",
        NONEMPTY, "$defs", "definitions", "$id", "$schema", "$comment", "$anchor",
    }
)  # fmt: skip
_SCALARS = (str, int, float, bool, type(None))
_SCALAR_SET = frozenset(_SCALARS)
_SHARED_TYPES = {frozenset((list, tuple)): "_ARR", frozenset((int, float)): "_NUM"}
_NAMES_USED = itertools.count(1)
# Every generated test lives in one module-like namespace rather than one per tool: a clean
# call then reads the globals (``type``, ``len``, the shared sets) from memory that every call
# keeps warm. It is replaced by a fresh one past _NAMESPACE_SIZE names, so that a long-running
# process compiling ever new tools holds only the tests still referenced.
_NAMESPACE_SIZE = 100_000
_namespaces: list[dict[str, Any]] = []


def _namespace() -> dict[str, Any]:
    if not _namespaces or len(_namespaces[-1]) > _NAMESPACE_SIZE:
        _namespaces[:] = [
            {
                "__builtins__": builtins,
                "_plain": _plain,
                "_enum": _enum,
                "_equal": equal,
                "_SC": _SCALAR_SET,
                "_HS": frozenset((str, int, float)),
                **{name: kinds for kinds, name in _SHARED_TYPES.items()},
            }
        ]
    return _namespaces[-1]


_BOUNDS = (("minimum", "<"), ("maximum", ">"), ("exclusiveMinimum", "<="), ("exclusiveMaximum", ">="))
_SIZES: tuple[tuple[str, str, tuple[type, ...]], ...] = (
    ("minLength", "<", (str,)), ("maxLength", ">", (str,)),
    ("minItems", "<", (list, tuple)), ("maxItems", ">", (list, tuple)),
)  # fmt: skip


def _plain(value: Any) -> bool:
    """Whether ``value`` is plain JSON data (no :class:`~toolmend.Ref` anywhere inside)."""
    kind = type(value)
    if kind is dict:
        values = value.values()
    elif kind is list or kind is tuple:
        values = value
    else:
        return kind in _SCALAR_SET
    for v in values:  # noqa: SIM110 - a loop, not all(<generator>): no generator frame per container
        if type(v) not in _SCALAR_SET and not _plain(v):
            return False
    return True


def _enum(value: Any, allowed: list[Any]) -> bool:
    return any(equal(e, value) for e in allowed)


_LATER_DRAFTS = (LATEST, "https://json-schema.org/draft/2019-09/schema")


class _Writer:
    def __init__(
        self, root: dict[str, Any], validator: Any, dialect: str = LATEST, *, unbound: bool = False
    ) -> None:
        self.root = root
        self.validator = validator
        self.dialect = dialect
        # Every keyword of the dialect that can fail a value; formats are annotations here.
        self.known = frozenset(validator.VALIDATORS)
        self.asserting = self.known - {"format"}
        self.old_refs = dialect not in _LATER_DRAFTS
        self.unbound = unbound
        self.walks = False
        self.env: dict[str, Any] = {}
        self.defs: list[str] = []
        self.funcs: dict[tuple[int, bool], str] = {}
        self.safe = False

    def name(self, prefix: str, value: Any = None) -> str:
        name = f"{prefix}{next(_NAMES_USED)}"  # unique across tools: they share a namespace
        if value is not None:
            self.env[name] = value
        return name

    def function(self, schema: Any, *, branch: bool = False) -> str:
        """The name of a generated ``def`` testing ``schema`` (memoised, so recursion works).

        A ``branch`` (of ``anyOf``, ``oneOf``, ``not``) must answer False rather than raise, so
        it tests required keys instead of reading them with ``[]``; so does all it calls.
        """
        safe = branch or self.safe
        key = (id(schema), safe)
        if key not in self.funcs:
            name = self.funcs[key] = self.name("s")
            body: list[str] = []
            outer, self.safe = self.safe, safe
            self.emit(schema, "x", body, 1)
            self.safe = outer
            self.defs.append("\n".join([f"def {name}(x):", *_drop_passes(body), "    return True"]))
        return self.funcs[key]

    def emit(self, schema: Any, var: str, out: list[str], depth: int) -> None:
        pad = "    " * depth
        if schema is True:
            test = self.plain(var)
            if test is not None:
                out.append(f"{pad}if {test}: return False")
            return
        if schema is False or not isinstance(schema, dict):
            out.append(f"{pad}return False")
            return
        # Draft 4: a boolean exclusiveMaximum is part of "maximum" (and no keyword of its own).
        legacy_bounds = any(isinstance(schema.get(k), bool) for k in ("exclusiveMinimum", "exclusiveMaximum"))
        whole = schema  # what the validator is handed, when it decides
        if self.old_refs and "$ref" in schema:
            schema = {"$ref": schema["$ref"]}  # drafts 4 to 7 ignore every keyword beside "$ref"
        elif self.dialect != LATEST:
            # A keyword of a later draft (``const`` in draft 4, ``prefixItems`` before
            # 2020-12) is no keyword of this one: the validator ignores it, so must this test.
            schema = {k: v for k, v in schema.items() if k in self.known or k not in _WRITTEN}
        if (
            any(k in self.asserting and k not in _WRITTEN for k in schema)
            or (isinstance(schema.get("$ref"), str) and not schema["$ref"].startswith("#/"))
            or isinstance(schema.get("items"), list)  # tuple items (drafts before 2020-12)
            or legacy_bounds
        ):
            sub = self.name("v", self.validator.evolve(schema=whole).is_valid)
            out.append(f"{pad}if not (_plain({var}) and {sub}({var})): return False")
            return
        types = schema.get("type")
        names = [types] if isinstance(types, str) else types if isinstance(types, list) else None
        py = tuple(dict.fromkeys(t for n in names or () for t in _PY[n]))
        # After a one-type test the generated code knows the value's exact type and drops guards.
        exact = py[0] if len(py) == 1 else None
        nonempty = bool(schema.get(NONEMPTY))
        enum = schema.get("enum")
        str_enum = isinstance(enum, list) and all(type(e) is str for e in enum)
        if exact is str and str_enum:
            # A string enum without "" already refuses the empty string and every other type.
            members = self.members(enum)
            out.append(f"{pad}if type({var}) is not str or {var} not in {members}: return False")
            enum = None
        elif exact is str and nonempty:
            out.append(f"{pad}if type({var}) is not str or not {var}: return False")
            nonempty = False
        elif exact is not None:
            out.append(f"{pad}if type({var}) is not {self._type(exact)}: return False")
        elif py:
            out.append(f"{pad}if type({var}) not in {self.types(py)}: return False")
        elif "enum" not in schema and "const" not in schema and (test := self.plain(var)) is not None:
            out.append(f"{pad}if {test}: return False")
        if py and set(py) <= {list, tuple}:
            exact = list  # an array, list or tuple alike: the tests below need no type guard
        if nonempty and exact is None:
            out.append(f'{pad}if {var} == "" and type({var}) is str: return False')
        if enum is not None:
            if isinstance(enum, list) and all(type(e) in (str, int, float) for e in enum):
                # Python's == on str, int and float is jsonschema's equality (1 == 1.0; "1" != 1);
                # only bool differs from it (True == 1), and bool is no member type here.
                members = self.members(enum)
                if exact in (str, int, float):
                    out.append(f"{pad}if {var} not in {members}: return False")
                else:
                    out.append(f"{pad}if type({var}) not in _HS or {var} not in {members}: return False")
            else:
                out.append(f"{pad}if not _enum({var}, {self.name('e', list(enum))}): return False")
        self.values(schema, var, out, pad, exact)
        objects = dict in py or any(k in schema for k in ("properties", "required", "additionalProperties"))
        if objects and exact in (None, dict):
            self.object(schema, var, out, depth, exact)
        if (list in py or any(k in schema for k in ("items", "prefixItems"))) and exact in (None, list):
            self.array(schema, var, out, depth, exact)
        self.applicators(schema, var, out, depth)

    def plain(self, var: str) -> str | None:
        """The test that a free-form ``var`` is *not* plain JSON (a scalar costs no call), or
        ``None`` where no call declares outputs: the full check then ignores references in
        free-form values, so the fast path need not walk them."""
        if self.unbound:
            return None
        self.walks = True
        return f"type({var}) not in _SC and not _plain({var})"

    def _guard(self, var: str, kinds: tuple[type, ...], exact: type | None) -> str | None:
        """The test that ``var`` is of ``kinds``: ``""`` when known true, ``None`` when known false."""
        if exact is not None:
            return "" if exact in kinds else None
        if len(kinds) == 1:
            return f"type({var}) is {self._type(kinds[0])}"
        return f"type({var}) in {self.types(kinds)}"

    def values(self, schema: dict[str, Any], var: str, out: list[str], pad: str, exact: type | None) -> None:
        if "const" in schema:
            out.append(f"{pad}if not _equal({var}, {self.name('c', [schema['const']])}[0]): return False")
        checks = []
        for key, op in _BOUNDS:
            if key in schema:
                checks.append(f"{var} {op} {self.name('n', schema[key])}")
        tests: list[tuple[tuple[type, ...], str]] = []
        if checks:
            tests.append(((int, float), " or ".join(checks)))
        for key, op, kinds in _SIZES:
            if key in schema:
                tests.append((kinds, f"len({var}) {op} {self.name('n', schema[key])}"))
        if "pattern" in schema:
            compiled = self.name("p", regex(schema["pattern"]))
            tests.append(((str,), f"{compiled}.search({var}) is None"))
        for kinds, test in tests:
            guard = self._guard(var, kinds, exact)
            if guard is not None:
                out.append(f"{pad}if {guard + ' and ' if guard else ''}({test}): return False")

    def object(
        self, schema: dict[str, Any], var: str, out: list[str], depth: int, exact: type | None
    ) -> None:
        if exact is None:
            out.append(f"{'    ' * depth}if type({var}) is dict:")
            depth += 1
        inner = "    " * depth
        props = schema.get("properties") or {}
        required = [r for r in schema.get("required", ()) if isinstance(r, str)]
        extra = schema.get("additionalProperties", True)
        out.append(f"{inner}pass")
        # A required property is read with ``[]``: a KeyError sends the call to the full check.
        for key in required:
            if key not in props:
                out.append(f"{inner}if {key!r} not in {var}: return False")
        counter = None
        if extra is False:
            # Every required property is read below, so a count equal to theirs plus the optional
            # ones given proves that no other key is there. Up to four optional ones are counted
            # here; more are counted where each is looked up below (no pass over them all).
            count = sum(1 for key in set(required) if key in props)
            optional = [key for key in props if key not in required]
            if len(optional) <= 4:
                given = "".join(f" + ({key!r} in {var})" for key in optional)
                out.append(f"{inner}if len({var}) != {count}{given}: return False")
            else:
                counter = self.name("n")
                out.append(f"{inner}{counter} = {count}")
        elif isinstance(extra, dict):
            key, item = self.name("q"), self.name("y")
            out.append(f"{inner}for {key}, {item} in {var}.items():")
            out.append(f"{inner}    if {key} not in {self.members(list(props))}:")
            out.append(f"{inner}        pass")
            self.emit(extra, item, out, depth + 2)
        elif (test := self.plain(item := self.name("y"))) is not None:
            if props:
                key = self.name("q")
                out.append(f"{inner}for {key}, {item} in {var}.items():")
                out.append(f"{inner}    if {key} not in {self.members(list(props))} and {test}: return False")
            else:  # a free-form object: only its values matter
                out.append(f"{inner}for {item} in {var}.values():")
                out.append(f"{inner}    if {test}: return False")
        for prop, sub in props.items():
            item = self.name("y")
            # ``in`` and ``[]`` rather than ``.get()``: two specialised operations, no method call.
            if prop in required:
                if self.safe:
                    out.append(f"{inner}if {prop!r} not in {var}: return False")
                out.append(f"{inner}{item} = {var}[{prop!r}]")
                self.emit(sub, item, out, depth)
                continue
            out.append(f"{inner}if {prop!r} in {var}:")
            if counter is not None:
                out.append(f"{inner}    {counter} += 1")
            start = len(out)
            out.append(f"{inner}    {item} = {var}[{prop!r}]")
            out.append(f"{inner}    if {item} is not None:")
            out.append(f"{inner}        pass")
            self.emit(sub, item, out, depth + 2)
            if len(out) == start + 3:  # nothing to test: any value will do
                del out[start - (counter is None) :]
        if counter is not None:
            out.append(f"{inner}if len({var}) != {counter}: return False")

    def array(self, schema: dict[str, Any], var: str, out: list[str], depth: int, exact: type | None) -> None:
        if exact is None:
            out.append(f"{'    ' * depth}if type({var}) in {self._arrays()}:")
            depth += 1
        inner = "    " * depth
        prefix = schema.get("prefixItems") or []
        items = schema.get("items", True)
        out.append(f"{inner}pass")
        for i, sub in enumerate(prefix):
            item = self.name("y")
            out.append(f"{inner}if len({var}) > {i}:")
            out.append(f"{inner}    {item} = {var}[{i}]")
            self.emit(sub, item, out, depth + 1)
        if items is False:
            out.append(f"{inner}if len({var}) > {len(prefix)}: return False")
        else:
            item = self.name("y")
            rest = f"{var}[{len(prefix)}:]" if prefix else var
            out.append(f"{inner}for {item} in {rest}:")
            out.append(f"{inner}    pass")
            self.emit(items, item, out, depth + 1)

    def types(self, kinds: tuple[type, ...]) -> str:
        """The name of a frozenset of ``kinds``, one per distinct set."""
        key = frozenset(kinds)
        name = _SHARED_TYPES.get(key)
        if name is None:
            name = self.name("t", key)
        return name

    def members(self, values: list[Any]) -> str:
        """A set of str, int or float values for ``in`` tests: a set literal, which Python
        compiles to a frozenset constant (no name to look up), where every value has one."""
        if values and all(type(v) is not float or math.isfinite(v) for v in values):
            return "{" + ", ".join(repr(v) for v in dict.fromkeys(values)) + "}"
        return self.name("e", frozenset(values))

    def _type(self, kind: type) -> str:
        return _NAMES.get(kind) or self.name("t", kind)

    def _arrays(self) -> str:
        return "_ARR"

    def applicators(self, schema: dict[str, Any], var: str, out: list[str], depth: int) -> None:
        pad = "    " * depth
        ref = schema.get("$ref")
        if isinstance(ref, str):
            target = self.validator._resolver.lookup(ref).contents
            out.append(f"{pad}if not {self.function(target)}({var}): return False")
        for part in schema.get("allOf", ()):
            self.emit(part, var, out, depth)
        if "anyOf" in schema:
            tests = " or ".join(f"{self.function(p, branch=True)}({var})" for p in schema["anyOf"])
            out.append(f"{pad}if not ({tests}): return False")
        if "oneOf" in schema:
            tests = " + ".join(f"{self.function(p, branch=True)}({var})" for p in schema["oneOf"])
            out.append(f"{pad}if ({tests}) != 1: return False")
        if "not" in schema:
            out.append(
                f"{pad}if not _plain({var}) or {self.function(schema['not'], branch=True)}({var}): return False"
            )


Test = Callable[[Any], bool]


def _drop_passes(body: list[str]) -> list[str]:
    """``body`` without the ``pass`` lines that open blocks which got statements after all
    (each would cost a NOP per call)."""
    out = []
    for i, line in enumerate(body):
        if line.strip() == "pass" and i + 1 < len(body):
            after = body[i + 1]
            if len(after) - len(after.lstrip()) >= len(line) - len(line.lstrip()):
                continue
        out.append(line)
    return out


def build_fast_path(
    schema: dict[str, Any], validator: Any, dialect: str = LATEST
) -> tuple[Test | None, Test | None]:
    """Compiled tests that are ``True`` only for arguments the full checker finds clean: one for
    any call list, and one for a list in which no call declares outputs (references are then not
    bound, so free-form values need not be searched for them; the same test where none are).

    ``None`` when the schema holds something the generator cannot write (an anchor reference).
    """
    bound = _build(_Writer(schema, validator, dialect))
    if bound is None or not bound[1].walks:
        return (bound[0], bound[0]) if bound is not None else (None, None)
    unbound = _build(_Writer(schema, validator, dialect, unbound=True))
    return bound[0], unbound[0] if unbound is not None else None


def _build(writer: _Writer) -> tuple[Test, _Writer] | None:
    try:
        entry = writer.function(writer.root)
    except Exception:  # an exotic reference: the full validator handles it alone
        return None
    source = "\n\n".join(writer.defs)
    try:
        code = compile(source, "<toolmend fast path>", "exec")
    except (SyntaxError, RecursionError, MemoryError):  # nesting beyond what Python compiles
        return None
    namespace = _namespace()
    namespace.update(writer.env)
    exec(code, namespace)  # noqa: S102 - generated by us; spec strings enter only as repr() literals
    test: Test = namespace[entry]
    return test, writer
