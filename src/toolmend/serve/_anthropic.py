"""``POST /v1/messages``: Anthropic Messages through the guard, forwarded to ``{upstream}/messages``.

An Anthropic client points ``base_url`` at the proxy (``http://H:P``). The request is checked in
Messages terms (a 400 in Anthropic's error shape names the field; nothing goes upstream), sent on
as the client's bytes, and the answer is judged by :func:`~toolmend.serve._verdict.judge`, the
chat path's own, through a chat-shaped view of it: ``tools[].input_schema`` as the tools,
``tool_choice`` (``auto``/``any``/``tool``/``none``, ``disable_parallel_tool_use``) as what is
allowed, the ``tool_use`` blocks as the calls. A hidden re-ask goes to the same endpoint as an
assistant turn with the ``tool_use`` blocks and a user turn of ``tool_result`` blocks
(``is_error: true``) that say what is wrong.

A clean answer goes back as the upstream's bytes. A stream passes text and thinking through as
they come and holds every ``tool_use`` block (and ``message_delta``) until the guard has decided;
a clean call's events then go out as they came, a changed answer as blocks bracketed strictly
(start, deltas, stop), with one ``message_delta`` right before ``message_stop``. Errors are
Anthropic-shaped (``{"type": "error", "error": {"type", "message"}}``) with the status a client
expects: the upstream's own (529 ``overloaded_error`` included), 422 when the guard gives up.

>>> anthropic_error("messages: field required", param="messages")["error"]["type"]
'invalid_request_error'
>>> try:
...     validate_messages({"messages": [{"role": "user", "content": "hi"}]})
... except RequestError as exc:
...     print(exc.status, exc.param, exc)
400 model model: field required (the model to ask)
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aiohttp import web

from toolmend.guard._anthropic import (
    FINISH_OF,
    MessageAssembler,
    MessageShapeError,
    anthropic_turns,
    block_events,
    chat_messages,
    choice_as_openai,
    events_of,
    native_calls,
    stop_reason_of,
    text_of,
    tools_as_openai,
    wire_calls,
)
from toolmend.serve import _json as fastjson
from toolmend.serve._assembler import ContentGate
from toolmend.serve._budget import read_body
from toolmend.serve._exchange import Exchange, comment_line, event_json, incomplete, json_response, mime
from toolmend.serve._protocol import RequestError, parse_body, request_checker
from toolmend.serve._upstream import (
    UpstreamError,
    redact,
)
from toolmend.serve._verdict import Answer, Verdict, split_content

if TYPE_CHECKING:
    from toolmend.serve._app import ServeConfig, _Proxy

__all__ = ["MessagesExchange", "anthropic_error", "count_tokens_handler", "validate_messages"]

_PATH = "/messages"
_KEY = "x-api-key"

_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 402: "billing_error",
                403: "permission_error", 404: "not_found_error", 413: "request_too_large",
                429: "rate_limit_error", 504: "timeout_error", 529: "overloaded_error"}  # fmt: skip
_CHOICES = ("auto", "any", "tool", "none")


def anthropic_error(message: str, *, type: str = "invalid_request_error", **extra: Any) -> dict[str, Any]:
    """An Anthropic-shaped error body (``extra``: toolmend's own keys, such as ``findings``)."""
    return {"type": "error", "error": {"type": type, "message": message, **extra}}


def _error_type(status: int) -> str:
    return _ERROR_TYPES.get(status) or ("api_error" if status >= 500 else "invalid_request_error")


def _need(cond: bool, message: str, param: str) -> None:
    if not cond:
        raise RequestError(message, param=param)


def validate_messages(body: Mapping[str, Any]) -> None:
    """Raise :class:`~toolmend.serve.RequestError` for a Messages request the proxy cannot forward
    or guard (no ``model``, no ``messages``, a tool whose ``input_schema`` is not a JSON Schema, a
    ``tool_choice`` naming no offered tool). Fields the proxy does not read go on as they are."""
    _need("model" in body, "model: field required (the model to ask)", "model")
    _need(
        isinstance(body["model"], str) and bool(body["model"]), "model: must be a non-empty string", "model"
    )
    messages = body.get("messages")
    _need(isinstance(messages, list) and bool(messages), "messages: must be a non-empty array", "messages")
    assert isinstance(messages, list)
    for i, m in enumerate(messages):
        where = f"messages.{i}"
        _need(isinstance(m, dict), f"{where}: must be an object", where)
        _need(m.get("role") in ("user", "assistant"),
              f"{where}.role: must be 'user' or 'assistant', got {m.get('role')!r}", f"{where}.role")  # fmt: skip
        _need(isinstance(m.get("content"), str | list),
              f"{where}.content: must be a string or an array of content blocks", f"{where}.content")  # fmt: skip
    system = body.get("system")
    _need(system is None or isinstance(system, str | list), "system: must be a string or an array of text blocks",
          "system")  # fmt: skip
    if "stream" in body:
        _need(
            isinstance(body["stream"], bool) or body["stream"] is None, "stream: must be a boolean", "stream"
        )
    if "max_tokens" in body:
        _need(type(body["max_tokens"]) is int, "max_tokens: must be an integer", "max_tokens")
    tools = body.get("tools")
    if tools is not None:
        _need(isinstance(tools, list), "tools: must be an array", "tools")
        for i, tool in enumerate(tools):
            where = f"tools.{i}"
            _need(isinstance(tool, dict), f"{where}: must be an object", where)
            _need(isinstance(tool.get("name"), str) and bool(tool["name"]),
                  f"{where}.name: must be a non-empty string", f"{where}.name")  # fmt: skip
            if tool.get("type") in (None, "custom"):
                _need(isinstance(tool.get("input_schema"), dict),
                      f"{where}.input_schema: field required (a JSON Schema object)", f"{where}.input_schema")  # fmt: skip
        try:
            request_checker(tools_as_openai(tools))
        except RequestError as exc:
            text = str(exc).replace("tools[", "tools.").replace("].function.parameters", ".input_schema")
            raise RequestError(text, param="tools") from None
    choice = body.get("tool_choice")
    if choice is not None:
        _need(isinstance(choice, dict) and choice.get("type") in _CHOICES,
              "tool_choice.type: must be one of auto, any, tool, none", "tool_choice")  # fmt: skip
        if choice["type"] == "tool":
            names = [t["name"] for t in tools or () if isinstance(t, dict)]
            _need(choice.get("name") in names,
                  f"tool_choice.name: names the tool {choice.get('name')!r}, which is not in tools "
                  f"({', '.join(names) or 'none'})", "tool_choice.name")  # fmt: skip


def chat_view(body: Mapping[str, Any]) -> dict[str, Any]:
    """The request as :func:`judge` reads it: chat tools, ``tool_choice`` and
    ``parallel_tool_calls``, ``max_tokens``, and the conversation (for grounding) as it is."""
    system = body.get("system")
    history = [{"role": "system", "content": text_of(system)}] if system else []
    view = {"model": body.get("model"), "messages": [*history, *(body.get("messages") or ())],
            "tools": tools_as_openai(body.get("tools") or ()), **choice_as_openai(body.get("tool_choice"))}  # fmt: skip
    if type(body.get("max_tokens")) is int:
        view["max_tokens"] = body["max_tokens"]
    return view


def check_message(data: Any) -> None:
    """Raise a 502 :class:`UpstreamError` when ``data`` is not a Messages answer's shape (what the
    proxy and every client read of it)."""
    if not isinstance(data, dict):
        _bad("the answer", "an object", data)
    content = data.get("content")
    if not isinstance(content, list):
        _bad("content", "an array", content)
    for i, b in enumerate(content):
        if not isinstance(b, dict) or not isinstance(b.get("type"), str):
            _bad(f"content[{i}]", "an object with a type", b)
        if b["type"] == "text" and not isinstance(b.get("text"), str):
            _bad(f"content[{i}].text", "a string", b.get("text"))
        if b["type"] == "tool_use":
            if not isinstance(b.get("name"), str):
                _bad(f"content[{i}].name", "a string", b.get("name"))
            if not isinstance(b.get("input"), dict | str):
                _bad(f"content[{i}].input", "an object", b.get("input"))


def _bad(where: str, expected: str, got: Any) -> None:
    raise UpstreamError(f"the upstream's answer is malformed: {where} must be {expected}, got "
                        f"{type(got).__name__}", status=502, kind="upstream_invalid")  # fmt: skip


def _usage(data: Mapping[str, Any]) -> dict[str, int]:
    u = data.get("usage")
    u = u if isinstance(u, Mapping) else {}
    return {
        "prompt_tokens": _count(u.get("input_tokens")),
        "completion_tokens": _count(u.get("output_tokens")),
    }


def _count(value: Any) -> int:
    """A token count as the upstream gave it; anything but a whole number counts as 0 (a
    malformed ``usage`` is the upstream's fault, not a reason to fail the answer)."""
    return value if type(value) is int else 0


def _thinking(content: Any) -> list[dict[str, Any]]:
    """The thinking blocks an answer begins with (a re-ask's assistant turn must carry them)."""
    out = []
    for b in content or ():
        if not isinstance(b, dict) or b.get("type") not in ("thinking", "redacted_thinking"):
            break
        out.append(b)
    return out


def completion_view(data: Mapping[str, Any]) -> dict[str, Any]:
    """A Messages answer as the chat completion :func:`judge` reads from a re-ask (the answer
    itself rides along under ``message``, for traces)."""
    content = data.get("content")
    calls = wire_calls(native_calls(content))
    message: dict[str, Any] = {"role": "assistant", "content": text_of(content) or None}
    if calls:
        message["tool_calls"] = calls
    finish = FINISH_OF.get(str(data.get("stop_reason")), "stop")
    return {"choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": _usage(data),
            "message": data}  # fmt: skip


def _frame(kind: str, data: bytes) -> bytes:
    return b"event: " + kind.encode() + b"\ndata: " + data + b"\n\n"


def _event(obj: Mapping[str, Any]) -> bytes:
    return _frame(str(obj["type"]), fastjson.dumps(obj))


def count_tokens_handler(proxy: _Proxy) -> Any:
    """The ``/v1/messages/count_tokens`` handler of ``proxy``: passed on to
    ``{upstream}/messages/count_tokens`` as it is (Claude Code asks it before long requests;
    there is no answer to guard), with the same keys, checks of ``model`` and error shapes."""

    async def handle(request: web.Request) -> web.StreamResponse:
        try:
            raw = await read_body(request, proxy.config.limits)
            body = parse_body(raw)
            _need("model" in body, "model: field required (the model to ask)", "model")
        except RequestError as exc:
            proxy.metrics.inc("toolmend_bad_requests_total", status=str(exc.status))
            return json_response(exc.status, MessagesExchange.refusal(exc))
        ex = MessagesExchange(proxy, request, body, time.perf_counter(), raw)
        try:
            reply = await proxy.upstream.post(_PATH + "/count_tokens", raw, ex.incoming, _KEY)
        except UpstreamError as exc:
            return ex._failed(exc)
        return web.Response(body=reply.raw, content_type=mime(reply.headers))

    return handle


class MessagesExchange(Exchange):
    """One Messages request on its way through."""

    path = _PATH
    key_header = _KEY
    stream_kind = "a messages stream"
    untyped_is_json = False

    def __init__(
        self, proxy: _Proxy, request: web.Request, body: dict[str, Any], started: float, raw: bytes
    ) -> None:
        super().__init__(proxy, request, body, started, raw)
        self.thinking: list[list[dict[str, Any]]] = []
        """The thinking blocks each answer so far began with, for the re-ask's assistant turns."""

    @staticmethod
    def validate(body: dict[str, Any], config: ServeConfig) -> None:
        validate_messages(body)

    @staticmethod
    def refusal(exc: RequestError) -> dict[str, Any]:
        return anthropic_error(str(exc), type=_error_type(exc.status))

    def chat_view(self, body: dict[str, Any]) -> dict[str, Any]:
        return chat_view(body)

    async def reask(self, extra: list[dict[str, Any]]) -> dict[str, Any]:
        """A hidden, non-streamed re-ask with ``extra`` (chat messages) as Messages turns."""
        turns = anthropic_turns(extra, self.thinking)
        body = {**self.body, "messages": [*self.body["messages"], *turns], "stream": False}
        reply = await self.proxy.upstream.post(_PATH, body, self.incoming, _KEY)
        self.proxy.metrics.inc("toolmend_reasks_total")
        data = reply.json()
        check_message(data)
        self.thinking.append(_thinking(data.get("content")))
        return completion_view(data)

    def error_body(self, exc: UpstreamError) -> dict[str, Any]:
        """The client's error for ``exc``: the upstream's type (529 is always ``overloaded_error``)
        and message, with no credential in it."""
        detail = exc.body.get("error") if isinstance(exc.body, dict) else None
        kind = _error_type(exc.status)
        message = str(exc)
        if isinstance(detail, dict) and isinstance(detail.get("message"), str):
            message = f"upstream error ({exc.status}): {detail['message']}"
            if isinstance(detail.get("type"), str) and exc.status != 529 and exc.body.get("type") == "error":
                kind = detail["type"]
        return dict(redact(anthropic_error(message, type=kind), self.proxy.secrets(self.request)))

    def gave_up_body(self, verdict: Verdict) -> dict[str, Any]:
        err = dict((verdict.error or {}).get("error") or {})
        return anthropic_error(str(err.get("message")), type=str(err.get("type") or "tool_call_error"),
                               code=err.get("code"), findings=err.get("findings"))  # fmt: skip

    def internal_error_body(self, exc: BaseException) -> dict[str, Any]:
        return anthropic_error("toolmend serve failed on this request; the proxy's log has the details",
                               type="api_error")  # fmt: skip

    def trace_request(self) -> dict[str, Any]:
        return {"model": self.body.get("model"), "messages": chat_messages(self.body), "tools": self.view["tools"],
                "protocol": "messages"}  # fmt: skip

    # -- non-streaming ------------------------------------------------------------------------

    def check(self, data: Any) -> None:
        check_message(data)

    def original_of(self, data: Any) -> dict[str, Any]:
        return _chat_message(text_of(data["content"]), native_calls(data["content"]))

    def answer_of(self, data: Any) -> Answer:
        content = data["content"]
        self.thinking.append(_thinking(content))
        sent, held = split_content(text_of(content), self.rescue)
        return Answer(sent=sent, held=held, tool_calls=wire_calls(native_calls(content)),
                      finish_reason=FINISH_OF.get(str(data.get("stop_reason")), "stop"), usage=_usage(data))  # fmt: skip

    def decided(self, data: Any, answer: Answer, verdict: Verdict) -> tuple[dict[str, Any], dict[str, Any]]:
        out = _rendered(data, answer, verdict)
        return out, _chat_message(text_of(out["content"]), native_calls(out["content"]))

    # -- streaming ------------------------------------------------------------------------------

    def events_of(self, data: Any) -> list[bytes]:
        check_message(data)
        return [fastjson.dumps(event) for event in events_of(data)]

    async def _relay(self, upstream: Any, response: web.StreamResponse, t: float) -> None:
        proxy = self.proxy
        hold = self.guarded and not self.config.shadow
        gate = ContentGate() if self.rescue else None
        asm = MessageAssembler()
        held: list[tuple[dict[str, Any], bytes]] = []
        """What the client has not seen yet, once holding began: (event, its bytes)."""
        ends: dict[str, bytes] = {}
        holding = False
        open_text: int | None = None
        """The text block left open for the client while the gate holds text back."""
        sent: list[str] = []
        shown = 0
        """How many blocks the client has seen start."""
        first = False
        try:
            async for data in self._events(upstream):
                event = event_json(data)
                if not isinstance(event, dict) or not isinstance(event.get("type"), str):
                    raise UpstreamError("the upstream sent a stream event that is not an object with a type",
                                        status=502, kind="upstream_invalid")  # fmt: skip
                kind = event["type"]
                if kind == "error":
                    detail = event.get("error")
                    message = detail.get("message") if isinstance(detail, dict) else str(detail or event)
                    raise UpstreamError(f"the upstream stream failed: {message}", status=502, body=event)
                try:
                    asm.add(event)
                except MessageShapeError as exc:
                    raise UpstreamError(f"the upstream sent a malformed stream event: {exc}", status=502,
                                        kind="upstream_invalid") from None  # fmt: skip
                if not first:
                    first = True
                    proxy.metrics.observe("toolmend_upstream_seconds", time.perf_counter() - t, stream="true")
                if not hold:
                    if kind == "content_block_delta" and event["delta"].get("type") == "text_delta":
                        sent.append(event["delta"]["text"])
                    await response.write(_frame(kind, data))
                    continue
                if kind in ("message_delta", "message_stop"):
                    ends[kind] = data
                    continue
                if kind in ("message_start", "ping") or (not holding and kind not in _BLOCK_EVENTS):
                    await response.write(_frame(kind, data))
                    continue
                if holding:
                    held.append((event, data))
                    continue
                index = event["index"]
                block = asm.blocks[index]
                if kind == "content_block_start":
                    if block["type"] == "tool_use" or index != shown:
                        holding = True
                        held.append((event, data))
                        continue
                    shown += 1
                    await response.write(_frame(kind, data))
                    continue
                delta = event.get("delta") or {}
                if kind == "content_block_delta" and delta.get("type") == "text_delta":
                    text = delta["text"]
                    passed = gate.feed(text) if gate is not None else text
                    if passed:
                        sent.append(passed)
                        await response.write(
                            _frame(kind, data) if passed == text else _event(_text_delta(index, passed))
                        )
                    if gate is not None and gate.held:
                        holding, open_text = True, index
                    continue
                if kind == "content_block_stop" and gate is not None and block["type"] == "text":
                    tail = gate.flush()
                    if tail:
                        sent.append(tail)
                        await response.write(_event(_text_delta(index, tail)))
                await response.write(_frame(kind, data))
        except UpstreamError as exc:
            await self._stream_failed(response, exc)
            return
        if not asm.done:
            await self._stream_failed(response, incomplete())
            return
        message = asm.message()
        whole = asm.text()
        already = "".join(sent)
        calls = asm.native_calls()
        answer = Answer(sent=already, held=whole[len(already):] if whole.startswith(already) else "",
                        tool_calls=wire_calls(calls), finish_reason=FINISH_OF.get(str(asm.stop_reason), "stop"),
                        usage=_usage(message))  # fmt: skip
        self.original = _chat_message(whole, calls)
        self.raw_upstream = {"streamed": message}
        if hold:
            self.thinking.append(_thinking(message.get("content")))
        verdict = await self._judged(response, answer)
        if verdict is None:
            return
        out: list[bytes] = []
        if not verdict.changed:
            if open_text is not None and gate is not None and gate.held:
                out.append(_event(_text_delta(open_text, gate.held)))
            out.extend(_frame(str(e["type"]), raw) for e, raw in held)
            out.append(_frame("message_delta", ends["message_delta"]) if "message_delta" in ends
                       else _event(_message_delta(asm, verdict)))  # fmt: skip
            self.final = self.original
        else:
            out.extend(self._changed(asm, held, answer, verdict, open_text, shown))
            out.append(_event(_message_delta(asm, verdict)))
            self.final = verdict.message()
        out.append(comment_line(verdict))
        out.append(_frame("message_stop", ends["message_stop"]))
        await response.write(b"".join(out))
        await response.write_eof()

    def _changed(self, asm: MessageAssembler, held: list[tuple[dict[str, Any], bytes]], answer: Answer,
                 verdict: Verdict, open_text: int | None, shown: int) -> list[bytes]:  # fmt: skip
        """The events after a changed verdict: the open text block ended (with the text it still
        owes), held blocks other than text and tool use, the rest of the text, then the calls
        (a call the guard kept as it was goes with the fragments it came in)."""
        out: list[bytes] = []
        content = verdict.content or ""
        rest = content[len(answer.sent) :] if content.startswith(answer.sent) else ""
        if open_text is not None:
            if rest:
                out.append(_event(_text_delta(open_text, rest)))
                rest = ""
            out.append(_event({"type": "content_block_stop", "index": open_text}))
        index = shown
        moved: dict[int, int] = {}
        for event, raw in held:
            at = event.get("index")
            if not isinstance(at, int) or at == open_text or asm.blocks[at]["type"] in ("text", "tool_use"):
                continue
            if at not in moved:
                moved[at], index = index, index + 1
            out.append(
                _frame(str(event["type"]), raw) if moved[at] == at else _event({**event, "index": moved[at]})
            )
        if rest:
            out.extend(_event(e) for e in block_events({"type": "text", "text": rest}, index))
            index += 1
        originals = {str(c["id"]): (c, i) for c, i in zip(answer.tool_calls, _tool_blocks(asm), strict=False)}
        for call in verdict.tool_calls:
            fn = call["function"]
            kept = originals.get(str(call["id"]))
            if kept is not None and kept[0] == call:
                block, pieces = asm.blocks[kept[1]], asm.fragments.get(kept[1]) or [asm.arguments(kept[1])]
            else:
                block, pieces = (
                    {"type": "tool_use", "id": call["id"], "name": fn["name"], "input": {}},
                    [fn["arguments"]],
                )
            out.extend(_event(e) for e in block_events(block, index, pieces))
            index += 1
        return out

    async def _end_with_error(self, response: web.StreamResponse, error: Mapping[str, Any]) -> None:
        await response.write(_event(error))
        await response.write_eof()


_BLOCK_EVENTS = ("content_block_start", "content_block_delta", "content_block_stop")


def _tool_blocks(asm: MessageAssembler) -> list[int]:
    return [i for i in asm.order if asm.blocks[i]["type"] == "tool_use"]


def _text_delta(index: int, text: str) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}}


def _message_delta(asm: MessageAssembler, verdict: Verdict) -> dict[str, Any]:
    """The one ``message_delta``: the verdict's stop reason, and usage with the hidden re-asks'
    tokens added (reported apart under ``toolmend``)."""
    usage = {k: v for k, v in asm.usage.items() if k not in ("input_tokens", "service_tier", "inference_geo")}
    usage["output_tokens"] = _count(asm.usage.get("output_tokens"))
    delta = {**asm.delta, "stop_reason": stop_reason_of(verdict.finish_reason, asm.stop_reason)}
    if delta["stop_reason"] != asm.stop_reason:
        delta["stop_sequence"] = None
    out: dict[str, Any] = {"type": "message_delta", "delta": delta, "usage": usage}
    if verdict.reasks:
        usage["input_tokens"] = _count(asm.usage.get("input_tokens")) + verdict.reask_usage["prompt_tokens"]
        usage["output_tokens"] += verdict.reask_usage["completion_tokens"]
    if verdict.changed or verdict.reasks:
        out["toolmend"] = verdict.summary()
    return out


def _rendered(data: Mapping[str, Any], answer: Answer, verdict: Verdict) -> dict[str, Any]:
    """A non-streamed answer as the verdict has it: other blocks in place, the text (unchanged, or
    the verdict's in one block where the first text was), then the calls; a call the guard kept
    as it was keeps its block."""
    same_text = (verdict.content or "") == answer.content
    blocks = {str(b.get("id")): b for b in data["content"] if b.get("type") == "tool_use"}
    originals = {str(c["id"]): c for c in answer.tool_calls}
    content: list[Any] = []
    placed = False
    for b in data["content"]:
        if b.get("type") == "tool_use":
            continue
        if b.get("type") == "text" and not same_text:
            if not placed and verdict.content:
                content.append({**b, "text": verdict.content})
            placed = True
            continue
        content.append(b)
    if not same_text and not placed and verdict.content:
        content.append({"type": "text", "text": verdict.content})
    for call in verdict.tool_calls:
        fn = call["function"]
        if originals.get(str(call["id"])) == call and str(call["id"]) in blocks:
            content.append(blocks[str(call["id"])])
        else:
            content.append(
                {
                    "type": "tool_use",
                    "id": call["id"],
                    "name": fn["name"],
                    "input": _input(fn),
                }
            )
    out = dict(data)
    out["content"] = content
    out["stop_reason"] = stop_reason_of(verdict.finish_reason, data.get("stop_reason"))
    if out["stop_reason"] != data.get("stop_reason"):
        out["stop_sequence"] = None
    if verdict.reasks and isinstance(data.get("usage"), dict):
        usage = dict(data["usage"])
        usage["input_tokens"] = _count(usage.get("input_tokens")) + verdict.reask_usage["prompt_tokens"]
        usage["output_tokens"] = _count(usage.get("output_tokens")) + verdict.reask_usage["completion_tokens"]
        out["usage"] = usage
    out["toolmend"] = verdict.summary()
    return out


def _input(fn: Mapping[str, Any]) -> Any:
    """A decided call's arguments as a ``tool_use`` input (the guard hands on JSON objects only)."""
    try:
        return json.loads(fn["arguments"])
    except (TypeError, json.JSONDecodeError):
        return {}


def _chat_message(text: str, calls: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        out["tool_calls"] = wire_calls(calls)
    return out
