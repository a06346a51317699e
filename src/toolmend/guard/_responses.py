"""The OpenAI Responses API in the chat-completions shape the guard reads, and back.

The guard, the proxy's :func:`~toolmend.serve.judge` and :class:`~toolmend.guard.AllowedCalls`
read a chat-completions request (``messages``, ``tools[].function``, ``tool_choice``) and an
assistant message (``content``, ``tool_calls``). A Responses request carries the same things in
another shape: ``input`` items, ``{"type": "function", "name", "parameters", "strict"}`` tools,
``function_call`` and ``function_call_output`` items. These functions translate between the two,
so ``toolmend serve``'s ``/v1/responses`` and ``wrap(OpenAI()).responses`` guard with the same
machinery as chat (one translation, used by both).

>>> body = {"model": "m", "input": "Weather in Oslo?", "tool_choice": {"type": "function", "name": "w"},
...         "tools": [{"type": "function", "name": "w", "parameters": {"type": "object"}, "strict": True}]}
>>> chat = chat_request(body)
>>> chat["tools"][0]["function"]["name"], chat["tool_choice"], chat["messages"]
('w', {'type': 'function', 'function': {'name': 'w'}}, [{'role': 'user', 'content': 'Weather in Oslo?'}])
>>> out = [{"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "w", "arguments": "{}"}]
>>> function_calls(out)
[{'id': 'call_1', 'type': 'function', 'function': {'name': 'w', 'arguments': '{}'}}]
>>> input_items([{"role": "tool", "tool_call_id": "call_1", "content": "w: 'city' is missing"}])
[{'type': 'function_call_output', 'call_id': 'call_1', 'output': "w: 'city' is missing"}]
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "chat_messages",
    "chat_request",
    "chat_tool_choice",
    "completion_view",
    "final_output",
    "finish_reason",
    "function_calls",
    "function_tools",
    "input_items",
    "input_list",
    "item_events",
    "output_text",
    "usage_view",
]


def function_tools(tools: Any) -> list[dict[str, Any]]:
    """The request's function tools as chat tools (hosted tools, which the model does not call
    with arguments of its own, are left out)."""
    out: list[dict[str, Any]] = []
    for tool in tools if isinstance(tools, list) else []:
        if not isinstance(tool, Mapping) or tool.get("type") != "function":
            continue
        fn = {k: tool[k] for k in ("name", "description", "parameters", "strict") if k in tool}
        out.append({"type": "function", "function": fn})
    return out


def chat_tool_choice(choice: Any) -> Any:
    """A Responses ``tool_choice`` in the chat shape (a hosted tool's choice reads as ``auto``:
    it forces no function call)."""
    if choice is None or isinstance(choice, str):
        return choice
    if not isinstance(choice, Mapping):
        return choice
    if choice.get("type") == "function":
        return {"type": "function", "function": {"name": choice.get("name")}}
    if choice.get("type") == "allowed_tools":
        tools = choice.get("tools")
        names = [{"type": "function", "function": {"name": t.get("name")}}
                 for t in tools if isinstance(t, Mapping) and t.get("type") == "function"] if isinstance(tools, list) else []  # fmt: skip
        return {
            "type": "allowed_tools",
            "allowed_tools": {"mode": choice.get("mode") or "auto", "tools": names},
        }
    return "auto"


def _text(content: Any) -> str:
    """The text of a message's content: a string, or the text of its parts."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(str(p.get("text") or p.get("refusal") or "") for p in content if isinstance(p, Mapping))


def input_list(body: Mapping[str, Any]) -> list[Any]:
    """``input`` as a list of items (a string is one user message)."""
    given = body.get("input")
    if given is None:
        return []
    if isinstance(given, str):
        return [{"role": "user", "content": given}]
    return list(given) if isinstance(given, list) else []


def chat_messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The conversation of a Responses request as chat messages (``instructions`` first as a
    system message); items without a chat counterpart (reasoning, hosted tools) are left out."""
    out: list[dict[str, Any]] = []
    if isinstance(body.get("instructions"), str):
        out.append({"role": "system", "content": body["instructions"]})
    for item in input_list(body):
        if not isinstance(item, Mapping):
            continue
        kind = item.get("type", "message")
        if kind == "message" and isinstance(item.get("role"), str):
            out.append({"role": item["role"], "content": _text(item.get("content"))})
        elif kind == "function_call":
            call = {"id": item.get("call_id"), "type": "function",
                    "function": {"name": item.get("name"), "arguments": item.get("arguments")}}  # fmt: skip
            last = out[-1] if out else None
            if last is not None and last["role"] == "assistant" and "tool_calls" in last:
                last["tool_calls"].append(call)
            else:
                out.append({"role": "assistant", "content": "", "tool_calls": [call]})
        elif kind == "function_call_output":
            out.append(
                {"role": "tool", "tool_call_id": item.get("call_id"), "content": _text(item.get("output"))}
            )
    return out


def chat_request(body: Mapping[str, Any]) -> dict[str, Any]:
    """What the guard reads of a Responses request, in the chat shape: ``messages``, ``tools``,
    ``tool_choice``, ``parallel_tool_calls`` and the token cap."""
    out: dict[str, Any] = {"model": body.get("model"), "messages": chat_messages(body),
                           "tools": function_tools(body.get("tools"))}  # fmt: skip
    if "tool_choice" in body:
        out["tool_choice"] = chat_tool_choice(body["tool_choice"])
    if "parallel_tool_calls" in body:
        out["parallel_tool_calls"] = body["parallel_tool_calls"]
    if isinstance(body.get("max_output_tokens"), int):
        out["max_completion_tokens"] = body["max_output_tokens"]
    return out


def input_items(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Chat messages (the guard's re-ask exchange) as Responses input items: an assistant's calls
    as ``function_call`` items, each tool message as the ``function_call_output`` item that
    answers its call."""
    out: list[dict[str, Any]] = []
    for m in messages:
        role = m.get("role")
        if role == "tool":
            out.append({"type": "function_call_output", "call_id": m.get("tool_call_id"),
                        "output": _text(m.get("content"))})  # fmt: skip
            continue
        text = _text(m.get("content"))
        if text or not m.get("tool_calls"):
            out.append({"role": role, "content": text})
        for c in m.get("tool_calls") or []:
            fn = c.get("function") or {}
            out.append({"type": "function_call", "call_id": c.get("id"), "name": fn.get("name"),
                        "arguments": fn.get("arguments")})  # fmt: skip
    return out


def function_calls(output: Any) -> list[dict[str, Any]]:
    """The ``function_call`` items of a response's ``output`` as chat ``tool_calls`` (the
    ``call_id`` is the call's id)."""
    out = []
    for item in output if isinstance(output, list) else []:
        if isinstance(item, Mapping) and item.get("type") == "function_call":
            out.append({"id": item.get("call_id"), "type": "function",
                        "function": {"name": item.get("name"), "arguments": item.get("arguments")}})  # fmt: skip
    return out


def output_text(output: Any) -> str:
    """The text of a response's assistant messages."""
    return "".join(
        _text(item.get("content"))
        for item in (output if isinstance(output, list) else [])
        if isinstance(item, Mapping) and item.get("type") == "message"
    )


def finish_reason(response: Mapping[str, Any]) -> str:
    """The chat ``finish_reason`` a response stands for: ``length`` when ``max_output_tokens``
    cut it off, ``tool_calls`` when it calls a function, else ``stop``."""
    details = response.get("incomplete_details")
    if response.get("status") == "incomplete" and (
        not isinstance(details, Mapping) or details.get("reason") in (None, "max_output_tokens")
    ):
        return "length"
    return "tool_calls" if function_calls(response.get("output")) else "stop"


def usage_view(usage: Any) -> dict[str, int] | None:
    """Responses ``usage`` (input/output tokens) as chat usage (prompt/completion tokens)."""
    if not isinstance(usage, Mapping):
        return None
    p, c = int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
    return {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}


def completion_view(response: Mapping[str, Any]) -> dict[str, Any]:
    """A response as the chat completion that says the same (what the guard's re-ask reads)."""
    message: dict[str, Any] = {"role": "assistant", "content": output_text(response.get("output")) or None}
    calls = function_calls(response.get("output"))
    if calls:
        message["tool_calls"] = calls
    out: dict[str, Any] = {
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason(response)}]
    }
    usage = usage_view(response.get("usage"))
    if usage is not None:
        out["usage"] = usage
    return out


def final_output(
    output: Sequence[Any],
    calls: Sequence[Mapping[str, Any]],
    content: str | None,
    known: Mapping[str, Mapping[str, Any]],
) -> list[Any]:
    """The ``output`` the client gets: the upstream's items in their order, the function calls
    replaced by ``calls`` (chat ``tool_calls``, the guard's verdict) where the first call was, or
    at the end. A call that is one of ``known`` (by ``call_id``: the upstream's items, first
    answer and re-asks) with the same name and arguments is that item unchanged; a changed one
    keeps its item's fields with the new name and arguments. Assistant text is ``content``
    when that differs from the items' (a call printed as text was taken out of it)."""
    items: list[Any] = []
    for c in calls:
        fn = c.get("function") or {}
        base = known.get(str(c.get("id")))
        if (
            base is not None
            and base.get("name") == fn.get("name")
            and base.get("arguments") == fn.get("arguments")
        ):
            items.append(base)
            continue
        item: dict[str, Any] = (
            dict(base) if base is not None else {"id": "fc_" + secrets.token_hex(12), "type": "function_call"}
        )
        item.update(
            call_id=c.get("id"), name=fn.get("name"), arguments=fn.get("arguments"), status="completed"
        )
        items.append(item)
    text_changed = (content or "") != output_text(output)
    out: list[Any] = []
    placed = False
    for item in output:
        kind = item.get("type") if isinstance(item, Mapping) else None
        if kind == "function_call":
            if not placed:
                out.extend(items)
                placed = True
            continue
        if kind == "message" and text_changed:
            if content:
                out.append({**item, "content": [{"type": "output_text", "text": content, "annotations": []}]})
                text_changed = False  # the whole text goes into the first message
            continue
        out.append(item)
    if not placed:
        out.extend(items)
    if text_changed and content:
        # The text came from a re-ask's answer (the loop breaker asks the model to stop calling):
        # the first answer had no message item to carry it.
        out.append({"id": "msg_" + secrets.token_hex(12), "type": "message", "role": "assistant",
                    "status": "completed", "content": [{"type": "output_text", "text": content, "annotations": []}]})  # fmt: skip
    return out


def item_events(item: Mapping[str, Any], index: int) -> list[dict[str, Any]]:
    """The events that announce ``item`` at ``output_index`` ``index`` (``sequence_number`` is
    the caller's to add): a function call's arguments as one delta and its ``.done``; a
    message's text parts as one delta each; any other item as added, then done."""
    kind = item.get("type")
    item_id = item.get("id") or ""
    base = {"output_index": index}
    if kind == "function_call":
        args = item.get("arguments") or ""
        return [
            {"type": "response.output_item.added", **base, "item": {**item, "arguments": "", "status": "in_progress"}},
            {"type": "response.function_call_arguments.delta", **base, "item_id": item_id, "delta": args},
            {"type": "response.function_call_arguments.done", **base, "item_id": item_id, "arguments": args},
            {"type": "response.output_item.done", **base, "item": dict(item)},
        ]  # fmt: skip
    if kind == "message":
        out: list[dict[str, Any]] = [
            {
                "type": "response.output_item.added",
                **base,
                "item": {**item, "content": [], "status": "in_progress"},
            }
        ]
        for j, part in enumerate(item.get("content") or []):
            at = {**base, "item_id": item_id, "content_index": j}
            text = part.get("text") if isinstance(part, Mapping) else None
            if part.get("type") == "output_text" and isinstance(text, str):
                empty = {**part, "text": ""}
                out += [
                    {"type": "response.content_part.added", **at, "part": empty},
                    {"type": "response.output_text.delta", **at, "delta": text, "logprobs": []},
                    {"type": "response.output_text.done", **at, "text": text, "logprobs": []},
                    {"type": "response.content_part.done", **at, "part": dict(part)},
                ]  # fmt: skip
            else:
                out += [{"type": "response.content_part.added", **at, "part": part},
                        {"type": "response.content_part.done", **at, "part": part}]  # fmt: skip
        out.append({"type": "response.output_item.done", **base, "item": dict(item)})
        return out
    return [
        {"type": "response.output_item.added", **base, "item": dict(item)},
        {"type": "response.output_item.done", **base, "item": dict(item)},
    ]
