"""Responses API answers for the scripted upstream (tests/serve/scripted_upstream.py serves
``/v1/responses`` with the same scenes): a response body, and the events a server streams for it
(OpenAI's order: created, in_progress, each item added / its deltas / done, completed, every event
with an increasing ``sequence_number``)."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["fcall", "message", "response", "stream_events"]


def fcall(
    name: str, arguments: str | dict[str, Any], call_id: str = "call_1", item_id: str | None = None
) -> dict[str, Any]:
    """A ``function_call`` output item; dict arguments are JSON-encoded."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": item_id or f"fc_{call_id}", "type": "function_call", "status": "completed",
            "call_id": call_id, "name": name, "arguments": args}  # fmt: skip


def message(text: str, item_id: str = "msg_1") -> dict[str, Any]:
    """An assistant ``message`` output item."""
    return {"id": item_id, "type": "message", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}  # fmt: skip


def response(
    *items: dict[str, Any], usage: tuple[int, int] = (10, 5), status: str = "completed", rid: str = "resp_up"
) -> dict[str, Any]:
    """A response body with ``items`` as its output."""
    out: dict[str, Any] = {
        "id": rid, "object": "response", "created_at": 1700000000, "model": "scripted", "status": status,
        "output": list(items), "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
        "error": None, "incomplete_details": None, "instructions": None, "metadata": {},
        "temperature": 1.0, "top_p": 1.0,
        "usage": {"input_tokens": usage[0], "output_tokens": usage[1], "total_tokens": sum(usage),
                  "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}},
    }  # fmt: skip
    if status == "incomplete":
        out["incomplete_details"] = {"reason": "max_output_tokens"}
    return out


def stream_events(body: dict[str, Any], pieces: int = 3) -> list[dict[str, Any]]:
    """The events of a server streaming ``body``: arguments and text in ``pieces`` deltas."""
    events: list[dict[str, Any]] = []
    start = {**body, "status": "in_progress", "output": [], "usage": None}
    events.append({"type": "response.created", "response": start})
    events.append({"type": "response.in_progress", "response": start})
    for i, item in enumerate(body["output"]):
        at = {"output_index": i, "item_id": item.get("id")}
        if item["type"] == "function_call":
            args = item["arguments"]
            events.append({"type": "response.output_item.added", "output_index": i,
                           "item": {**item, "arguments": "", "status": "in_progress"}})  # fmt: skip
            for part in _split(args, pieces):
                events.append({"type": "response.function_call_arguments.delta", **at, "delta": part})
            events.append({"type": "response.function_call_arguments.done", **at, "arguments": args})
        elif item["type"] == "message":
            events.append({"type": "response.output_item.added", "output_index": i,
                           "item": {**item, "content": [], "status": "in_progress"}})  # fmt: skip
            text = item["content"][0]["text"]
            part = {"type": "output_text", "text": "", "annotations": []}
            events.append({"type": "response.content_part.added", **at, "content_index": 0, "part": part})
            for piece in _split(text, pieces):
                events.append({"type": "response.output_text.delta", **at, "content_index": 0, "delta": piece,
                               "logprobs": []})  # fmt: skip
            events.append(
                {"type": "response.output_text.done", **at, "content_index": 0, "text": text, "logprobs": []}
            )
            events.append({"type": "response.content_part.done", **at, "content_index": 0,
                           "part": item["content"][0]})  # fmt: skip
        else:
            events.append({"type": "response.output_item.added", "output_index": i, "item": item})
        events.append({"type": "response.output_item.done", "output_index": i, "item": item})
    end = "response.incomplete" if body.get("status") == "incomplete" else "response.completed"
    events.append({"type": end, "response": body})
    return [{**e, "sequence_number": n} for n, e in enumerate(events)]


def _split(text: str, pieces: int) -> list[str]:
    if not text:
        return [""]
    size = max(1, -(-len(text) // pieces))
    return [text[i : i + size] for i in range(0, len(text), size)]
