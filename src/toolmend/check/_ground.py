"""Grounding: string arguments whose value appears nowhere in the conversation.

The schema check passes a call that names the right tool with well-typed values, yet the most
common mistake left after it is a wrong value: another city than the one asked for, a name the
user never wrote. Most string arguments are copied, from the request or from a tool's output,
so a value found in neither is likely wrong. This check is opt-in (a value the model is meant
to compose or compute, such as a date from "tomorrow", is not in the conversation either):

>>> from toolmend import ToolCall
>>> tools = [{"name": "weather", "parameters": {"type": "object", "properties": {
...     "city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}}}}]
>>> call = ToolCall(name="weather", arguments={"city": "London", "unit": "f"})
>>> [(f.code, f.path, f.message) for f in ungrounded([call], "Weather in Paris, please.", tools)]
[('invalid_value', 'city', "'city' is 'London', which appears nowhere in the conversation")]

What is not checked: values under an ``enum`` or ``const`` (the schema check owns them, and the
right one is chosen, not copied), values of one character, values of more than ``max_words``
words (text the model writes, such as a message body), non-strings, and references.
Matching ignores case and runs of whitespace, and a value must not be part of a longer word
("Osl" is not found in "Oslo").
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from toolmend._schema import Finding, Message, Tool, ToolCall
from toolmend.check._checker import Checker, _short, format_path

__all__ = ["ungrounded"]

MAX_WORDS = 12
"""Longer string values are taken as written by the model, not copied."""

_SPACE = re.compile(r"\s+")

Context = str | Sequence[Any]


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text.casefold()).strip()


def _mentions(text: str, value: str) -> bool:
    """``value`` in ``text``, not as a part of a longer word: "Osl" is not in "Oslo"."""
    return re.search(rf"(?<!\w){re.escape(value)}(?!\w)", text) is not None if value in text else False


def _context_text(context: Context) -> str:
    """The text of a conversation: a string, or messages as toolmend :class:`Message`, OpenAI
    dicts or message objects (LangChain's). What is none of these is skipped: the conversation
    may come from an untrusted request body."""
    if isinstance(context, str):
        return context
    parts: list[str] = []
    for m in context if isinstance(context, list | tuple) else ():
        if isinstance(m, str):
            parts.append(m)
            continue
        if isinstance(m, Message):
            parts.append(m.content)
            parts += [json.dumps(c.arguments, ensure_ascii=False, default=str) for c in m.tool_calls]
            continue
        if isinstance(m, Mapping):
            content, calls = m.get("content"), m.get("tool_calls")
        elif hasattr(m, "content"):
            content, calls = m.content, getattr(m, "tool_calls", None)
        else:
            continue
        parts.append(content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, default=str))
        if isinstance(calls, list):
            parts += [json.dumps(c, ensure_ascii=False, default=str) for c in calls]
    return "\n".join(parts)


def _chosen(schema: Any) -> bool:
    """Whether the schema lists the allowed values (the value is chosen, not copied)."""
    if not isinstance(schema, Mapping):
        return False
    if "enum" in schema or "const" in schema:
        return True
    branches = schema.get("anyOf") or schema.get("oneOf")
    if not isinstance(branches, list) or not branches:
        return False
    return all(_chosen(b) or (isinstance(b, Mapping) and b.get("type") == "null") for b in branches)


def _leaves(value: Any, schema: Any, loc: tuple[str | int, ...]) -> Iterator[tuple[tuple[str | int, ...], str]]:
    schema = schema if isinstance(schema, Mapping) else {}
    if isinstance(value, str):
        if not _chosen(schema):
            yield loc, value
    elif isinstance(value, Mapping):
        props = schema.get("properties")
        for key, item in value.items():
            yield from _leaves(item, props.get(key) if isinstance(props, Mapping) else None, (*loc, key))
    elif isinstance(value, list):
        items = schema.get("items")
        for i, item in enumerate(value):
            yield from _leaves(item, items, (*loc, i))


def ungrounded(
    calls: Sequence[ToolCall | Mapping[str, Any]],
    context: Context,
    tools: Checker | Iterable[Tool | Mapping[str, Any]] = (),
    *,
    max_words: int = MAX_WORDS,
    besides: Sequence[Finding] = (),
) -> list[Finding]:
    """An ``invalid_value`` finding (``data["ungrounded"]`` set) for each copied-looking string
    argument of ``calls`` that ``context`` never mentions. ``context`` is the conversation before
    the calls: a text, or messages (:class:`~toolmend.Message` or ``{"role", "content"}`` dicts),
    tool outputs included. ``tools`` gives the schemas that mark chosen values (``enum``).
    ``besides``: findings already made; a value at a place one of them names is not reported again."""
    checker = tools if isinstance(tools, Checker) else Checker(tools)
    text = _norm(_context_text(context))
    taken = {(f.call, f.path) for f in besides}
    found: list[Finding] = []
    for i, raw in enumerate(calls):
        call = raw if isinstance(raw, ToolCall) else ToolCall.model_validate(raw)
        tool = checker.tools.get(call.name)
        for loc, value in _leaves(call.arguments, tool.parameters if tool else None, ()):
            want = _norm(value)
            if len(want) < 2 or len(want.split(" ")) > max_words:
                continue
            # A value escaped in a JSON tool output (``"Jos\\u00e9"``) still counts as seen.
            if _mentions(text, want) or _mentions(text, _norm(json.dumps(value)[1:-1])):
                continue
            path = format_path(loc)
            if (i, path) in taken:
                continue
            found.append(
                Finding(
                    code="invalid_value",
                    message=f"'{path}' is {_short(value, 120)}, which appears nowhere in the conversation",
                    call=i,
                    path=path,
                    suggestion="Use the value the request or a tool's output gives.",
                    data={"ungrounded": True, "value": value},
                )
            )
    return found
