"""OpenAI chat-completion messages with ``tool_calls`` (arguments as JSON strings).

``arguments`` that are not valid JSON are read leniently; the call is kept either way and an
``invalid_format`` finding says what was wrong (with no arguments when nothing could be read).
An empty string means no arguments, and a dict (as some servers send) is taken as is. A message
with no ``tool_calls`` has its ``content`` parsed with :func:`~toolmend.formats.parse_calls`
(``auto``), because servers without a tool parser return the calls as text.

>>> msg = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
...     "function": {"name": "get_weather", "arguments": '{"city": "Paris",}'}}]}
>>> r = parse_openai_message(msg)
>>> r.calls[0].arguments, r.calls[0].id, [f.code for f in r.findings]
({'city': 'Paris'}, 'c1', ['invalid_format'])
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from toolmend._schema import ToolCall, resolve
from toolmend.formats._jsonfmt import openai_item_to_result
from toolmend.formats._result import ParseResult
from toolmend.formats._tags import strip_think

__all__ = ["parse_openai_message", "parse_openai_tool_calls", "to_openai_tool_calls", "write_openai_message"]


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        # Content parts: [{"type": "text", "text": ...}, ...]
        return "".join(
            str(p.get("text", "")) for p in content if isinstance(p, Mapping) and p.get("type") == "text"
        )
    return ""


def parse_openai_tool_calls(tool_calls: Any, result: ParseResult | None = None) -> ParseResult:
    """Read a ``tool_calls`` list into calls; never raises."""
    result = result if result is not None else ParseResult(format="openai")
    result.format = "openai"
    if not isinstance(tool_calls, list):
        result.flag("invalid_format", "tool_calls must be a list", raw=tool_calls)
        return result
    for i, item in enumerate(tool_calls):
        if not isinstance(item, Mapping):
            result.flag("invalid_format", f"tool_calls[{i}] is not an object", raw=item)
            continue
        openai_item_to_result(item, result, where=f"tool_calls[{i}]")
    return result


def parse_openai_message(message: Mapping[str, Any]) -> ParseResult:
    """Read an assistant message dict (``content`` and/or ``tool_calls``); never raises.

    ``reasoning_content`` (vLLM, DeepSeek) and ``<think>`` blocks in the content go to
    ``think``. The legacy single ``function_call`` field is read too.
    """
    from toolmend.formats._calls import parse_calls  # the dispatcher imports this module

    if not isinstance(message, Mapping):
        result = ParseResult(format="none")
        result.flag("invalid_format", "the message is not an object", raw=repr(message))
        return result
    content = _content_text(message.get("content"))
    tool_calls = message.get("tool_calls")
    legacy = message.get("function_call")
    if tool_calls is None and isinstance(legacy, Mapping):
        tool_calls = [{"type": "function", "function": legacy}]
    if tool_calls:
        result = parse_openai_tool_calls(tool_calls)
        text, think, problem = strip_think(content)
        result.text = text.strip()
        result.think = think
        if problem:
            result.flag("invalid_format", problem)
    else:
        result = parse_calls(content, "auto")
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    if isinstance(reasoning, str) and reasoning.strip():
        result.think = reasoning if result.think is None else f"{reasoning}\n{result.think}"
    return result


def _plain(value: Any) -> Any:
    return resolve(value, lambda ref: ref.model_dump())


def to_openai_tool_calls(calls: Sequence[ToolCall]) -> list[dict[str, Any]]:
    """Calls as an OpenAI ``tool_calls`` list; calls without an id get ``call_<index>``."""
    return [
        {
            "id": c.id or f"call_{i}",
            "type": "function",
            "function": {"name": c.name, "arguments": json.dumps(_plain(c.arguments), ensure_ascii=False)},
        }
        for i, c in enumerate(calls)
    ]


def write_openai_message(calls: Sequence[ToolCall], *, content: str | None = None) -> str:
    """An assistant message carrying ``calls`` as ``tool_calls``, serialised as JSON.

    >>> write_openai_message([ToolCall(name="f", arguments={"a": 1}, id="c1")])
    '{"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\\\\"a\\\\": 1}"}}]}'
    """
    message = {"role": "assistant", "content": content, "tool_calls": to_openai_tool_calls(calls)}
    return json.dumps(message, ensure_ascii=False)
