"""One assistant turn as the guard sees it: text and/or tool calls, possibly several in parallel.

A turn comes from native function calling (each call with its provider id, its raw argument
string and, when that string was not a JSON object, the reason) or from text in a benchmark's
reply format. Either way the guard decides on the same :class:`Turn`.

>>> t = Turn.from_text('[get_weather(city="Oslo")]')
>>> t.format, [c.name for c in t.calls], t.calls[0].arguments
('python', ['get_weather'], {'city': 'Oslo'})
>>> t = Turn.from_openai({"role": "assistant", "content": None, "tool_calls": [
...     {"id": "call_1", "type": "function",
...      "function": {"name": "f", "arguments": '{"a": 1'}}]})
>>> t.calls[0].arguments is None, t.calls[0].error is not None
(True, True)
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolmend._jsontext import loads
from toolmend._schema import Finding, Message, ToolCall
from toolmend.formats import parse_calls
from toolmend.formats._result import CallFormat

__all__ = ["Turn", "TurnCall"]


@dataclass(slots=True)
class TurnCall:
    """One call of a turn. ``arguments`` is ``None`` when ``raw_arguments`` could not be read as a
    JSON object (``error`` says why); such a call is a model error, never dropped."""

    name: str
    arguments: dict[str, Any] | None = None
    id: str | None = None
    raw_arguments: str | None = None
    error: str | None = None
    outputs: list[str] = field(default_factory=list)
    output_fields: list[str] = field(default_factory=list)
    extras: dict[str, Any] = field(default_factory=dict)
    """Keys the reply format carried beside name and arguments (NesTools' ``api_id``, a thought)."""

    def to_call(self) -> ToolCall:
        """As a :class:`~toolmend.ToolCall` (empty arguments when they did not parse)."""
        if self.outputs or self.output_fields:
            return ToolCall(name=self.name, arguments=self.arguments or {}, id=self.id,
                            outputs=self.outputs, output_fields=self.output_fields)  # fmt: skip
        return ToolCall(name=self.name, arguments=self.arguments or {}, id=self.id)


@dataclass(slots=True)
class Turn:
    """An assistant turn: its prose, its calls, and where they came from.

    ``format`` is ``"native"`` for provider tool calls, else the text format the calls were read
    in (``"none"`` when the text held no call). ``findings`` are the parser's (an unparsable
    call-like block is ``invalid_format``; prose around calls is ``redundant_information``).
    """

    text: str = ""
    calls: list[TurnCall] = field(default_factory=list)
    format: str = "native"
    findings: list[Finding] = field(default_factory=list)
    final: str | None = None
    """A final answer given instead of calls (``<final>``, CriticTool's ``FinishAction``)."""

    @property
    def native(self) -> bool:
        """Whether the calls came as provider tool calls (so each needs a ``tool`` reply)."""
        return self.format == "native"

    @classmethod
    def from_text(cls, text: str, format: CallFormat = "auto") -> Turn:
        """Read ``text`` in a reply format (``auto`` detects); never raises on model text."""
        parsed = parse_calls(text, format)
        extras = parsed.extras if len(parsed.extras) == len(parsed.calls) else [{} for _ in parsed.calls]
        calls = [
            TurnCall(name=c.name, arguments=dict(c.arguments), id=c.id, outputs=list(c.outputs),
                     output_fields=list(c.output_fields), extras=dict(e))
            for c, e in zip(parsed.calls, extras, strict=True)
        ]  # fmt: skip
        return cls(
            text=text, calls=calls, format=parsed.format, findings=list(parsed.findings), final=parsed.final
        )

    @classmethod
    def from_native(cls, text: str, calls: Sequence[Mapping[str, Any]]) -> Turn:
        """From native calls given as ``{"id", "name", "arguments"}`` where ``arguments`` is the raw
        JSON string (or an already decoded object)."""
        out = []
        for i, c in enumerate(calls):
            raw = c.get("arguments")
            cid = c.get("id") or f"call_{i}"
            name = c.get("name") or ""
            args: dict[str, Any] | None
            if type(raw) is str:
                text_args = raw
                args, error = _decode(raw)
            elif isinstance(raw, Mapping):
                args, error, text_args = dict(raw), None, json.dumps(raw)
            else:
                text_args = "" if raw is None else str(raw)
                args, error = _decode(text_args)
            out.append(TurnCall(str(name), args, cid, text_args, error))
        return cls(text=text or "", calls=out, format="native")

    @classmethod
    def from_openai(cls, message: Mapping[str, Any]) -> Turn:
        """From an OpenAI chat ``message`` dict (``content`` and ``tool_calls``)."""
        calls = []
        for c in message.get("tool_calls") or []:
            fn = c.get("function") or {}
            calls.append({"id": c.get("id"), "name": fn.get("name"), "arguments": fn.get("arguments")})
        content = message.get("content")
        return cls.from_native(content if isinstance(content, str) else "", calls)

    def tool_calls(self) -> list[ToolCall]:
        """The calls as :class:`~toolmend.ToolCall` objects (see :meth:`TurnCall.to_call`)."""
        return [c.to_call() for c in self.calls]

    def message(self) -> Message:
        """The turn as the assistant :class:`~toolmend.Message` to put back into the history."""
        if self.native:
            return Message(role="assistant", content=self.text, tool_calls=self.tool_calls())
        return Message(role="assistant", content=self.text)


def _decode(raw: str) -> tuple[dict[str, Any] | None, str | None]:
    if not raw.strip():
        return {}, None  # providers send "" for a call without arguments
    try:
        value = loads(raw)  # the owner's reader: nesting too deep is an error, not a RecursionError
    except json.JSONDecodeError as exc:
        return None, f"arguments are not valid JSON ({exc.msg} at char {exc.pos})"
    if not isinstance(value, dict):
        return None, f"arguments must be a JSON object, got {type(value).__name__}"
    return value, None
