"""Python call lists: ``[get_weather(city='Paris'), math.factorial(n=5)]`` (BFCL's prompt format).

Parsed with :mod:`ast` and converted node by node — **never evaluated**. Literal values
(strings, numbers including ``-1``, booleans, ``None``, lists, tuples → lists, dicts) become
argument values. Everything else is kept and reported:

- a positional argument → ``positional_argument`` finding; its value is kept in
  ``ParseResult.extras[i]["positional_args"]`` and in the finding's data (it has no name, so it
  cannot go into ``arguments``);
- a non-literal value (``2*3``, a bare name, an attribute, an f-string, a nested call) →
  ``invalid_value`` finding with the source text in ``data["source"]``. The argument value is
  the source text, except where the meaning is certain without evaluation: ``true``/``false``/
  ``null`` become JSON literals, and arithmetic on number literals is computed by a tiny safe
  interpreter (so ``2*3`` → 6, as BFCL's decoder gives; also in ``data["value"]``). A nested
  call with keyword arguments becomes ``{name: {kwargs}}`` and one with positional arguments its
  source text, as BFCL's decoder does;
- ``*args``/``**kwargs``, a repeated keyword, or a callee that is not a (dotted) name →
  ``invalid_format``.

The call list may be bare or in a fence. Prose around it is ``redundant_information``; in the
middle of a sentence ``f(x)`` is *not* taken as a call — a call must fill its line, be in a
``[...]`` list, or be the whole output.

>>> r = parse_python_calls("[math.factorial(n=5), f(1, x=2*3)]")
>>> [(c.name, c.arguments) for c in r.calls]
[('math.factorial', {'n': 5}), ('f', {'x': 6})]
>>> sorted(f.code for f in r.findings)
['invalid_value', 'positional_argument']
>>> write_python_calls(r.calls)
'[math.factorial(n=5), f(x=6)]'
"""

from __future__ import annotations

import ast
import bisect
import keyword
import math
import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolmend._errors import ConfigError
from toolmend._schema import ErrorCode, Finding, Ref, ToolCall
from toolmend.formats._lenient import split_fences
from toolmend.formats._result import ParseResult

__all__ = ["parse_python_calls", "write_python_calls", "format_python_value"]

_PY_LANGS = {"", "python", "py", "python3", "tool_code", "tool_call"}
# Bounded repetitions: an unbounded ``[\w.]*`` makes the scan quadratic on long words.
# A name starts only where no name character precedes it (the scan skips such starts anyway):
# without the lookbehind every letter of a long word is tried as a start, 200 characters each.
_START = re.compile(r"\[\s{0,20}[A-Za-z_][\w.]{0,200}\s{0,20}\(|(?<![\w.])[A-Za-z_][\w.]{0,200}\s{0,20}\(")
_MAX_UNCLOSED = 32
_ARG_START = re.compile(r"\s*(\)|[A-Za-z_]\w*\s*=[^=])")
_NAMED_LITERALS: dict[str, Any] = {"true": True, "false": False, "null": None, "none": None}
_BINOPS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}


@dataclass
class _Problem:
    code: ErrorCode
    message: str
    path: str = ""
    data: dict[str, Any] = field(default_factory=dict)


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base is not None else None
    return None


def _arith(node: ast.expr) -> int | float | None:
    """Value of arithmetic over number literals, or None; bounded so ``9**9**9`` cannot hang."""
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
    ):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        inner = _arith(node.operand)
        if inner is None:
            return None
        return -inner if isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = _arith(node.left), _arith(node.right)
        if left is None or right is None:
            return None
        if isinstance(node.op, ast.Pow) and (abs(right) > 64 or abs(left) > 1e6):
            return None
        try:
            out = _BINOPS[type(node.op)](left, right)
        except (ArithmeticError, ValueError):
            return None
        if isinstance(out, int | float) and not isinstance(out, bool):
            if isinstance(out, int) and abs(out) > 10**100:
                return None
            return out if not isinstance(out, float) or math.isfinite(out) else None
    return None


class _Converter:
    def __init__(self, source: str) -> None:
        self.source = source
        self.problems: list[_Problem] = []

    def text(self, node: ast.AST) -> str:
        return ast.get_source_segment(self.source, node) or ast.unparse(node)

    def value(self, node: ast.expr, path: str) -> Any:
        if isinstance(node, ast.Constant):
            v = node.value
            if v is None or isinstance(v, bool | int | float | str):
                return v
            return self._non_literal(node, path, f"{type(v).__name__} is not a JSON value")
        if isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant):
            num = node.operand.value
            if (
                isinstance(node.op, ast.USub | ast.UAdd)
                and isinstance(num, int | float)
                and not isinstance(num, bool)
            ):
                return -num if isinstance(node.op, ast.USub) else num
        if isinstance(node, ast.List | ast.Tuple):
            return [self.value(e, f"{path}[{i}]") for i, e in enumerate(node.elts)]
        if isinstance(node, ast.Dict):
            out: dict[Any, Any] = {}
            for key, item in zip(node.keys, node.values, strict=True):
                if not (isinstance(key, ast.Constant) and isinstance(key.value, str | int | float | bool)):
                    return self._non_literal(node, path, "a dict key that is not a literal")
                out[key.value] = self.value(item, f"{path}.{key.value}" if path else str(key.value))
            return out
        if isinstance(node, ast.Name) and node.id.lower() in _NAMED_LITERALS:
            literal = _NAMED_LITERALS[node.id.lower()]
            self.problems.append(
                _Problem(
                    "invalid_value",
                    f"bare name {node.id!r} read as {literal!r}",
                    path,
                    _src(node.id, literal),
                )
            )
            return literal
        if isinstance(node, ast.Call):
            return self._nested_call(node, path)
        computed = _arith(node)
        if computed is not None:
            self.problems.append(
                _Problem(
                    "invalid_value",
                    f"expression {self.text(node)!r} is not a literal; computed as {computed!r} without eval",
                    path,
                    _src(self.text(node), computed),
                )
            )
            return computed
        kind = "bare name" if isinstance(node, ast.Name) else "expression"
        return self._non_literal(node, path, f"{kind} is not a literal; kept as its source text")

    def _non_literal(self, node: ast.AST, path: str, why: str) -> str:
        src = self.text(node)
        self.problems.append(_Problem("invalid_value", f"{src!r}: {why}", path, {"source": src}))
        return src

    def _nested_call(self, node: ast.Call, path: str) -> Any:
        src = self.text(node)
        name = _dotted(node.func)
        if name is None or node.args or not node.keywords or any(k.arg is None for k in node.keywords):
            self.problems.append(
                _Problem("invalid_value", f"nested call {src!r} kept as source text", path, {"source": src})
            )
            return src
        inner = {str(k.arg): self.value(k.value, f"{path}.{k.arg}") for k in node.keywords}
        self.problems.append(
            _Problem(
                "invalid_value", f"nested call {src!r} read as {{{name!r}: {{...}}}}", path, {"source": src}
            )
        )
        return {name: inner}

    def call(self, node: ast.Call, result: ParseResult) -> None:
        self.problems = []
        name = _dotted(node.func)
        if name is None:
            result.flag(
                "invalid_format", f"{self.text(node.func)!r} is not a function name", source=self.text(node)
            )
            return
        arguments: dict[str, Any] = {}
        positional: list[Any] = []
        for i, arg in enumerate(node.args):
            src = self.text(arg)
            if isinstance(arg, ast.Starred):
                self.problems.append(
                    _Problem("invalid_format", f"unpacking {src!r} is not allowed", "", {"source": src})
                )
                continue
            value = self.value(arg, f"<positional {i}>")
            positional.append(value)
            self.problems.append(
                _Problem(
                    "positional_argument",
                    f"positional argument {i} ({src}) has no parameter name",
                    "",
                    {"index": i, "source": src, "value": value},
                )
            )
        for kw in node.keywords:
            if kw.arg is None:
                src = self.text(kw.value)
                self.problems.append(
                    _Problem("invalid_format", f"unpacking **{src} is not allowed", "", {"source": src})
                )
                continue
            if kw.arg in arguments:
                self.problems.append(
                    _Problem(
                        "invalid_format", f"keyword {kw.arg!r} given twice; the last value is kept", kw.arg
                    )
                )
            arguments[kw.arg] = self.value(kw.value, kw.arg)
        idx = result.add_call(
            name, {"positional_args": positional} if positional else {}, name=name, arguments=arguments
        )
        for p in self.problems:
            result.findings.append(_finding(p, idx))


def _src(source: str, value: Any) -> dict[str, Any]:
    return {"source": source, "value": value}


def _finding(p: _Problem, idx: int) -> Finding:
    return Finding(code=p.code, message=p.message, call=idx, path=p.path, data=p.data)


def _calls_of(tree: ast.AST) -> list[ast.Call] | None:
    """The calls a parsed snippet consists of, or None when it is anything else."""
    if isinstance(tree, ast.Expression):
        return _calls_of_expr(tree.body)
    if isinstance(tree, ast.Module) and tree.body:
        calls: list[ast.Call] = []
        for stmt in tree.body:
            got = _calls_of_expr(stmt.value) if isinstance(stmt, ast.Expr) else None
            if got is None:
                return None
            calls.extend(got)
        return calls
    return None


def _calls_of_expr(node: ast.expr) -> list[ast.Call] | None:
    if isinstance(node, ast.Call):
        return [node]
    if isinstance(node, ast.List | ast.Tuple) and all(isinstance(e, ast.Call) for e in node.elts):
        return [e for e in node.elts if isinstance(e, ast.Call)]
    return None


def _parse(snippet: str, mode: str) -> ast.AST | None:
    try:
        return ast.parse(snippet, mode=mode)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None


def _match_end(text: str, open_at: int) -> int | None:
    """Index after the bracket that closes ``text[open_at]``; None when it never closes."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    stack: list[str] = []
    quote: str | None = None
    i = open_at
    while i < len(text):
        c = text[i]
        if quote is not None:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c in pairs:
            stack.append(pairs[c])
        elif stack and c == stack[-1]:
            stack.pop()
            if not stack:
                return i + 1
        i += 1
    return None


class _Lines:
    """Line questions about ``text`` at increasing positions in amortised constant time (slicing
    back to the line start for every candidate is quadratic on one long degenerate line)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.newlines = [m.start() for m in _NEWLINE.finditer(text)]
        self.cursor = 0
        self.last_nonspace = -1

    def blank_before(self, start: int) -> bool:
        """Whether only whitespace precedes ``start`` on its line (``start`` never decreases)."""
        if start > self.cursor:
            seg = self.text[self.cursor : start]
            kept = len(seg.rstrip())
            if kept:
                self.last_nonspace = self.cursor + kept - 1
            self.cursor = start
        i = bisect.bisect_left(self.newlines, start)
        line_start = self.newlines[i - 1] + 1 if i else 0
        return self.last_nonspace < line_start

    def rest_is_blank(self, end: int) -> bool:
        """Whether at most one "," or ";" and whitespace follow ``end`` on its line."""
        i = bisect.bisect_left(self.newlines, end)
        line_end = self.newlines[i] if i < len(self.newlines) else len(self.text)
        m = _NONSPACE.search(self.text, end, line_end)
        if m is None:
            return True
        return m.group() in ",;" and _NONSPACE.search(self.text, m.end(), line_end) is None


_NEWLINE = re.compile("\n")
_NONSPACE = re.compile(r"\S")


def parse_python_calls(text: str) -> ParseResult:
    """Read Python-syntax tool calls from ``text``; never raises (see the module docs)."""
    result = ParseResult(format="none")
    fences, outside = split_fences(text)
    prose = [body for lang, body in fences if lang not in _PY_LANGS]
    for src in [*(body for lang, body in fences if lang in _PY_LANGS), outside]:
        prose.append(_scan(src.strip().strip("`").strip(), result))
    if result.calls:
        result.format = "python"
    leftover = "\n".join(p.strip() for p in prose if p.strip())
    result.text = leftover
    if result.calls and leftover:
        result.flag("redundant_information", "prose around the call(s)", text=leftover)
    return result


def _scan(src: str, result: ParseResult) -> str:
    """Take the calls out of ``src`` into ``result``; return the prose left."""
    if not src:
        return ""
    whole = src[1:-1] if len(src) > 1 and src[0] == src[-1] == "'" else src
    for mode in ("eval", "exec"):
        tree = _parse(whole, mode)
        calls = _calls_of(tree) if tree is not None else None
        if calls:
            conv = _Converter(whole)
            for node in calls:
                conv.call(node, result)
            return ""
    prose: list[str] = []
    pos = 0
    unclosed = 0
    lines = _Lines(src)
    for m in _START.finditer(src):
        start = m.start()
        if start < pos or (start > 0 and (src[start - 1].isalnum() or src[start - 1] in "_.")):
            continue
        listed = src[start] == "["
        if not listed and not lines.blank_before(start):
            continue
        end = _match_end(src, start if listed else m.end() - 1)
        if end is None:
            if listed or _ARG_START.match(src, m.end()):
                result.flag("invalid_format", "the output is cut off inside a call", source=src[start:])
                prose.append(src[pos:start])
                pos = len(src)
                break
            unclosed += 1
            if unclosed > _MAX_UNCLOSED:  # each one scanned to the end: stop before it gets quadratic
                break
            continue
        if not (listed or (lines.blank_before(start) and lines.rest_is_blank(end))):
            continue
        snippet = src[start:end]
        tree = _parse(snippet, "eval")
        calls = _calls_of(tree) if tree is not None else None
        if calls is None:
            result.flag(
                "invalid_format", "a call-like snippet is not valid Python call syntax", source=snippet
            )
        else:
            conv = _Converter(snippet)
            for node in calls:
                conv.call(node, result)
        prose.append(src[pos:start])
        pos = end
    prose.append(src[pos:])
    return "\n".join(p.strip() for p in prose if p.strip())


def format_python_value(value: Any) -> str:
    """A value as a Python literal (a :class:`Ref` as ``{'$ref': ...}``, revived on parse)."""
    if isinstance(value, Ref):
        return repr({"$ref": value.target})
    if isinstance(value, list | tuple):
        return "[" + ", ".join(format_python_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {format_python_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{value!r} has no Python literal form")
    if value is None or isinstance(value, bool | int | float | str):
        return repr(value)
    raise ConfigError(f"cannot write a {type(value).__name__} as a Python literal")


def _check_identifier(name: str, what: str) -> None:
    if not name.isidentifier() or keyword.iskeyword(name):
        raise ConfigError(f"{what} {name!r} cannot be written in Python call syntax")


def write_python_calls(calls: Sequence[ToolCall], *, brackets: bool = True) -> str:
    """Write calls as ``[f(a=1), g(b='x')]`` (``brackets=False``: one call per line).

    Raises ConfigError for a name or key that is not a Python identifier.
    """
    parts: list[str] = []
    for call in calls:
        for part in call.name.split("."):
            _check_identifier(part, "tool name")
        for key in call.arguments:
            _check_identifier(key, "argument")
        args = ", ".join(f"{k}={format_python_value(v)}" for k, v in call.arguments.items())
        parts.append(f"{call.name}({args})")
    return "[" + ", ".join(parts) + "]" if brackets else "\n".join(parts)
