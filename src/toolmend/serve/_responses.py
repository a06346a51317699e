"""``POST /v1/responses``: the OpenAI Responses API through the guard.

The request goes to ``{upstream}/responses`` as the client sent it (non-streamed stays
non-streamed). Its ``function_call`` output items are judged exactly as a chat answer's
``tool_calls`` are: the request and the answer are read in the chat shape
(:mod:`toolmend.guard._responses`) and handed to :func:`~toolmend.serve.judge`, whose hidden
re-asks go to the same endpoint as ``function_call`` + ``function_call_output`` items. The
verdict comes back as Responses output items:

- a clean answer is the upstream's bytes; a clean streamed call's events are the upstream's
  bytes too (a stream is passed through until its first function call, whose events are held
  until the guard has decided);
- a changed answer keeps every item the guard did not change; in a stream the items from the
  first held one on are announced again (added, argument delta, ``.done``, item done), with
  ``sequence_number`` continuing, and ``response.completed`` carries the same output;
- a rejected call is in no event the client sees; an answer the guard gives up on is a 422 (an
  ``error`` event in a stream).

>>> validate_responses({"input": "hi"})
Traceback (most recent call last):
...
toolmend.serve._protocol.RequestError: Missing required parameter: 'model'.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from aiohttp import web

from toolmend.guard._responses import (
    chat_request,
    completion_view,
    final_output,
    finish_reason,
    function_calls,
    function_tools,
    input_items,
    input_list,
    output_text,
    usage_view,
)
from toolmend.serve import _json as fastjson
from toolmend.serve._exchange import Exchange, comment_line, event_json, incomplete
from toolmend.serve._protocol import RequestError, _require, request_checker
from toolmend.serve._responses_stream import (
    TERMINAL,
    ResponseStreamAssembler,
    check_response,
    item_events,
)
from toolmend.serve._upstream import UpstreamError
from toolmend.serve._verdict import Answer, Verdict, split_content

if TYPE_CHECKING:
    from toolmend.serve._app import ServeConfig, _Proxy

__all__ = ["RESPONSES_FIELDS", "ResponsesExchange", "validate_responses"]

_PATH = "/responses"

RESPONSES_FIELDS = frozenset(
    {
        "model", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls", "stream",
        "stream_options", "max_output_tokens", "max_tool_calls", "temperature", "top_p", "top_logprobs",
        "text", "reasoning", "include", "metadata", "store", "previous_response_id", "conversation",
        "prompt", "prompt_cache_key", "prompt_cache_options", "prompt_cache_retention", "safety_identifier",
        "service_tier", "truncation", "user", "background", "background_options", "context_management",
        "image", "moderation", "access_programs",
        # sampling extras of vLLM's and SGLang's /v1/responses
        "top_k", "min_p", "repetition_penalty", "seed", "stop", "request_id", "priority",
    }
)  # fmt: skip
"""Top-level fields of a Responses request the proxy forwards (the openai SDK's
``ResponseCreateParams``, and the sampling extras of open servers); any other is a 400
(``toolmend serve --allow-field NAME`` adds more)."""

_TOOL_AT = re.compile(r"tools\[(\d+)\]\.function\.")


def validate_responses(body: Mapping[str, Any], extra_fields: Iterable[str] = ()) -> None:
    """Raise :class:`~toolmend.serve.RequestError` for a Responses request the proxy cannot
    forward safely, naming the field: an unknown field, no ``model``, an ``input`` that is
    neither text nor items, a function tool without a name or with a ``parameters`` that is no
    JSON Schema, a ``tool_choice`` naming no offered function."""
    allowed = RESPONSES_FIELDS.union(extra_fields)
    for key in body:
        _require(key in allowed, f"Unrecognized request argument supplied: {key}", key, "unknown_parameter")
    _require("model" in body, "Missing required parameter: 'model'.", "model", "missing_required_parameter")
    _require(isinstance(body["model"], str), "'model' must be a string.", "model")
    given = body.get("input")
    if given is not None:
        _require(isinstance(given, str | list), "'input' must be a string or an array of items.", "input")
        for i, item in enumerate(given if isinstance(given, list) else []):
            _require(isinstance(item, dict), f"input[{i}] must be an object.", f"input[{i}]")
    if "stream" in body:
        _require(
            isinstance(body["stream"], bool) or body["stream"] is None,
            "'stream' must be a boolean.",
            "stream",
        )
    tools = body.get("tools")
    if tools is None:
        _check_choice(body.get("tool_choice"), [])
        return
    _require(isinstance(tools, list), "'tools' must be an array.", "tools")
    where: list[int] = []
    for i, tool in enumerate(tools):
        _require(isinstance(tool, dict) and isinstance(tool.get("type"), str),
                 f"tools[{i}] must be an object with a 'type'.", f"tools[{i}]")  # fmt: skip
        if tool["type"] != "function":
            continue
        name = tool.get("name")
        _require(isinstance(name, str) and bool(name), f"tools[{i}].name must be a non-empty string.",
                 f"tools[{i}].name")  # fmt: skip
        where.append(i)
    chat = function_tools(tools)
    try:
        request_checker(chat)
    except RequestError as exc:
        # The check names a chat tool's place; the client sent a Responses tool at another one.
        def place(text: str) -> str:
            return _TOOL_AT.sub(lambda m: f"tools[{where[int(m.group(1))]}].", text)

        raise RequestError(place(str(exc)), param=place(exc.param or "tools"), code=exc.code) from None
    _check_choice(body.get("tool_choice"), [t["function"]["name"] for t in chat])


def _check_choice(choice: Any, names: list[str]) -> None:
    if choice is None or choice in ("none", "auto", "required"):
        return
    _require(isinstance(choice, dict) and isinstance(choice.get("type"), str),
             "'tool_choice' must be none, auto, required or an object with a 'type'.", "tool_choice")  # fmt: skip
    if choice["type"] == "function":
        wanted = [choice.get("name")]
    elif choice["type"] == "allowed_tools":
        tools = choice.get("tools")
        _require(isinstance(tools, list), "'tool_choice.tools' must be an array.", "tool_choice.tools")
        wanted = [t.get("name") for t in tools if isinstance(t, dict) and t.get("type") == "function"]
    else:
        return  # a hosted tool's choice: the upstream's to check
    for name in wanted:
        _require(name in names,
                 f"'tool_choice' names the function {name!r}, which is not in 'tools' ({', '.join(names) or 'none'}).",
                 "tool_choice")  # fmt: skip


def _line(event: Mapping[str, Any] | bytes, kind: str) -> bytes:
    data = event if isinstance(event, bytes) else fastjson.dumps(event)
    return b"event: " + kind.encode() + b"\ndata: " + data + b"\n\n"


class ResponsesExchange(Exchange):
    """One Responses request on its way through. :attr:`view` (what :func:`judge` reads, and
    what traces record) is the request in the chat shape; ``body`` is the client's own."""

    path = _PATH
    stream_kind = "a responses stream"

    def __init__(
        self, proxy: _Proxy, request: web.Request, body: dict[str, Any], started: float, raw: bytes
    ) -> None:
        super().__init__(proxy, request, body, started, raw)
        self.known: dict[str, dict[str, Any]] = {}
        """Every function-call item the upstream sent (first answer and re-asks), by call_id."""
        self.seq = -1
        """The last ``sequence_number`` the client was sent (streams)."""

    @staticmethod
    def validate(body: dict[str, Any], config: ServeConfig) -> None:
        validate_responses(body, config.extra_fields)

    def chat_view(self, body: dict[str, Any]) -> dict[str, Any]:
        return chat_request(body)

    def guards(self) -> bool:
        return bool(self.view["tools"])

    def tool_choice(self) -> Any:
        return self.body.get("tool_choice")

    def _learn(self, output: list[Any]) -> None:
        for item in output:
            if isinstance(item, dict) and item.get("type") == "function_call":
                self.known[str(item.get("call_id"))] = item

    async def reask(self, extra: list[dict[str, Any]]) -> dict[str, Any]:
        """A hidden, non-streamed re-ask to the same endpoint: the request's input with the
        guard's exchange appended as items (the calls, then a ``function_call_output`` for each
        that says what is wrong)."""
        body = {**self.body, "input": [*input_list(self.body), *input_items(extra)], "stream": False}
        body.pop("stream_options", None)
        reply = await self.proxy.upstream.post(_PATH, body, self.incoming)
        self.proxy.metrics.inc("toolmend_reasks_total")
        data = reply.json()
        check_response(data)
        self._learn(data["output"])
        return completion_view(data)

    def _answer(self, data: Mapping[str, Any], rescue: bool) -> Answer:
        output = data.get("output")
        self._learn(output if isinstance(output, list) else [])
        sent, held = split_content(output_text(output), rescue)
        return Answer(sent=sent, held=held, tool_calls=function_calls(output), finish_reason=finish_reason(data),
                      usage=usage_view(data.get("usage")))  # fmt: skip

    def _decided(self, data: Mapping[str, Any], verdict: Verdict) -> dict[str, Any]:
        """The client's response: ``data`` with the verdict's output, status and usage."""
        out = dict(data)
        out["output"] = final_output(data["output"], verdict.tool_calls, verdict.content, self.known)
        if verdict.finish_reason == "length":
            out["status"], out["incomplete_details"] = "incomplete", {"reason": "max_output_tokens"}
        usage = data.get("usage")
        if verdict.reasks and isinstance(usage, dict):
            extra = verdict.reask_usage
            usage = dict(usage)
            usage["input_tokens"] = int(usage.get("input_tokens") or 0) + extra["prompt_tokens"]
            usage["output_tokens"] = int(usage.get("output_tokens") or 0) + extra["completion_tokens"]
            usage["total_tokens"] = usage["input_tokens"] + usage["output_tokens"]
            out["usage"] = usage
        out["toolmend"] = verdict.summary()
        return out

    # -- non-streaming ------------------------------------------------------------------------

    def check(self, data: Any) -> None:
        check_response(data)

    def original_of(self, data: Any) -> dict[str, Any]:
        output = data.get("output")
        return _message(output_text(output), function_calls(output))

    def answer_of(self, data: Any) -> Answer:
        return self._answer(data, self.rescue)

    def decided(self, data: Any, answer: Answer, verdict: Verdict) -> tuple[dict[str, Any], dict[str, Any]]:
        return self._decided(data, verdict), verdict.message()

    # -- streaming ------------------------------------------------------------------------------

    def events_of(self, data: Any) -> list[bytes]:
        check_response(data)
        events = [{"type": "response.created", "sequence_number": 0,
                   "response": {**data, "output": [], "status": "in_progress", "usage": None}}]  # fmt: skip
        for i, item in enumerate(data["output"]):
            events.extend(item_events(item, i))
        events.append({"type": "response.completed", "response": data})
        return [fastjson.dumps(event) for event in events]

    async def _relay(self, upstream: Any, response: web.StreamResponse, t: float) -> None:
        proxy = self.proxy
        hold = self.guarded and not self.config.shadow
        asm = ResponseStreamAssembler()
        held: list[bytes] = []
        held_from: int | None = None
        first = False
        try:
            async for data in self._events(upstream):
                if data == b"[DONE]":
                    continue  # not part of the Responses protocol; some servers send it anyway
                event = event_json(data)
                kind = event.get("type") if isinstance(event, dict) else None
                # The type is also the event's "event:" line: a line break in it would forge events.
                if not isinstance(kind, str) or "\n" in kind or "\r" in kind:
                    raise UpstreamError("the upstream sent a stream event without a 'type' on one line",
                                        status=502, kind="upstream_invalid")  # fmt: skip
                if not first:
                    first = True
                    proxy.metrics.observe("toolmend_upstream_seconds", time.perf_counter() - t, stream="true")
                if kind in ("error", "response.failed") and self.guarded:
                    detail = event.get("error") or (event.get("response") or {}).get("error") or event
                    message = detail.get("message") if isinstance(detail, dict) else None
                    raise UpstreamError(f"the upstream stream failed: {message or kind}", status=502,
                                        body={"error": detail} if isinstance(detail, dict) else None)  # fmt: skip
                asm.feed(event)
                if hold and held_from is None and (kind in TERMINAL or (
                    kind == "response.output_item.added" and event["item"].get("type") == "function_call"
                )):  # fmt: skip
                    held_from = event.get("output_index", asm.count) if kind not in TERMINAL else asm.count
                line = _line(data, kind)
                if held_from is not None:
                    held.append(line)
                    continue
                await response.write(line)
                seq = event.get("sequence_number")
                if isinstance(seq, int):
                    self.seq = seq
        except UpstreamError as exc:
            await self._stream_failed(response, exc)
            return
        if asm.terminal is None or asm.response is None:
            await self._stream_failed(response, incomplete())
            return
        final = {**asm.response, "output": asm.output()}
        answer = self._answer(final, False)
        self.original = _message(answer.content, answer.tool_calls)
        self.raw_upstream = {"streamed": self.original, "finish_reason": answer.finish_reason,
                             "usage": answer.usage}  # fmt: skip
        verdict = await self._judged(response, answer)
        if verdict is None:
            return
        if not verdict.changed and asm.consistent():
            await response.write(b"".join(held) + comment_line(verdict))
            await response.write_eof()
            self.final = self.original
            return
        decided = self._decided(final, verdict)
        start = asm.count if held_from is None else held_from
        events = [e for i, item in enumerate(decided["output"]) if i >= start for e in item_events(item, i)]
        events.append({"type": asm.terminal, "response": decided})
        out = []
        for event in events:
            self.seq += 1
            out.append(_line({**event, "sequence_number": self.seq}, event["type"]))
        # The rest of the answer goes out in one write: one syscall, not one per event.
        await response.write(b"".join(out) + comment_line(verdict))
        await response.write_eof()
        self.final = verdict.message()

    async def _end_with_error(self, response: web.StreamResponse, error: Mapping[str, Any]) -> None:
        """End a started stream with an ``error`` event. It carries the error object too, as the
        chat stream's does, so that the openai SDK raises it as an ``APIError``."""
        given = error.get("error")
        detail: Mapping[str, Any] = given if isinstance(given, dict) else {}
        self.seq += 1
        event = {"type": "error", "sequence_number": self.seq, "code": _code(detail.get("code")),
                 "message": detail.get("message") or "error", "param": detail.get("param"), **error}  # fmt: skip
        await response.write(_line(event, "error"))
        await response.write_eof()


def _code(code: Any) -> str | None:
    return None if code is None else str(code)


def _message(content: str, calls: list[dict[str, Any]]) -> dict[str, Any]:
    """An answer as the chat assistant message that traces record."""
    return {"role": "assistant", "content": content or None, **({"tool_calls": calls} if calls else {})}
