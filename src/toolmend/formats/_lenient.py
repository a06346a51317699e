"""Tolerant reading of JSON-ish text as models write it.

The repair is deliberately small: it fixes what models commonly get wrong without guessing at
content, and it always says that it had to (the caller turns that into an ``invalid_format``
finding). What it does, in this order:

1. strict ``json.loads``                              → ``"json"``
2. ``ast.literal_eval`` (single quotes, ``True``/``None``, tuples, trailing commas)
   — a literal parser, never ``eval``                  → ``"python"``
3. a one-pass rewrite: single-quoted strings → double-quoted, ``True``/``False``/``None`` →
   JSON, trailing commas and ``//`` line comments dropped, raw control characters inside
   strings allowed                                     → ``"repaired"``

Truncated text is *not* completed: closing a cut-off object would invent a call.

>>> load_lenient('{"a": 1}')
({'a': 1}, 'json')
>>> load_lenient("{'a': True,}")
({'a': True}, 'python')
>>> load_lenient('{"a": true, "b": [1, 2,],}')
({'a': True, 'b': [1, 2]}, 'repaired')
"""

from __future__ import annotations

import ast
import functools
import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from toolmend._errors import ParseError

__all__ = ["LoadMethod", "Span", "find_spans", "load_lenient", "split_fences", "to_json_value"]

LoadMethod = Literal["json", "python", "repaired"]

_MAX_RESTARTS = 32
_OPEN = {"{": "}", "[": "]"}
_CLOSE = {"}", "]"}
# An opening fence starts a line (so "```" inside a JSON string on one line is not a fence).
_FENCE = re.compile(r"^[ \t]*```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n?(.*?)(?:```|\Z)", re.DOTALL | re.MULTILINE)
_WORDS = {"True": "true", "False": "false", "None": "null"}


def to_json_value(value: Any) -> Any:
    """Turn a Python literal into plain JSON data (tuples → lists); raise ParseError (a ValueError) otherwise."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value
    if isinstance(value, list | tuple):
        return [to_json_value(v) for v in value]
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for k, v in value.items():
            if not isinstance(k, str | int | float | bool) and k is not None:
                raise ParseError(f"dict key {k!r} is not a JSON key")
            out[k if isinstance(k, str) else json.dumps(k)] = to_json_value(v)
        return out
    raise ParseError(f"{type(value).__name__} is not a JSON value")


def load_lenient(text: str) -> tuple[Any, LoadMethod]:
    """Parse ``text`` as JSON, a Python literal or lightly repaired JSON.

    Returns the value and how it was read; raises ParseError (a ValueError) when none of them works.
    """
    try:
        return json.loads(text), "json"
    except (ValueError, RecursionError):
        pass
    try:
        return to_json_value(ast.literal_eval(text.strip())), "python"
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        pass
    try:
        repaired = _repair(text)
        return json.loads(repaired, strict=False), "repaired"
    except (ValueError, RecursionError):
        pass
    raise ParseError("not JSON, not a Python literal, and not repairable")


def _repair(text: str) -> str:
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"' or c == "'":
            body, i = _read_string(text, i)
            out.append(json.dumps(body))
            continue
        if c == "/" and text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
            continue
        if c == ",":
            j = i + 1
            while j < n and text[j].isspace():
                j += 1
            if j < n and text[j] in _CLOSE:
                i += 1
                continue
        if c.isalpha() or c == "_":
            j = i
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            word = text[i:j]
            out.append(_WORDS.get(word, word))
            i = j
            continue
        out.append(c)
        i += 1
    return "".join(out)


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "/": "/", "\\": "\\", '"': '"', "'": "'"}


def _read_string(text: str, start: int) -> tuple[str, int]:
    """Read a quoted string starting at ``start``; return its value and the index after it."""
    quote = text[start]
    chars: list[str] = []
    i = start + 1
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2 : i + 6]):
                chars.append(chr(int(text[i + 2 : i + 6], 16)))
                i += 6
                continue
            chars.append(_ESCAPES.get(nxt, "\\" + nxt))
            i += 2
            continue
        if c == quote:
            return "".join(chars), i + 1
        chars.append(c)
        i += 1
    raise ParseError("unterminated string")


@dataclass(frozen=True)
class Span:
    """A bracketed region of text: ``text[start:end]``; ``closed`` is False when cut off."""

    start: int
    end: int
    closed: bool


def find_spans(text: str, openers: str = "{[") -> list[Span]:
    """Top-level balanced ``{…}`` / ``[…]`` regions of ``text``, string-aware, in order.

    A region that never closes (a truncated output) is returned with ``closed=False`` and the
    scan restarts after its opener, so a stray ``{`` in prose does not hide a later call; the
    regions found after such a restart lie inside the unclosed one and are listed too.

    >>> [(s.start, s.end, s.closed) for s in find_spans('say {"a": "}"} and [1, [2]] {x')]
    [(4, 14, True), (19, 27, True), (28, 30, False)]
    """
    spans: list[Span] = []
    # Where the bracket opened at each position closes (None: never), from the scans so far. A
    # restart at an opener that an earlier scan met outside a string reads its answer here: from
    # that opener on, that scan saw the same quotes and, above the opener, the same stack.
    # Without it, every restart scans to the end again (33 passes over a run of "{").
    closes: dict[int, int | None] = {}
    pos, restarts = 0, 0
    n = len(text)
    while pos < n:
        start = _next_opener(text, pos, openers)
        if start < 0:
            break
        if start + 1 < n and text[start + 1] == _OPEN[text[start]]:
            end: int | None = start + 2  # "{}" or "[]": the common degenerate case, without a scan
        else:
            end = closes[start] if start in closes else _scan(text, start, closes)
        if end is None:
            spans.append(Span(start, n, False))
            restarts += 1
            if restarts > _MAX_RESTARTS:
                break
            pos = start + 1
        else:
            spans.append(Span(start, end, True))
            pos = end
    return sorted(spans, key=lambda s: s.start)


def _scan(text: str, start: int, closes: dict[int, int | None]) -> int | None:
    """The end of the balanced region opened at ``start`` (None when it never closes), string-
    aware; records in ``closes`` where every bracket it meets outside strings closes."""
    stack: list[tuple[str, int]] = []
    n = len(text)
    i = start
    quote: str | None = None
    while i < n:
        c = text[i]
        if quote is not None:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = None
            i += 1
            continue
        if c == '"' or (c == "'" and _opens_single_quote(text, i)):
            quote = c
        elif c in _OPEN:
            stack.append((_OPEN[c], i))
        elif c in _CLOSE and stack and c == stack[-1][0]:
            closes[stack.pop()[1]] = i + 1
            if not stack:
                return i + 1
        i += 1
    for _, at in stack:
        closes[at] = None
    return None


def _next_opener(text: str, pos: int, openers: str) -> int:
    """The first of ``openers`` at or after ``pos`` (-1: none); one search that stops at the
    first hit (a ``str.find`` per opener would scan to the end for one that never occurs, on
    every call: quadratic over many small spans)."""
    m = _opener_pattern(openers).search(text, pos)
    return m.start() if m else -1


@functools.cache
def _opener_pattern(openers: str) -> re.Pattern[str]:
    return re.compile(f"[{re.escape(openers)}]")


def _opens_single_quote(text: str, i: int) -> bool:
    # An apostrophe between letters ("don't") is prose, not a Python string delimiter.
    before = text[i - 1] if i > 0 else " "
    after = text[i + 1] if i + 1 < len(text) else " "
    return not (before.isalnum() and after.isalnum())


def split_fences(text: str) -> tuple[list[tuple[str, str]], str]:
    """Markdown code fences in ``text``: ``([(language, body), ...], text outside the fences)``.

    An opening fence must start a line; an unclosed fence runs to the end of the text (models
    are often cut off inside one).

    >>> split_fences('Here:\\n```json\\n{"a": 1}\\n```\\nbye')
    ([('json', '{"a": 1}\\n')], 'Here:\\n\\nbye')
    """
    blocks: list[tuple[str, str]] = []
    outside: list[str] = []
    pos = 0
    for m in _FENCE.finditer(text):
        outside.append(text[pos : m.start()])
        blocks.append((m.group(1).lower(), m.group(2)))
        pos = m.end()
    outside.append(text[pos:])
    return blocks, "".join(outside)
