"""Turning a model's raw BFCL answer into calls, the way BFCL's evaluator reads it — without ``eval``.

Two output styles are understood:

- **prompting mode** (BFCL's default Python syntax): ``[func(a=1), mod.func(b='x')]``. The text
  is read like BFCL's default prompting decoder: backticks, newlines and spaces are stripped from
  both ends, ``[``/``]`` are added when missing, wrapping single quotes are stripped, the rest
  goes through :func:`ast.parse`; only keyword arguments are kept (positional ones are dropped
  silently, as BFCL does) and dotted names are rebuilt.
- **function-calling mode**: a JSON list of ``{name: arguments}`` (arguments a JSON string or an
  object, as BFCL's FC handlers store them), a list of OpenAI ``tool_calls``, or an assistant
  message holding ``tool_calls``.

The decoded form is BFCL's: ``[{name: {param: value}}]``.

One deliberate difference from BFCL: where BFCL passes an arithmetic expression (``BinOp``) to
``eval()``, we compute it with a small evaluator that only accepts literal operands (numbers,
strings, lists, tuples) and refuses huge results. ``x=2*3`` still gives 6 and ``0.1+0.2`` still
gives 0.30000000000000004, but an expression naming a variable or calling a function (which
BFCL's ``eval`` runs in its own module namespace) fails to decode here. ``Lambda`` values fail
in both (BFCL's handling of them always raises).

>>> decode("[get_weather(city='Paris', days=2*3)]").calls
[{'get_weather': {'city': 'Paris', 'days': 6}}]
>>> decode('[{"get_weather": {"city": "Paris"}}]').calls
[{'get_weather': {'city': 'Paris'}}]
>>> decode("Sorry, I cannot help with that.").ok
False
"""

from __future__ import annotations

import ast
import json
import logging
import operator
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from toolmend._errors import ParseError
from toolmend._schema import ToolCall
from toolmend.benchmarks._base import Mode

__all__ = [
    "DecodeResult",
    "Outcome",
    "classify_output",
    "decode",
    "decode_fc",
    "decode_python",
    "is_call_list",
    "is_empty_output",
    "render_fc",
    "render_openai",
    "render_python",
]

log = logging.getLogger(__name__)

Decoded = list[dict[str, Any]]
"""BFCL's decoded form: ``[{function_name: {param: value}}]``."""

Outcome = Literal["call", "abstained", "text", "malformed"]
"""What a reply amounts to on an irrelevance sample: a well-formed call, an explicit empty
answer, a plain-text answer, or an attempted call that does not parse."""


class DecodeError(ParseError):
    """A reply that cannot be read as calls (data, not misuse: callers turn it into a score)."""


@dataclass(frozen=True)
class DecodeResult:
    """The outcome of decoding one reply: ``calls`` in BFCL's form, or ``error`` when it failed."""

    calls: Decoded | None
    error: str | None = None
    style: Literal["python", "fc"] = "python"
    well_formed: bool = field(default=True)
    """Whether ``calls`` has BFCL's shape (a list of single-key dicts of dicts)."""

    @property
    def ok(self) -> bool:
        """Decoding succeeded (the calls may still be malformed; see ``well_formed``)."""
        return self.calls is not None


# ---------------------------------------------------------------------------------------------
# safe arithmetic for BinOp values

_MAX_LEN = 10_000
_MAX_BITS = 4_096

_BINOPS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
    ast.BitOr: operator.or_,
    ast.BitAnd: operator.and_,
    ast.BitXor: operator.xor,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
    ast.Invert: operator.invert,
    ast.Not: operator.not_,
}
_LITERALS = (int, float, complex, str, bool)


def _guard(op: type[ast.operator], left: Any, right: Any) -> None:
    # Refuse what would take unbounded time or memory; BFCL's eval would just try.
    if (
        op is ast.Pow
        and isinstance(left, int)
        and isinstance(right, int)
        and (abs(right) > 1_000 or (right > 0 and abs(left).bit_length() * right > _MAX_BITS))
    ):
        raise DecodeError("exponentiation result too large")
    if op is ast.LShift and isinstance(right, int) and right > _MAX_BITS:
        raise DecodeError("shift result too large")
    if op is ast.Mult:
        for seq, n in ((left, right), (right, left)):
            if isinstance(seq, str | list | tuple) and isinstance(n, int) and len(seq) * n > _MAX_LEN:
                raise DecodeError("repeated sequence too long")


def safe_arith(node: ast.AST) -> Any:
    """Value of an expression built only from literals and arithmetic; :class:`DecodeError` else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, _LITERALS):
        return node.value
    if isinstance(node, ast.List):
        return [safe_arith(e) for e in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(safe_arith(e) for e in node.elts)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](safe_arith(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = safe_arith(node.left), safe_arith(node.right)
        _guard(type(node.op), left, right)
        try:
            return _BINOPS[type(node.op)](left, right)
        except (ArithmeticError, TypeError, ValueError) as exc:
            raise DecodeError(f"cannot compute {ast.unparse(node)!r}: {exc}") from exc
    raise DecodeError(f"only arithmetic on literals is computed, not {type(node).__name__}")


# ---------------------------------------------------------------------------------------------
# prompting mode (Python call syntax)


def _call_name(node: ast.Call) -> str:
    parts: list[str] = []
    func: ast.AST = node.func
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    # Any other base (a call, a subscript) contributes nothing, as in BFCL.
    return ".".join(reversed(parts))


def _resolve_call(node: ast.Call, mode: Mode) -> dict[str, Any]:
    args: dict[str, Any] = {}
    for kw in node.keywords:
        # ``**kwargs`` has no name; BFCL stores it under None, which no schema declares either.
        args[kw.arg if kw.arg is not None else "**"] = _resolve_value(kw.value, mode)
    return {_call_name(node): args}


def _resolve_value(node: ast.AST, mode: Mode) -> Any:
    if isinstance(node, ast.Constant):
        return "..." if node.value is Ellipsis else node.value
    if isinstance(node, ast.UnaryOp):
        if mode == "improved":
            return safe_arith(node)
        # BFCL negates the operand's literal whatever the operator is (so ``+5`` reads as -5).
        if not isinstance(node.operand, ast.Constant):
            raise DecodeError(f"unsupported unary operand {type(node.operand).__name__}")
        literal: Any = node.operand.value
        try:
            return -literal
        except TypeError as exc:
            raise DecodeError(f"cannot negate {node.operand.value!r}") from exc
    if isinstance(node, ast.List):
        return [_resolve_value(e, mode) for e in node.elts]
    if isinstance(node, ast.Dict):
        out: dict[Any, Any] = {}
        for k, v in zip(node.keys, node.values, strict=True):
            if k is None:
                raise DecodeError("dict unpacking is not a value")
            key = _resolve_value(k, mode)
            try:
                out[key] = _resolve_value(v, mode)
            except TypeError as exc:  # an unhashable key such as a list
                raise DecodeError(f"unusable dict key {key!r}") from exc
        return out
    if isinstance(node, ast.BinOp):
        return safe_arith(node)
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call):
        return ast.unparse(node) if not node.keywords else _resolve_call(node, mode)
    if isinstance(node, ast.Tuple):
        return tuple(_resolve_value(e, mode) for e in node.elts)
    if isinstance(node, ast.Subscript):
        return f"{ast.unparse(node.value)}[{ast.unparse(node.slice)}]"
    raise DecodeError(f"unsupported value syntax {type(node).__name__}")


def decode_python(text: str, mode: Mode = "compat") -> Decoded:
    """Decode a Python-syntax call list; raises :class:`DecodeError` where BFCL's decoder fails.

    >>> decode_python("```[math.factorial(number=5)]```")
    [{'math.factorial': {'number': 5}}]
    """
    body = text.strip("`\n ")
    if not body.startswith("["):
        body = "[" + body
    if not body.endswith("]"):
        body = body + "]"
    body = body.strip().strip("'")
    try:
        tree = ast.parse(body, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise DecodeError(f"not Python call syntax: {exc}") from exc
    if isinstance(tree, ast.Call):
        return [_resolve_call(tree, mode)]
    elements = getattr(tree, "elts", None)
    if elements is None:
        raise DecodeError(f"expected a list of calls, got {type(tree).__name__}")
    calls: Decoded = []
    for elem in elements:
        if not isinstance(elem, ast.Call):
            raise DecodeError(f"list element is {type(elem).__name__}, not a call")
        calls.append(_resolve_call(elem, mode))
    return calls


# ---------------------------------------------------------------------------------------------
# function-calling mode (JSON)


def _fc_entries(data: Any) -> list[Any] | None:
    """The call entries of an FC-mode reply, or None when ``data`` is not one."""
    if isinstance(data, Mapping) and isinstance(data.get("tool_calls"), list):
        return list(data["tool_calls"])
    if not isinstance(data, list):
        return None
    if all(isinstance(e, Mapping) for e in data):
        return list(data)
    return None


def _fc_entry(entry: Mapping[str, Any], mode: Mode) -> tuple[str, Any] | None:
    fn = entry.get("function")
    if isinstance(fn, Mapping) and isinstance(fn.get("name"), str):
        return fn["name"], fn.get("arguments", {})
    if isinstance(entry.get("name"), str) and ("arguments" in entry or "parameters" in entry):
        return entry["name"], entry.get("arguments", entry.get("parameters"))
    if len(entry) == 1:
        ((name, args),) = entry.items()
        if isinstance(args, str | Mapping):
            return str(name), args
    elif mode == "compat" and entry:
        # BFCL's FC decoder names the call after the entry's first key, reads that key's value as
        # JSON, and ignores the other keys (found by the recorded-corpus comparison)
        name, args = next(iter(entry.items()))
        if isinstance(args, str):
            return str(name), args
    return None


def decode_fc(data: Any, mode: Mode = "compat") -> Decoded | None:
    """Decode a parsed FC-mode reply; None when ``data`` does not have an FC shape.

    Arguments given as a JSON string are parsed with :func:`json.loads` (a bad string raises
    :class:`DecodeError`, as BFCL's FC decoder does); what they parse to is kept even when it is
    not an object, so that the format check can reject it. In ``compat`` mode an entry with
    several keys is read as BFCL reads it: the first key names the call, the others are ignored;
    ``improved`` does not take such an entry for a call.

    >>> decode_fc([{"f": '{"a": 1}', "note": "x"}])
    [{'f': {'a': 1}}]
    >>> decode_fc([{"f": '{"a": 1}', "note": "x"}], "improved") is None
    True
    """
    entries = _fc_entries(data)
    if entries is None:
        return None
    pairs = [_fc_entry(e, mode) for e in entries]
    if any(p is None for p in pairs):
        return None
    calls: Decoded = []
    for pair in pairs:
        assert pair is not None
        name, args = pair
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except json.JSONDecodeError as exc:
                raise DecodeError(f"arguments of {name!r} are not JSON: {exc.msg}") from exc
        calls.append({name: dict(args) if isinstance(args, Mapping) else args})
    return calls


# ---------------------------------------------------------------------------------------------
# the front door


def is_call_list(decoded: Any) -> bool:
    """BFCL's format check: a list of ``{name: {params}}`` dicts with exactly one key each."""
    if type(decoded) is not list:
        return False
    return all(
        type(item) is dict and len(item) == 1 and type(next(iter(item.values()))) is dict for item in decoded
    )


def is_empty_output(decoded: Any) -> bool:
    """BFCL's "no call" test for (ir)relevance: not a call list, ``[]`` or ``[{}]``."""
    return not is_call_list(decoded) or len(decoded) == 0 or (len(decoded) == 1 and len(decoded[0]) == 0)


def decode(text: str, mode: Mode = "compat") -> DecodeResult:
    """Decode one raw reply in either style. Never raises.

    JSON that has an FC shape is read as FC output; everything else goes through the
    prompting-mode Python decoder.
    """
    if not isinstance(text, str):
        return DecodeResult(None, f"expected text, got {type(text).__name__}")
    stripped = text.strip()
    if stripped[:1] in ("[", "{"):
        try:
            data = json.loads(stripped)
        except (json.JSONDecodeError, RecursionError):
            data = None
        if data is not None:
            try:
                fc = decode_fc(data, mode)
            except DecodeError as exc:
                return DecodeResult(None, str(exc), style="fc")
            if fc is not None:
                return DecodeResult(fc, style="fc", well_formed=is_call_list(fc))
    try:
        calls = decode_python(text, mode)
    except DecodeError as exc:
        return DecodeResult(None, str(exc))
    except (RecursionError, MemoryError) as exc:  # pathological nesting in the reply: data
        return DecodeResult(None, f"{type(exc).__name__}: {exc}")
    except Exception as exc:  # a decoder must never take a run down, nor hide a bug
        log.warning("BFCL decoder failed unexpectedly: %s: %s", type(exc).__name__, exc, exc_info=True)
        return DecodeResult(None, f"{type(exc).__name__}: {exc}")
    return DecodeResult(calls, well_formed=is_call_list(calls))


_TAG = re.compile(r"<\s*/?\s*(tool_?call|toolcall|function_?call|functions?|invoke|call)\b", re.I)
_JSON_NAME = re.compile(r"[\"'](name|function)[\"']\s*:")
_JSON_ARGS = re.compile(r"[\"'](arguments|parameters|args)[\"']\s*:")
# Anchored at the start of a name: unanchored, a long run of word characters is rescanned from
# every position inside it (quadratic; 114 s on 100,000 letters).
_KW_CALL = re.compile(r"(?<![\w.])[A-Za-z_][\w.]*\s*\(\s*[A-Za-z_]\w*\s*=")


def classify_output(text: str, decoded: DecodeResult, tool_names: Iterable[str] = ()) -> Outcome:
    """Tell an abstention, a text answer, a well-formed call and a malformed call apart.

    A reply that fails to decode is ``"malformed"`` when it still looks like an attempted call
    (a tool-call tag, a JSON object with a name and arguments, ``name(key=...)`` syntax, or an
    offered tool's name followed by ``(``), and ``"text"`` otherwise.

    >>> classify_output("[]", decode("[]"))
    'abstained'
    >>> classify_output("<tool_call>{'name': 'f'", decode("<tool_call>{'name': 'f'"))
    'malformed'
    """
    if decoded.ok:
        if not decoded.well_formed:
            return "malformed"
        return "abstained" if is_empty_output(decoded.calls) else "call"
    if not isinstance(text, str) or not text.strip(" \n\t`"):
        return "abstained"
    if _TAG.search(text) or _KW_CALL.search(text):
        return "malformed"
    if _JSON_NAME.search(text) and _JSON_ARGS.search(text):
        return "malformed"
    for name in tool_names:
        if name and re.search(rf"(?<![\w.]){re.escape(name)}\s*\(", text):
            return "malformed"
    return "text"


# ---------------------------------------------------------------------------------------------
# rendering calls in either style (gold answers, synthetic predictions)


def render_python(calls: Iterable[ToolCall]) -> str:
    """Calls as a prompting-mode reply: ``[f(a=1), g(b='x')]``.

    >>> render_python([ToolCall(name="f", arguments={"a": 1, "b": "x"})])
    "[f(a=1, b='x')]"
    """
    parts = [f"{c.name}({', '.join(f'{k}={v!r}' for k, v in c.arguments.items())})" for c in calls]
    return "[" + ", ".join(parts) + "]"


def render_fc(calls: Iterable[ToolCall]) -> str:
    """Calls as BFCL stores FC-mode results: a JSON list of ``{name: arguments_json}``."""
    return json.dumps([{c.name: json.dumps(c.arguments)} for c in calls])


def render_openai(calls: Iterable[ToolCall]) -> str:
    """Calls as an OpenAI ``tool_calls`` JSON list."""
    return json.dumps(
        [
            {
                "id": c.id or f"call_{i}",
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
            }
            for i, c in enumerate(calls)
        ]
    )
