"""Tagged text: ``<tool_call>`` (Hermes/Qwen), ``<call>``, ``<reflect>``, ``<final>``, ``<think>``.

A call tag (``<tool_call>``, ``<call>``, BFCL's ``<TOOLCALL>``; names are case-insensitive)
holds one JSON call ``{"name", "arguments"}`` or a list of them (a Python call list is accepted
too). ``<reflect>`` and ``<final>`` are opaque text — a reflection often quotes the broken call,
and what it quotes is not a call. Tool-Reflection-Bench writes ``<reflect>…</reflect>`` followed
by ``<tool_call>`` blocks, or a ``<final>`` answer.

Prose between tags is allowed (it goes to ``text``), with one exception: a bare JSON call
outside any tag is returned but flagged ``invalid_format``, as Tool-Reflection-Bench counts it
as a format error. Unclosed tags, empty call tags, stray closing tags and unparsable tag bodies
are ``invalid_format`` too. A problem that recurs unchanged (same message, same fragment: a
model looping on one broken block) is listed once, with ``data["count"]`` occurrences.

>>> r = parse_tagged_calls('''<reflect>city was null</reflect>
... <tool_call>
... {"name": "get_weather", "arguments": {"city": "Paris"}}
... </tool_call>''')
>>> r.reflect, [(c.name, c.arguments) for c in r.calls], r.ok
('city was null', [('get_weather', {'city': 'Paris'})], True)
>>> strip_think("<think>plan</think>answer")
('answer', 'plan', None)
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, Literal

from toolmend._schema import Finding, ToolCall
from toolmend.formats._jsonfmt import (
    call_to_action,
    looks_like_actions,
    mentions_call,
    parse_json_calls,
    scan_json_values,
)
from toolmend.formats._python_calls import parse_python_calls
from toolmend.formats._result import ParseResult

__all__ = ["CALL_TAGS", "TAG_NAMES", "has_tags", "parse_tagged_calls", "strip_think", "write_tagged_calls"]

CALL_TAGS = ("tool_call", "toolcall", "call")
TAG_NAMES = (*CALL_TAGS, "reflect", "final")
_OPEN = re.compile(r"<\s*(tool_call|toolcall|call|reflect|final)\s*>", re.IGNORECASE)
_ANY = re.compile(r"<\s*/?\s*(tool_call|toolcall|call|reflect|final)\s*>", re.IGNORECASE)
_STRAY_CLOSE = re.compile(r"<\s*/\s*(tool_call|toolcall|call|reflect|final)\s*>", re.IGNORECASE)
_THINK_OPEN = re.compile(r"<\s*think\s*>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"<\s*/\s*think\s*>", re.IGNORECASE)


def _closer(tag: str) -> re.Pattern[str]:
    return re.compile(rf"<\s*/\s*{re.escape(tag)}\s*>", re.IGNORECASE)


def has_tags(text: str) -> bool:
    """True when ``text`` contains any call/reflect/final tag (opening or closing)."""
    return _ANY.search(text) is not None


def strip_think(text: str) -> tuple[str, str | None, str | None]:
    """Remove ``<think>`` blocks: ``(text, think, problem)``.

    A ``</think>`` with no opener (the opener was in the prompt, as Qwen3/DeepSeek-R1 templates
    do) makes everything before it thinking. An opener that never closes runs to the first
    call/reflect/final tag, or to the end; ``problem`` then says so.
    """
    thoughts: list[str] = []
    problem: str | None = None
    first_open = _THINK_OPEN.search(text)
    first_close = _THINK_CLOSE.search(text)
    if first_close and (first_open is None or first_close.start() < first_open.start()):
        thoughts.append(text[: first_close.start()])
        text = text[first_close.end() :]
    out: list[str] = []
    pos = 0
    while (m := _THINK_OPEN.search(text, pos)) is not None:
        out.append(text[pos : m.start()])
        close = _THINK_CLOSE.search(text, m.end())
        if close is None:
            nxt = _OPEN.search(text, m.end())
            end = nxt.start() if nxt else len(text)
            thoughts.append(text[m.end() : end])
            problem = "a <think> block is never closed"
            pos = end
            break
        thoughts.append(text[m.end() : close.start()])
        pos = close.end()
    out.append(text[pos:])
    rest = _THINK_CLOSE.sub("", "".join(out))
    think = "\n".join(t.strip() for t in thoughts if t.strip())
    return rest, (think if thoughts else None), problem


def _parse_body(body: str, tag: str) -> ParseResult:
    sub = parse_json_calls(body)
    if not sub.calls and sub.final is None:
        py = parse_python_calls(body)
        if py.calls:
            sub = py
    if not sub.calls and sub.final is None:
        sub.flag("invalid_format", f"<{tag}> holds no parsable call", raw=body)
    for i, f in enumerate(sub.findings):
        if f.code == "redundant_information":
            sub.findings[i] = f.model_copy(
                update={"code": "invalid_format", "message": f"text inside <{tag}> besides the call"}
            )
    sub.text = ""
    return sub


class _Blocks:
    """The call blocks of one text, merged into ``result``.

    A model stuck in a loop repeats the same block thousands of times. Each distinct body is
    parsed once and its later copies reuse that parse, and a problem of the text as a whole that
    recurs unchanged (same message, same fragment) is counted in its first finding's
    ``data["count"]`` instead of being listed again, so such text costs a dictionary lookup per
    block instead of three readers and new findings."""

    def __init__(self, result: ParseResult) -> None:
        self.result = result
        self.parsed: dict[tuple[str, str], ParseResult] = {}
        self.first: dict[tuple[str, str, Any], Finding] = {}

    def flag(self, message: str, raw: str) -> None:
        """An ``invalid_format`` finding of the text as a whole."""
        if not self._again(message, raw):
            self.result.flag("invalid_format", message, raw=raw)
            self.first["invalid_format", message, raw] = self.result.findings[-1]

    def _again(self, message: str, raw: Any, code: str = "invalid_format") -> bool:
        seen = self.first.get((code, message, _hashable(raw)))
        if seen is not None:
            seen.data["count"] = seen.data.get("count", 1) + 1
        return seen is not None

    def merge(self, body: str, tag: str) -> None:
        """The call(s) of one call tag's ``body``."""
        if not body.strip():
            self.flag(f"<{tag}> is empty", body)
            return
        sub = self.parsed.get((body, tag))
        if sub is None:
            sub = self.parsed[body, tag] = _parse_body(body, tag)
            for f in sub.findings:
                if f.call is None:
                    self.first.setdefault((f.code, f.message, _hashable(f.data.get("raw"))), f)
            self.result.merge(sub)
            return
        findings = [
            f
            for f in sub.findings
            if f.call is not None or not self._again(f.message, f.data.get("raw"), f.code)
        ]
        if not sub.calls and not findings and sub.final is None:
            return
        # Copies of the calls: a caller may edit one call's arguments.
        calls = [c.model_copy(deep=True) for c in sub.calls]
        self.result.merge(
            sub.model_copy(update={"calls": calls, "findings": [f.model_copy() for f in findings]})
        )


def _hashable(raw: Any) -> Any:
    return raw if isinstance(raw, str | None) else repr(raw)


def _prose_calls(segment: str, result: ParseResult) -> str:
    """Take bare JSON calls out of a prose segment (flagged); return the remaining prose."""
    if "{" not in segment:
        return segment  # every JSON action is an object; most segments between tags are blank
    scan = scan_json_values(segment, looks_like_actions, mentions_call)
    if not scan.values:
        return segment
    for _value, _how, chunk in scan.values:
        sub = parse_json_calls(chunk)
        first = len(result.calls)
        result.merge(sub)
        result.flag(
            "invalid_format",
            "a call outside <tool_call> tags",
            call=first if len(result.calls) > first else None,
            raw=chunk,
        )
    return scan.prose


def parse_tagged_calls(text: str) -> ParseResult:
    """Read calls, reflection and final answer from tagged text; never raises."""
    result = ParseResult(format="tags")
    rest, think, problem = strip_think(text)
    result.think = think
    if problem:
        result.flag("invalid_format", problem)
    prose: list[str] = []
    reflects: list[str] = []
    finals: list[str] = []
    never_closed: set[str] = set()
    blocks = _Blocks(result)
    pos = 0
    while True:
        m = _OPEN.search(rest, pos)
        segment = rest[pos : m.start() if m else len(rest)]
        for stray in _STRAY_CLOSE.finditer(segment):
            blocks.flag(f"a stray closing tag {stray.group(0)!r}", stray.group(0))
        prose.append(_prose_calls(_STRAY_CLOSE.sub("", segment), result))
        if m is None:
            break
        tag = m.group(1)
        lower = tag.lower()
        # Once a closer is missing after some point it is missing after every later one: remember
        # that, so a run of unclosed tags is not scanned to the end again and again.
        close = None if lower in never_closed else _closer(tag).search(rest, m.end())
        if close is None:
            never_closed.add(lower)
        # A call tag also ends where the next tag opens (its closer was forgotten); reflect and
        # final are opaque and run to their own closer.
        nxt = _OPEN.search(rest, m.end())
        if lower in CALL_TAGS and close and nxt and nxt.start() < close.start():
            close = None
        if close is not None:
            body, pos = rest[m.end() : close.start()], close.end()
        else:
            stop = nxt.start() if nxt else len(rest)
            body, pos = rest[m.end() : stop], stop
            blocks.flag(f"<{tag}> is never closed", rest[m.start() : stop])
        if lower in CALL_TAGS:
            blocks.merge(body, tag)
        elif lower == "reflect":
            reflects.append(body.strip())
        else:
            finals.append(body.strip())
    result.text = "\n".join(p.strip() for p in prose if p.strip())
    if reflects:
        result.reflect = "\n\n".join(reflects)
    if finals:
        joined = "\n\n".join(finals)
        result.final = joined if result.final is None else f"{result.final}\n\n{joined}"
    return result


def write_tagged_calls(
    calls: Sequence[ToolCall],
    *,
    reflect: str | None = None,
    final: str | None = None,
    think: str | None = None,
    tag: Literal["tool_call", "call"] = "tool_call",
    key: Literal["arguments", "parameters", "args"] = "arguments",
) -> str:
    """Write ``[<think>] [<reflect>] <tool_call>… [<final>]`` text, one JSON call per tag.

    >>> print(write_tagged_calls([ToolCall(name="f", arguments={"a": 1})], reflect="fixed a"))
    <reflect>
    fixed a
    </reflect>
    <BLANKLINE>
    <tool_call>
    {"name": "f", "arguments": {"a": 1}}
    </tool_call>
    """
    parts: list[str] = []
    if think is not None:
        parts.append(f"<think>\n{think}\n</think>")
    if reflect is not None:
        parts.append(f"<reflect>\n{reflect}\n</reflect>")
    parts.extend(
        f"<{tag}>\n{json.dumps(call_to_action(c, key), ensure_ascii=False)}\n</{tag}>" for c in calls
    )
    if final is not None:
        parts.append(f"<final>\n{final}\n</final>")
    return "\n\n".join(parts)
