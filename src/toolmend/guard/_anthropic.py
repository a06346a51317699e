"""Anthropic Messages as the guard reads it: the request's tools and ``tool_choice`` in the chat
shape :class:`~toolmend.guard.Guard` and :class:`~toolmend.guard.AllowedCalls` take, an answer's
``tool_use`` blocks as native calls, a re-ask exchange as Messages turns, and a stream's events
put back together. Data only, no SDK: ``toolmend.guard.wrap(Anthropic())`` and ``toolmend
serve``'s ``/v1/messages`` share it.

>>> tools_as_openai([{"name": "f", "input_schema": {"type": "object"}}])
[{'type': 'function', 'function': {'name': 'f', 'description': '', 'parameters': {'type': 'object'}}}]
>>> choice_as_openai({"type": "tool", "name": "f", "disable_parallel_tool_use": True})
{'tool_choice': {'type': 'function', 'function': {'name': 'f'}}, 'parallel_tool_calls': False}
>>> turns = anthropic_turns([
...     {"role": "assistant", "content": "", "tool_calls": [{"id": "t1", "type": "function",
...      "function": {"name": "f", "arguments": '{"a": 1}'}}]},
...     {"role": "tool", "tool_call_id": "t1", "content": "a must be a string"}])
>>> [t["role"] for t in turns], turns[1]["content"][0]["is_error"]
(['assistant', 'user'], True)

A stream's events assemble into the message they stand for; a tool's ``input`` is the joined
``input_json_delta`` fragments, kept as they came for the guard:

>>> a = MessageAssembler()
>>> for e in [{"type": "message_start", "message": {"id": "m", "role": "assistant", "content": [],
...            "usage": {"input_tokens": 3, "output_tokens": 1}}},
...           {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use",
...            "id": "t1", "name": "f", "input": {}}},
...           {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta",
...            "partial_json": '{"a": '}},
...           {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta",
...            "partial_json": "1}"}},
...           {"type": "content_block_stop", "index": 0},
...           {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}},
...           {"type": "message_stop"}]:
...     a.add(e)
>>> a.native_calls(), a.message()["stop_reason"], a.done
([{'id': 't1', 'name': 'f', 'arguments': '{"a": 1}'}], 'tool_use', True)
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from toolmend._schema import Message

__all__ = [
    "FINISH_OF",
    "MessageAssembler",
    "MessageShapeError",
    "anthropic_turns",
    "block_events",
    "chat_messages",
    "choice_as_openai",
    "events_of",
    "native_calls",
    "stop_reason_of",
    "text_of",
    "tools_as_openai",
    "wire_calls",
]

FINISH_OF = {"tool_use": "tool_calls", "max_tokens": "length", "end_turn": "stop", "stop_sequence": "stop"}
"""Messages ``stop_reason`` -> chat ``finish_reason`` (any other reason reads as ``stop``)."""
_STOP_OF = {"tool_calls": "tool_use", "length": "max_tokens", "stop": "end_turn"}
_ANY_SCHEMA: dict[str, Any] = {"type": "object"}


class MessageShapeError(ValueError):
    """A Messages answer or stream event that is not the shape the protocol gives it; the text
    names the field and what was expected."""


def tools_as_openai(tools: Iterable[Any]) -> list[dict[str, Any]]:
    """A request's ``tools`` as OpenAI function tools. A tool without ``input_schema`` (one of
    Anthropic's own: ``bash``, ``text_editor``, web search) takes any object: its name is known
    to the guard, its input is the provider's to check."""
    out = []
    for tool in tools:
        if not isinstance(tool, Mapping) or not isinstance(tool.get("name"), str):
            continue
        schema = tool.get("input_schema")
        fn = {"name": tool["name"], "description": tool.get("description") or "",
              "parameters": schema if isinstance(schema, Mapping) else _ANY_SCHEMA}  # fmt: skip
        out.append({"type": "function", "function": fn})
    return out


def choice_as_openai(choice: Any) -> dict[str, Any]:
    """``tool_choice`` (``auto``, ``any``, ``tool`` with a ``name``, ``none``) as chat's
    ``tool_choice`` and ``parallel_tool_calls`` (``disable_parallel_tool_use``)."""
    if not isinstance(choice, Mapping):
        return {}
    kind = choice.get("type")
    out: dict[str, Any] = {}
    if kind == "any":
        out["tool_choice"] = "required"
    elif kind == "none":
        out["tool_choice"] = "none"
    elif kind == "tool" and isinstance(choice.get("name"), str):
        out["tool_choice"] = {"type": "function", "function": {"name": choice["name"]}}
    elif kind == "auto":
        out["tool_choice"] = "auto"
    if choice.get("disable_parallel_tool_use") is True:
        out["parallel_tool_calls"] = False
    return out


def text_of(content: Any) -> str:
    """The text of an answer's ``content`` (its text blocks joined)."""
    if isinstance(content, str):
        return content
    return "".join(
        b["text"] for b in content or () if isinstance(b, Mapping) and b.get("type") == "text"
        and isinstance(b.get("text"), str)
    )  # fmt: skip


def native_calls(content: Any) -> list[dict[str, Any]]:
    """The ``tool_use`` blocks of ``content`` as ``{"id", "name", "arguments"}`` (arguments as JSON
    text; a server that sent ``input`` as a string keeps its string, broken or not)."""
    out = []
    for b in content or ():
        if isinstance(b, Mapping) and b.get("type") == "tool_use":
            raw = b.get("input")
            args = (
                raw
                if isinstance(raw, str)
                else json.dumps(raw if raw is not None else {}, ensure_ascii=False)
            )
            out.append({"id": b.get("id"), "name": b.get("name") or "", "arguments": args})
    return out


def wire_calls(calls: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Native calls as chat ``tool_calls`` items."""
    return [{"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in calls]  # fmt: skip


def stop_reason_of(finish: str, original: str | None) -> str:
    """The ``stop_reason`` for a chat ``finish_reason``: the original one when it says the same
    (``stop_sequence`` stays ``stop_sequence``), else the one that means it."""
    if original is not None and FINISH_OF.get(original, "stop") == finish:
        return original
    return _STOP_OF.get(finish, "end_turn")


def _call_fields(call: Any) -> tuple[str, str, dict[str, Any]]:
    """(id, name, input) of a chat ``tool_calls`` item or a toolmend call."""
    if isinstance(call, Mapping):
        fn = call.get("function") or {}
        raw = fn.get("arguments")
        try:
            args = json.loads(raw) if isinstance(raw, str) and raw.strip() else raw
        except json.JSONDecodeError:
            args = None
        return str(call.get("id") or ""), str(fn.get("name") or ""), args if isinstance(args, dict) else {}
    return str(call.id or ""), call.name, dict(call.model_dump(mode="json")["arguments"])


def anthropic_turns(messages: Sequence[Message | Mapping[str, Any]],
                    thinking: Sequence[Sequence[Mapping[str, Any]]] = ()) -> list[dict[str, Any]]:  # fmt: skip
    """A re-ask exchange (chat messages, or toolmend messages) as Messages turns: each assistant
    message one assistant turn of text and ``tool_use`` blocks (``thinking[i]``, the blocks the
    i-th answer began with, ahead of them, as the API asks when thinking is on), and the tool
    messages and user text after it one user turn of ``tool_result`` blocks, ``is_error: true``
    (none of the calls ran), then text."""
    out: list[dict[str, Any]] = []
    answers = 0
    for m in messages:
        role: Any
        content: Any
        calls: list[Any]
        call_id: Any
        if isinstance(m, Message):
            role, content, calls, call_id = m.role, m.content, list(m.tool_calls), m.tool_call_id
        else:
            role, content = m.get("role"), m.get("content")
            calls, call_id = list(m.get("tool_calls") or []), m.get("tool_call_id")
        text = content if isinstance(content, str) else text_of(content)
        if role == "assistant":
            blocks = [dict(b) for b in thinking[answers]] if answers < len(thinking) else []
            answers += 1
            if text:
                blocks.append({"type": "text", "text": text})
            for c in calls:
                cid, name, args = _call_fields(c)
                blocks.append({"type": "tool_use", "id": cid, "name": name, "input": args})
            out.append(
                {"role": "assistant", "content": blocks or [{"type": "text", "text": "(empty reply)"}]}
            )
        elif role == "tool":
            _user(out).append({"type": "tool_result", "tool_use_id": call_id or "", "content": text,
                               "is_error": True})  # fmt: skip
        elif text:
            _user(out).append({"type": "text", "text": text})
    return out


def _user(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if not turns or turns[-1]["role"] != "user":
        turns.append({"role": "user", "content": []})
    content: list[dict[str, Any]] = turns[-1]["content"]
    return content


def chat_messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A Messages request's ``system`` and ``messages`` as chat messages (text, calls, tool
    results), for traces that the rest of toolmend reads as chat."""
    out: list[dict[str, Any]] = []
    system = body.get("system")
    if system:
        out.append({"role": "system", "content": text_of(system)})
    for m in body.get("messages") or ():
        if not isinstance(m, Mapping):
            continue
        content = m.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        if m.get("role") == "assistant":
            msg: dict[str, Any] = {"role": "assistant", "content": text_of(blocks) or None}
            calls = native_calls(blocks)
            if calls:
                msg["tool_calls"] = wire_calls(calls)
            out.append(msg)
            continue
        for b in blocks:
            if isinstance(b, Mapping) and b.get("type") == "tool_result":
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": b.get("tool_use_id"),
                        "content": text_of(b.get("content")),
                    }
                )
        text = text_of(blocks)
        if text:
            out.append({"role": "user", "content": text})
    return out


# -- streams ---------------------------------------------------------------------------------------

_INPUT_BLOCKS = ("tool_use", "server_tool_use", "mcp_tool_use")


class MessageAssembler:
    """Puts a stream's events (dicts) back together: :meth:`message` is the answer they stand for,
    ``fragments[i]`` the ``partial_json`` pieces of block ``i`` as they came. An event that is not
    the protocol's shape raises :class:`MessageShapeError`."""

    def __init__(self) -> None:
        self.start: dict[str, Any] | None = None
        self.blocks: dict[int, dict[str, Any]] = {}
        self.order: list[int] = []
        self.fragments: dict[int, list[str]] = {}
        self.stop_reason: str | None = None
        self.stop_sequence: str | None = None
        self.delta: dict[str, Any] = {}
        """The ``message_delta`` event's ``delta`` (stop reason and anything beside it)."""
        self.usage: dict[str, Any] = {}
        self.done = False

    def add(self, event: Mapping[str, Any]) -> None:
        """Take one event."""
        kind = event.get("type")
        if kind == "message_start":
            message = event.get("message")
            if not isinstance(message, Mapping):
                raise MessageShapeError(f"message_start.message must be an object, got {_tn(message)}")
            self.start = dict(message)
            usage = message.get("usage")
            self.usage = dict(usage) if isinstance(usage, Mapping) else {}
            return
        if kind == "content_block_start":
            index, block = _index(event), event.get("content_block")
            if not isinstance(block, Mapping) or not isinstance(block.get("type"), str):
                raise MessageShapeError("content_block_start.content_block must be an object with a type")
            if index in self.blocks:
                raise MessageShapeError(f"content_block_start: block {index} was started twice")
            self.blocks[index] = dict(block)
            self.order.append(index)
            if block["type"] in _INPUT_BLOCKS:
                self.fragments[index] = []
            return
        if kind == "content_block_delta":
            self._delta(_index(event), event.get("delta"))
            return
        if kind == "content_block_stop":
            if _index(event) not in self.blocks:
                raise MessageShapeError(f"content_block_stop: block {_index(event)} was never started")
            return
        if kind == "message_delta":
            delta = event.get("delta")
            if not isinstance(delta, Mapping):
                raise MessageShapeError(f"message_delta.delta must be an object, got {_tn(delta)}")
            self.delta = dict(delta)
            self.stop_reason = delta.get("stop_reason")
            self.stop_sequence = delta.get("stop_sequence")
            usage = event.get("usage")
            if isinstance(usage, Mapping):
                self.usage.update({k: v for k, v in usage.items() if v is not None})
            return
        if kind == "message_stop":
            self.done = True

    def _delta(self, index: int, delta: Any) -> None:
        block = self.blocks.get(index)
        if block is None:
            raise MessageShapeError(f"content_block_delta: block {index} was never started")
        if not isinstance(delta, Mapping):
            raise MessageShapeError(f"content_block_delta.delta must be an object, got {_tn(delta)}")
        kind = delta.get("type")
        for field, text_kind in (("text", "text_delta"), ("thinking", "thinking_delta"),
                                 ("partial_json", "input_json_delta")):  # fmt: skip
            if kind == text_kind:
                piece = delta.get(field)
                if not isinstance(piece, str):
                    raise MessageShapeError(
                        f"content_block_delta.delta.{field} must be a string, got {_tn(piece)}"
                    )
                if kind == "input_json_delta":
                    self.fragments.setdefault(index, []).append(piece)
                else:
                    block[field] = str(block.get(field) or "") + piece
                return
        if kind == "signature_delta":
            block["signature"] = delta.get("signature")
        elif kind == "citations_delta":
            block.setdefault("citations", []).append(delta.get("citation"))

    def arguments(self, index: int) -> str:
        """Block ``index``'s input as the JSON text it came as."""
        pieces = self.fragments.get(index)
        if pieces:
            return "".join(pieces)
        given = self.blocks[index].get("input")
        return json.dumps(given, ensure_ascii=False) if given else "{}"

    def native_calls(self) -> list[dict[str, Any]]:
        """The ``tool_use`` blocks as native calls (arguments as the raw joined text)."""
        return [{"id": self.blocks[i].get("id"), "name": self.blocks[i].get("name") or "",
                 "arguments": self.arguments(i)} for i in self.order if self.blocks[i]["type"] == "tool_use"]  # fmt: skip

    def text(self) -> str:
        """The text blocks' text, joined."""
        return text_of([self.blocks[i] for i in self.order])

    def message(self) -> dict[str, Any]:
        """The answer the events stand for (a tool's input decoded where it is JSON)."""
        content = []
        for i in self.order:
            block = dict(self.blocks[i])
            if i in self.fragments:
                try:
                    block["input"] = json.loads(self.arguments(i))
                except json.JSONDecodeError:
                    block["input"] = self.arguments(i)
            content.append(block)
        out = dict(self.start or {})
        out.update(content=content, stop_reason=self.stop_reason, stop_sequence=self.stop_sequence,
                   usage=dict(self.usage))  # fmt: skip
        return out


def _index(event: Mapping[str, Any]) -> int:
    index = event.get("index")
    if type(index) is not int or index < 0:
        raise MessageShapeError(f"{event.get('type')}.index must be a non-negative integer, got {index!r}")
    return index


def _whole(value: Any) -> int:
    return value if type(value) is int else 0


def _tn(value: Any) -> str:
    return type(value).__name__


def block_events(
    block: Mapping[str, Any], index: int, fragments: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """One content block as its stream events: start, deltas, stop. A tool's input goes as
    ``fragments`` when given (the pieces it came in), else as one piece."""
    kind = block.get("type")
    deltas: list[dict[str, Any]] = []
    start = dict(block)
    if kind == "text":
        start["text"] = ""
        if block.get("text"):
            deltas.append({"type": "text_delta", "text": block["text"]})
    elif kind == "thinking":
        start.update(thinking="", signature="")
        if block.get("thinking"):
            deltas.append({"type": "thinking_delta", "thinking": block["thinking"]})
        if block.get("signature"):
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
    elif kind in _INPUT_BLOCKS:
        start["input"] = {}
        given = block.get("input")
        pieces = (
            fragments
            if fragments is not None
            else ([given if isinstance(given, str) else json.dumps(given or {}, ensure_ascii=False)])
        )
        deltas.extend({"type": "input_json_delta", "partial_json": p} for p in pieces)
    return [{"type": "content_block_start", "index": index, "content_block": start},
            *({"type": "content_block_delta", "index": index, "delta": d} for d in deltas),
            {"type": "content_block_stop", "index": index}]  # fmt: skip


def events_of(
    message: Mapping[str, Any], fragments: Mapping[str, Sequence[str]] | None = None
) -> list[dict[str, Any]]:
    """A whole answer as the stream that gives it; ``fragments`` maps a tool call's id to the
    pieces its input came in (kept as they were), the others go as one piece."""
    usage = message.get("usage") if isinstance(message.get("usage"), Mapping) else {}
    assert isinstance(usage, Mapping)
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None,
             "usage": {**usage, "output_tokens": 0}}  # fmt: skip
    out: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for i, block in enumerate(message.get("content") or ()):
        pieces = (fragments or {}).get(str(block.get("id"))) if block.get("type") in _INPUT_BLOCKS else None
        out.extend(block_events(block, i, pieces))
    out.append({"type": "message_delta",
                "delta": {"stop_reason": message.get("stop_reason"), "stop_sequence": message.get("stop_sequence")},
                "usage": {"output_tokens": _whole(usage.get("output_tokens"))}})  # fmt: skip
    out.append({"type": "message_stop"})
    return out
