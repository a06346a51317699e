"""Pulling the ``<reflect>`` / ``<tool_call>`` (or ``<call>``) / ``<final>`` parts out of a reply.

Two extractors live here, on purpose kept apart:

- :func:`official_calls` reproduces how the Tool-Reflection-Bench harness finds tool calls and
  format errors (one regex per ``<tool_call>`` block, plus its two "strict format" checks), so
  that compat scores match the published numbers, quirks included;
- :func:`split_reply` is the tolerant splitter behind the reward: it never raises, ignores
  garbled blocks, and accepts the paper's ``<call>[...]</call>`` as well as the data's
  ``<tool_call>{...}</tool_call>``; ``split_reply(text, released=True)`` reads calls the way the
  authors' released reward does instead (see :func:`released_calls`).

>>> parts = split_reply('<reflect>wrong id</reflect><tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>')
>>> parts.reflect, parts.calls
('wrong id', [{'name': 'f', 'arguments': {'a': 1}}])
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ReplyParts",
    "official_calls",
    "released_calls",
    "remove_think",
    "split_reply",
    "without_reflect",
]

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_BLANK_LINES = re.compile(r"\n\s*\n")

# The harness's own patterns (see notes/benchmarks.md §3): a lazy ``{.*?}`` per block, an
# "unclosed block" check and a "bare JSON call outside tags" check.
_OFFICIAL_BLOCK = re.compile(r"<tool_call>\s*({.*?})\s*</tool_call>", re.DOTALL)
_OFFICIAL_UNCLOSED = re.compile(r"<tool_call>\s*\{[^}]*$", re.DOTALL)
_OFFICIAL_BARE = re.compile(
    r'(?<!<tool_call>)\s*\{\s*"name"\s*:\s*"[^"]+"\s*,\s*"arguments"\s*:\s*\{[^}]*\}\s*\}(?!\s*</tool_call>)'
)

_REFLECT = re.compile(r"<reflect>(.*?)</reflect>", re.DOTALL | re.IGNORECASE)
_REFLECT_BLOCK = re.compile(r"<reflect>.*?</reflect>", re.DOTALL | re.IGNORECASE)
_FINAL = re.compile(r"<final>(.*?)</final>", re.DOTALL | re.IGNORECASE)
_CALL_BLOCK = re.compile(r"<(tool_call|call)>(.*?)</\1>", re.DOTALL | re.IGNORECASE)
_TOOL_CALL_BLOCK = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL | re.IGNORECASE)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")


def remove_think(text: str) -> str:
    """Drop ``<think>…</think>`` blocks and blank lines, as the harness does before scoring."""
    cleaned = _THINK.sub("", text)
    return _BLANK_LINES.sub("\n", cleaned).strip()


def without_reflect(text: str) -> str:
    """``text`` with its closed ``<reflect>…</reflect>`` blocks removed."""
    return _REFLECT_BLOCK.sub("", text)


def official_calls(text: str, *, strict_bare_check: bool = True) -> tuple[list[dict[str, Any]], list[str]]:
    """The harness's tool calls and format errors for one reply (Qwen ``<tool_call>`` format).

    A block counts when its JSON parses and has both ``name`` and ``arguments``; anything else
    is a format error, as are an unclosed ``<tool_call>{`` and a bare call outside tags.
    The harness's bare-call regex also fires on a *tagged* call whose arguments hold an object
    (``{"a": {"x": 1}}``); ``strict_bare_check=False`` runs it on the text outside the
    ``<tool_call>`` blocks instead, so only real bare calls count.
    """
    calls: list[dict[str, Any]] = []
    errors: list[str] = []
    for body in _OFFICIAL_BLOCK.findall(text):
        try:
            obj = json.loads(body)
        except (ValueError, RecursionError):
            errors.append(f"invalid JSON in tool call: {body[:80]}")
            continue
        if isinstance(obj, dict) and "name" in obj and "arguments" in obj:
            calls.append(obj)
        else:
            errors.append(f"tool call without name/arguments: {body[:80]}")
    if _OFFICIAL_UNCLOSED.search(text):
        errors.append("unclosed tool call")
    outside = text if strict_bare_check else _OFFICIAL_BLOCK.sub(" ", text)
    if _OFFICIAL_BARE.search(outside):
        errors.append("bare JSON tool call outside tags")
    return calls, errors


@dataclass
class ReplyParts:
    """A reply split into the reward's three parts; empty strings / lists where absent."""

    reflect: str = ""
    calls: list[dict[str, Any]] = field(default_factory=list)
    final: str = ""


def _as_call(obj: Any) -> dict[str, Any] | None:
    if not isinstance(obj, dict):
        return None
    name = obj.get("name")
    args = obj.get("arguments", obj.get("parameters"))
    if isinstance(name, str) and isinstance(args, dict):
        return {"name": name.strip(), "arguments": args}
    return None


def _first_object(body: str) -> Any:
    # The released reward's reading of a block: the whole body as JSON, else the first
    # brace-balanced {...} (braces inside strings ignored), forgiving one trailing comma.
    # Only that first object is tried: if it fails, the block yields nothing.
    body = body.strip()
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        pass
    start = body.find("{")
    while start != -1:
        depth, in_str, escaped = 0, False, False
        for j in range(start, len(body)):
            ch = body[j]
            if in_str:
                if escaped:
                    escaped = False
                elif ch == "\\":
                    escaped = True
                elif ch == '"':
                    in_str = False
            elif ch == '"':
                in_str = True
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    segment = body[start : j + 1]
                    for candidate in (segment, _TRAILING_COMMA.sub(r"\1", segment)):
                        try:
                            return json.loads(candidate)
                        except (ValueError, RecursionError):
                            continue
                    return None
        # Unbalanced from here: the next "{" gets its own try.
        start = body.find("{", start + 1)
    return None


def released_calls(text: str) -> list[dict[str, Any]]:
    """Tool calls as the authors' released reward reads them (Qwen format).

    Only ``<tool_call>`` blocks count (any case; not ``<call>``, not JSON lists); each gives the
    first JSON object found in it (see above), kept when ``name`` is a string and ``arguments``
    an object. Unlike :func:`split_reply`'s default, a block such as
    ``<tool_call>call: {"name": "f", "arguments": {}}</tool_call>`` counts, and one holding
    ``{"name": "f", "parameters": {}}`` does not.

    >>> released_calls('<tool_call>{"name": " f ", "arguments": {"a": 1},}</tool_call>')
    [{'name': 'f', 'arguments': {'a': 1}}]
    """
    calls: list[dict[str, Any]] = []
    for body in _TOOL_CALL_BLOCK.findall(text):
        obj = _first_object(body)
        if isinstance(obj, dict):
            name, args = obj.get("name"), obj.get("arguments")
            if isinstance(name, str) and isinstance(args, dict):
                calls.append({"name": name.strip(), "arguments": args})
    return calls


def split_reply(text: Any, *, released: bool = False) -> ReplyParts:
    """Split any value into reflect / calls / final; never raises.

    Only closed tags count (an unclosed block is as good as absent); a block whose JSON does
    not parse into ``{"name": str, "arguments": object}`` (or a list of them) is dropped.
    ``released=True`` reads the calls with :func:`released_calls` instead.
    """
    if not isinstance(text, str) or not text:
        return ReplyParts()
    cleaned = _THINK.sub("", text)
    parts = ReplyParts()
    m = _REFLECT.search(cleaned)
    if m:
        parts.reflect = m.group(1).strip()
    m = _FINAL.search(cleaned)
    if m:
        parts.final = m.group(1).strip()
    if released:
        parts.calls = released_calls(cleaned)
        return parts
    for _tag, body in _CALL_BLOCK.findall(cleaned):
        try:
            obj = json.loads(body)
        except (ValueError, RecursionError):
            continue
        for item in obj if isinstance(obj, list) else [obj]:
            call = _as_call(item)
            if call is not None:
                parts.calls.append(call)
    return parts
