"""toolmend messages ↔ the OpenAI chat-completions wire format (also spoken by vLLM, SGLang,
Ollama and most hosted APIs).

Tool messages. toolmend's ``tool`` role (CriticTool's ``function`` role) is sent as a native
``tool`` message whenever it can be paired with an earlier assistant tool call — by its
``tool_call_id``, else by position, in which case the ids are assigned here (``call_<m>_<k>``)
because servers reject a tool message without one. A tool message that answers no call on
the wire (a trajectory where the call was written as text, or prompt mode) becomes a user
message ``Tool response (<name>): <content>``, which every server accepts.

An assistant turn with tool calls carries ``content: ""`` when it has no text, never ``null``
(some servers refuse null, and some chat templates need the key).

Prompt mode. The tools are described in the system prompt with :data:`DEFAULT_TOOL_PROMPT` (or a
user's template containing ``{tools}``) and earlier calls are written back as
``<tool_call>{"name": ..., "arguments": ...}</tool_call>`` lines, the format that prompt asks for.
"""

from __future__ import annotations

import json
import re
from typing import Any

from toolmend._errors import ModelError
from toolmend._schema import Message, Tool, ToolCall, resolve
from toolmend.formats._tools import to_openai_tool
from toolmend.models._base import Completion, GenerateRequest, RawToolCall, ToolMode, Usage
from toolmend.models._tool_names import ToolNameMap

__all__ = [
    "DEFAULT_TOOL_PROMPT",
    "build_chat_request",
    "error_detail",
    "estimate_prompt_tokens",
    "parse_chat_response",
    "prompt_text",
    "request_rejection",
    "render_tool_call_text",
    "render_tools_prompt",
    "to_wire_messages",
]

DEFAULT_TOOL_PROMPT = """\
You have access to the tools listed below, each given as a JSON Schema of its parameters.

To use a tool, reply with one line per call, exactly in this form:
<tool_call>{"name": "<tool name>", "arguments": {"<parameter>": <value>}}</tool_call>
Use only the tools and parameters listed, and give every required parameter. When no tool \
is needed, reply in plain text without any <tool_call> line.

Tools:
{tools}"""


def _plain(value: Any) -> Any:
    # A Ref is a placeholder for an earlier call's output; on the wire it is its name.
    return resolve(value, lambda ref: ref.target)


def _arguments_json(call: ToolCall) -> str:
    return json.dumps(_plain(call.arguments), ensure_ascii=False)


def render_tool_call_text(call: ToolCall) -> str:
    """A call in the prompt-mode text format."""
    body = json.dumps({"name": call.name, "arguments": _plain(call.arguments)}, ensure_ascii=False)
    return f"<tool_call>{body}</tool_call>"


def render_tools_prompt(tools: list[Tool], template: str = DEFAULT_TOOL_PROMPT) -> str:
    """The prompt-mode tool description: ``template`` with ``{tools}`` replaced by one JSON line per tool."""
    lines = "\n".join(json.dumps(to_openai_tool(t)["function"], ensure_ascii=False) for t in tools)
    return template.replace("{tools}", lines)


def _tool_as_user(m: Message) -> dict[str, Any]:
    who = f" ({m.name})" if m.name else ""
    return {"role": "user", "content": f"Tool response{who}: {m.content}"}


def to_wire_messages(
    messages: list[Message],
    *,
    names: ToolNameMap,
    mode: ToolMode = "native",
    system_suffix: str | None = None,
) -> list[dict[str, Any]]:
    """OpenAI chat messages for ``messages`` (see the module docstring for tool messages)."""
    out: list[dict[str, Any]] = []
    pending: list[str] = []
    seen: set[str] = set()
    for i, m in enumerate(messages):
        if m.role == "assistant" and m.tool_calls and mode == "native":
            calls = []
            pending = []
            for k, call in enumerate(m.tool_calls):
                call_id = call.id or f"call_{i}_{k}"
                pending.append(call_id)
                seen.add(call_id)
                calls.append(
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": names.to_wire(call.name), "arguments": _arguments_json(call)},
                    }
                )
            # A string, never null: llama-cpp-python answers 500 ("Input should be a valid string")
            # to a null content, and its chatml-function-calling template cannot render a missing
            # one; "" is what every server takes (OpenAI's spec allows it beside tool_calls).
            out.append({"role": "assistant", "content": m.content, "tool_calls": calls})
        elif m.role == "assistant" and m.tool_calls:
            text = "\n".join([m.content] * bool(m.content) + [render_tool_call_text(c) for c in m.tool_calls])
            out.append({"role": "assistant", "content": text})
        elif m.role == "tool":
            answers: str | None = m.tool_call_id if m.tool_call_id in seen else None
            if answers is None and m.tool_call_id is None and pending:
                answers = pending[0]
            if mode == "native" and answers is not None:
                if answers in pending:
                    pending.remove(answers)
                out.append({"role": "tool", "tool_call_id": answers, "content": m.content})
            else:
                out.append(_tool_as_user(m))
        else:
            out.append({"role": m.role, "content": m.content})
            if m.role != "assistant":
                pending = []
    if system_suffix:
        if out and out[0]["role"] == "system":
            out[0] = {**out[0], "content": f"{out[0]['content']}\n\n{system_suffix}".lstrip()}
        else:
            out.insert(0, {"role": "system", "content": system_suffix})
    return out


def build_chat_request(
    model: str,
    request: GenerateRequest,
    *,
    names: ToolNameMap,
    mode: ToolMode = "native",
    tool_prompt: str = DEFAULT_TOOL_PROMPT,
) -> dict[str, Any]:
    """The JSON body of a ``/chat/completions`` request."""
    prompt_tools = mode == "prompt" and bool(request.tools) and request.tool_choice != "none"
    body: dict[str, Any] = {
        "model": model,
        "messages": to_wire_messages(
            request.messages,
            names=names,
            mode=mode,
            system_suffix=render_tools_prompt(request.tools, tool_prompt) if prompt_tools else None,
        ),
    }
    if mode == "native" and request.tools:
        body["tools"] = [
            {**spec, "function": {**spec["function"], "name": names.to_wire(t.name)}}
            for t, spec in ((t, to_openai_tool(t)) for t in request.tools)
        ]
        choice = request.tool_choice
        if choice in ("auto", "none", "required"):
            body["tool_choice"] = choice
        elif choice is not None:
            body["tool_choice"] = {"type": "function", "function": {"name": names.to_wire(choice)}}
    cfg = request.config
    for field in ("temperature", "top_p", "max_tokens", "stop", "seed"):
        value = getattr(cfg, field)
        if value is not None:
            body[field] = value
    body.update(cfg.extra)
    return body


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part.get("text", "")
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


def _parse_call(raw: Any, names: ToolNameMap) -> tuple[RawToolCall, ToolCall | None]:
    fn = raw.get("function") if isinstance(raw, dict) else None
    if not isinstance(fn, dict):
        return RawToolCall(
            name="", arguments=json.dumps(raw, default=str), error="no 'function' object"
        ), None
    name = names.to_original(str(fn.get("name") or ""))
    call_id = raw.get("id") if isinstance(raw.get("id"), str) else None
    args = fn.get("arguments")
    if isinstance(args, dict):
        # Some servers (Ollama) send an object instead of a JSON string.
        return RawToolCall(id=call_id, name=name, arguments=json.dumps(args)), ToolCall(
            name=name, arguments=args, id=call_id
        )
    text = args if isinstance(args, str) else ""
    try:
        parsed = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        return RawToolCall(
            id=call_id, name=name, arguments=text, error=f"arguments are not valid JSON: {exc}"
        ), None
    if not isinstance(parsed, dict):
        error = f"arguments must be a JSON object, got {type(parsed).__name__}"
        return RawToolCall(id=call_id, name=name, arguments=text, error=error), None
    return RawToolCall(id=call_id, name=name, arguments=text), ToolCall(
        name=name, arguments=parsed, id=call_id
    )


def parse_chat_response(body: Any, *, names: ToolNameMap) -> Completion:
    """A :class:`Completion` from a decoded ``/chat/completions`` response.

    A response without a message is a protocol failure (:class:`~toolmend.ModelError`); broken
    tool-call arguments are the model's doing and stay data in ``raw_tool_calls``.
    """
    choices = body.get("choices") if isinstance(body, dict) else None
    detail = body.get("error") if isinstance(body, dict) else None
    if detail or not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        # Gateways answer overload with 200 and an error object or no choices: retry it like a 5xx.
        what = f"an error: {str(detail)[:300]}" if detail else "no choices"
        raise ModelError(f"HTTP 200 with {what}", retryable=True, status=200)
    choice = choices[0]
    message: dict[str, Any] = choice["message"] if isinstance(choice.get("message"), dict) else {}
    raws = message.get("tool_calls") or []
    if not raws and isinstance(message.get("function_call"), dict):
        raws = [{"function": message["function_call"]}]
    raw_calls: list[RawToolCall] = []
    calls: list[ToolCall] = []
    for raw in raws if isinstance(raws, list) else []:
        rc, call = _parse_call(raw, names)
        raw_calls.append(rc)
        if call is not None:
            calls.append(call)
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
    return Completion(
        text=_text_of(message.get("content")),
        tool_calls=calls,
        raw_tool_calls=raw_calls,
        usage=Usage(
            input_tokens=int(usage.get("prompt_tokens") or 0),
            output_tokens=int(usage.get("completion_tokens") or 0),
        ),
        finish_reason=choice.get("finish_reason") if isinstance(choice.get("finish_reason"), str) else None,
        model=body.get("model") if isinstance(body.get("model"), str) else "",
    )


def error_detail(raw: bytes, limit: int = 300) -> str:
    """The server's own words in an error response: OpenAI's ``error.message`` (FastAPI's
    ``detail``, a plain string ``error``), else the start of the body.

    >>> error_detail(b'{"error": {"message": "Input should be a valid string", "type": "x"}}')
    'Input should be a valid string'
    """
    text = raw.decode("utf-8", errors="replace")
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    found: Any = None
    if isinstance(body, dict):
        err = body.get("error")
        found = err.get("message") if isinstance(err, dict) else err
        if not isinstance(found, str) or not found:
            found = body.get("detail") or body.get("message")
    if found is not None and not isinstance(found, str):
        found = json.dumps(found, ensure_ascii=False)
    out = " ".join((found or text).split())
    return out if len(out) <= limit else out[: limit - 3] + "..."


# What servers say when the prompt does not fit: OpenAI and vLLM ("maximum context length"),
# llama.cpp ("exceeds the available context size"), llama-cpp-python ("exceed context window",
# code context_length_exceeded), TGI ("`inputs` tokens + `max_new_tokens` must be <=").
_CONTEXT = re.compile(
    r"context[ _](length|window|size)|maximum context|exceeds? (the )?(available )?context"
    r"|prompt is too long|tokens \+ `max_new_tokens`",
    re.IGNORECASE,
)
# How request validation reads (pydantic, as FastAPI servers such as llama-cpp-python answer a
# request whose shape they refuse, sometimes with a 500; OpenAI's invalid_request_error).
_REJECTED = re.compile(
    r"validation error|input should be|field required|extra inputs are not permitted|invalid_request_error",
    re.IGNORECASE,
)


def request_rejection(status: int, raw: bytes) -> str | None:
    """Why the server refused the request itself (a prompt too long for its context, or a request
    shape it does not take), in words naming the status and its message; ``None`` for any other
    answer. Such a failure is the request's, never the model's, and sending it again cannot help.

    >>> request_rejection(400, b'{"error": {"message": "The maximum context length is 8192 tokens"}}')
    "HTTP 400: the prompt does not fit the model's context (The maximum context length is 8192 tokens)"
    >>> request_rejection(500, b'{"error": {"message": "could not parse region as JSON"}}') is None
    True
    """
    if status not in (400, 413, 422) and status < 500:
        return None  # authentication, a wrong path, rate limits: their own errors say enough
    detail = error_detail(raw)
    if _CONTEXT.search(detail) or b"context_length_exceeded" in raw:
        return f"HTTP {status}: the prompt does not fit the model's context ({detail})"
    if _REJECTED.search(detail) or b"invalid_request_error" in raw:
        return f"HTTP {status}: the server refused toolmend's request, not the model's answer ({detail})"
    return None


# The pieces a GPT-style tokenizer (GPT-2, cl100k, Llama 3, Qwen, SmolLM) cuts text into before
# it merges bytes, each one or more tokens, never merged with its neighbours; drawn no finer than
# theirs (a leading space or mark joins a word, digits go in threes), so that counting them never
# says more than the tokenizer would. SentencePiece tokenizers cut finer still.
_PIECES = re.compile(
    r"'(?:[sdmt]|ll|ve|re)|(?:[^\r\n\w]|_)?[^\W\d_]+|\d{1,3}| ?(?:[^\s\w]|_)+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)


def prompt_text(body: dict[str, Any]) -> str:
    """What every chat template renders of a ``/chat/completions`` request, its own markup aside:
    the message texts, the calls' names and arguments, and the tool schemas as JSON."""
    parts: list[str] = []
    for m in body.get("messages") or []:
        if not isinstance(m, dict):
            continue
        parts.append(_text_of(m.get("content")))
        for call in m.get("tool_calls") or []:
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict):
                parts += [str(fn.get("name") or ""), str(fn.get("arguments") or "")]
    if body.get("tools"):
        parts.append(json.dumps(body["tools"], ensure_ascii=False))
    return "\n".join(parts)


def estimate_prompt_tokens(prompt: dict[str, Any] | str) -> int:
    """A lower bound on the tokens of a request's prompt (a request body, or its
    :func:`prompt_text`). A prompt this estimate puts over a context cannot fit; one under it may
    still not (the server's own answer says so then). Never more than the text's length.

    >>> estimate_prompt_tokens({"messages": [{"role": "user", "content": "Weather in Oslo, please."}]})
    6
    """
    text = prompt if isinstance(prompt, str) else prompt_text(prompt)
    return len(_PIECES.findall(text))
