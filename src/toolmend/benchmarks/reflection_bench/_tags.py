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

import bisect
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

_BLANK_LINES = re.compile(r"\n\s*\n")

# The harness's own patterns (see notes/benchmarks.md §3): a lazy ``{.*?}`` per block, an
# "unclosed block" check and a "bare JSON call outside tags" check. They are run here by
# :func:`_lazy_blocks` and the linear forms below, which find exactly what the regexes
# ``<tool_call>\s*({.*?})\s*</tool_call>``, ``<tool_call>\s*\{[^}]*$`` and the bare-call pattern
# find: run as regexes, each rescans the rest of the text from every unclosed opener, which is
# quadratic on a model's degenerate repetition (minutes on 100 KB of "<tool_call>").
_OFFICIAL_OPEN = re.compile(r"<tool_call>\s*\{")
_OFFICIAL_CLOSE = re.compile(r"\}\s*</tool_call>")
# The bare-call pattern of the harness is
#   (?<!<tool_call>)\s*\{\s*"name"\s*:\s*"[^"]+"\s*,\s*"arguments"\s*:\s*\{[^}]*\}\s*\}(?!\s*</tool_call>)
# Each part can match in one way only, so it is found as: a head (every start, overlapping ones
# included), then the first "}" after the head, then the rest. (The leading \s* only moves the
# start, so it drops out: a "{" directly after the tag is refused, one after whitespace is not.)
_BARE_HEAD = re.compile(r'(?<!<tool_call>)(?=(\{\s*"name"\s*:\s*"[^"]+"\s*,\s*"arguments"\s*:\s*\{))')
_BARE_TAIL = re.compile(r"\}\s*\}(?!\s*</tool_call>)")
_TRAILING_COMMA = re.compile(r",\s*([}\]])")


def _tag(name: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    return re.compile(f"<({name})>", re.I), re.compile(f"</({name})>", re.I)


_THINK = _tag("think")
_REFLECT = _tag("reflect")
_FINAL = _tag("final")
_CALL = _tag("tool_call|call")
_TOOL_CALL = _tag("tool_call")


def _lazy_blocks(text: str, tag: tuple[re.Pattern[str], re.Pattern[str]]) -> list[tuple[int, int, int, int]]:
    """``(start, body start, body end, end)`` of each block that ``<(t)>(.*?)</\\1>`` (DOTALL,
    IGNORECASE) finds with ``finditer``, in linear time: each opener is paired with the first
    closer of the same tag after it, found by bisection instead of a rescan."""
    opener, closer = tag
    closes: dict[str, list[tuple[int, int]]] = {}
    for c in closer.finditer(text):
        closes.setdefault(c.group(1).lower(), []).append((c.start(), c.end()))
    blocks: list[tuple[int, int, int, int]] = []
    pos = 0
    while (m := opener.search(text, pos)) is not None:
        found = closes.get(m.group(1).lower(), [])
        i = bisect.bisect_left(found, (m.end(), -1))
        if i == len(found):
            pos = m.start() + 1
            continue
        blocks.append((m.start(), m.end(), found[i][0], found[i][1]))
        pos = found[i][1]
    return blocks


def _bodies(text: str, tag: tuple[re.Pattern[str], re.Pattern[str]]) -> list[str]:
    return [text[b:e] for _, b, e, _ in _lazy_blocks(text, tag)]


def _without(text: str, spans: list[tuple[int, int]], fill: str = "") -> str:
    out, pos = [], 0
    for start, end in spans:
        out.append(text[pos:start])
        out.append(fill)
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _official_blocks(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, body)`` of each match of ``<tool_call>\\s*({.*?})\\s*</tool_call>``."""
    closes = [(m.start(), m.end()) for m in _OFFICIAL_CLOSE.finditer(text)]
    blocks: list[tuple[int, int, str]] = []
    pos = 0
    while (m := _OFFICIAL_OPEN.search(text, pos)) is not None:
        brace = m.end() - 1
        i = bisect.bisect_left(closes, (brace + 1, -1))
        if i == len(closes):
            break  # no "}...</tool_call>" after this opener, hence none after any later one
        blocks.append((m.start(), closes[i][1], text[brace : closes[i][0] + 1]))
        pos = closes[i][1]
    return blocks


def _official_unclosed(text: str) -> bool:
    # ``<tool_call>\s*\{[^}]*$``: an opener whose "{" comes after the text's last "}".
    return _OFFICIAL_OPEN.search(text, text.rfind("}") + 1) is not None


def _official_bare(text: str) -> bool:
    # The first "}" after each head is found by bisection, not by a rescan per head.
    braces = [i for i, ch in enumerate(text) if ch == "}"] if "}" in text else []
    for m in _BARE_HEAD.finditer(text):
        i = bisect.bisect_left(braces, m.end(1))
        if i < len(braces) and _BARE_TAIL.match(text, braces[i]):
            return True
    return False


def remove_think(text: str) -> str:
    """Drop ``<think>…</think>`` blocks and blank lines, as the harness does before scoring."""
    cleaned = _without(text, [(a, d) for a, _, _, d in _lazy_blocks(text, _THINK)])
    return _BLANK_LINES.sub("\n", cleaned).strip()


def without_reflect(text: str) -> str:
    """``text`` with its closed ``<reflect>…</reflect>`` blocks removed."""
    return _without(text, [(a, d) for a, _, _, d in _lazy_blocks(text, _REFLECT)])


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
    blocks = _official_blocks(text)
    for _, _, body in blocks:
        try:
            obj = json.loads(body)
        except (ValueError, RecursionError):
            errors.append(f"invalid JSON in tool call: {body[:80]}")
            continue
        if isinstance(obj, dict) and "name" in obj and "arguments" in obj:
            calls.append(obj)
        else:
            errors.append(f"tool call without name/arguments: {body[:80]}")
    if _official_unclosed(text):
        errors.append("unclosed tool call")
    outside = text if strict_bare_check else _without(text, [(a, b) for a, b, _ in blocks], " ")
    if _official_bare(outside):
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
    for body in _bodies(text, _TOOL_CALL):
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
    cleaned = _without(text, [(a, d) for a, _, _, d in _lazy_blocks(text, _THINK)])
    parts = ReplyParts()
    for tag, field_name in ((_REFLECT, "reflect"), (_FINAL, "final")):
        found = _lazy_blocks(cleaned, tag)
        if found:
            setattr(parts, field_name, cleaned[found[0][1] : found[0][2]].strip())
    if released:
        parts.calls = released_calls(cleaned)
        return parts
    for body in _bodies(cleaned, _CALL):
        try:
            obj = json.loads(body)
        except (ValueError, RecursionError):
            continue
        for item in obj if isinstance(obj, list) else [obj]:
            call = _as_call(item)
            if call is not None:
                parts.calls.append(call)
    return parts
