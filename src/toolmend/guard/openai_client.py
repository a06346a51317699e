"""``toolmend.guard.wrap(client)``: an ``openai`` client whose ``chat.completions.create`` and
``responses.create`` / ``responses.stream`` are guarded — sync, async and streaming alike (extra
``openai``).

::

    from openai import OpenAI
    from toolmend.guard import GuardPolicy, wrap

    client = wrap(OpenAI(), tools=tools, policy=GuardPolicy(max_reasks_per_turn=2))
    response = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools)
    # response.choices[0].message.tool_calls are valid for `tools` (repaired or re-asked), or
    # GuardAborted was raised with the last response attached

Every call the model makes is checked against the tools (``tools=`` given to :func:`wrap`, else
the ``tools`` of each request). Safe repairs are applied in place; what repair cannot fix is
re-asked with a targeted message as a real second request (history kept provider-correct: every
``tool_calls[i].id`` is answered). ``usage`` of the returned response adds up every request the
turn took. A stream is read to its end before the guard decides, then replayed as chunks of the
decided message. When re-asking is off (``fail_to_model``), the returned message holds the valid
calls only (the bad ones are in ``guarded.events``). Telemetry of every turn is appended to ``guarded.events``.

The Responses API gets the same guarantees: ``function_call`` output items are checked against
the request's function tools, repaired in place (the item keeps its ``id`` and ``call_id``), or
re-asked with the calls and a ``function_call_output`` item per call saying what is wrong;
``usage`` adds up every request; a stream (``stream=True`` or ``responses.stream(...)``) is read
to its ``response.completed`` and replayed as the events of the decided response::

    response = client.responses.create(model="gpt-4o-mini", input="Weather in Oslo?",
                                       tools=[{"type": "function", "name": "get_weather", ...}])
    with client.responses.stream(model=..., input=..., tools=...) as stream:
        for event in stream: ...
        final = stream.get_final_response()
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any, cast

from toolmend._errors import MissingExtraError, ModelError, ToolmendError
from toolmend._schema import Message, Tool
from toolmend.guard._aborted import GuardAborted
from toolmend.guard._allowed import AllowedCalls
from toolmend.guard._driver import GuardOutcome, Reply, drive, drive_sync
from toolmend.guard._policy import GuardPolicy
from toolmend.guard._responses import (
    chat_request,
    completion_view,
    final_output,
    input_items,
    input_list,
    item_events,
    output_text,
)
from toolmend.guard._turn import Turn
from toolmend.guard._wrapped import GuardedBase, Passthrough, Replay, WrapCore, transport_error

__all__ = ["GuardAborted", "to_openai_messages", "wrap"]

try:
    import openai
    from openai._models import construct_type
    from openai.types.chat import ChatCompletion, ChatCompletionChunk
    from openai.types.responses import Response, ResponseStreamEvent
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise MissingExtraError("openai", "openai", "toolmend.guard.wrap") from exc


def to_openai_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """toolmend messages as OpenAI chat message dicts."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "assistant" and m.tool_calls:
            out.append({
                "role": "assistant",
                "content": m.content,  # "" rather than null, which some servers refuse
                "tool_calls": [
                    {"id": c.id, "type": "function",
                     "function": {"name": c.name, "arguments": json.dumps(c.model_dump(mode="json")["arguments"])}}
                    for c in m.tool_calls
                ],
            })  # fmt: skip
        elif m.role == "tool":
            out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content})
        else:
            out.append({"role": m.role, "content": m.content})
    return out


_RETRYABLE = (
    openai.APIConnectionError,
    openai.APITimeoutError,
    openai.RateLimitError,
    openai.InternalServerError,
)


def _translate(exc: Exception) -> Exception:
    return transport_error(exc, _RETRYABLE)


def _usage_sum(responses: Sequence[Any]) -> Any:
    first = next((r.usage for r in responses if getattr(r, "usage", None) is not None), None)
    if first is None:
        return None
    prompt = sum(r.usage.prompt_tokens for r in responses if r.usage is not None)
    completion = sum(r.usage.completion_tokens for r in responses if r.usage is not None)
    return first.model_copy(
        update={"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    )


def _assemble(chunks: Sequence[ChatCompletionChunk]) -> ChatCompletion:
    """The completion a list of stream chunks adds up to (tool calls joined by ``index``)."""
    content: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    finish, usage, last = None, None, None
    for chunk in chunks:
        last = chunk
        usage = chunk.usage or usage
        for choice in chunk.choices[:1]:
            delta = choice.delta
            finish = choice.finish_reason or finish
            if delta.content:
                content.append(delta.content)
            for tc in delta.tool_calls or []:
                slot = calls.setdefault(tc.index, {"id": None, "name": "", "arguments": ""})
                slot["id"] = tc.id or slot["id"]
                if tc.function is not None:
                    slot["name"] += tc.function.name or ""
                    slot["arguments"] += tc.function.arguments or ""
    message: dict[str, Any] = {"role": "assistant", "content": "".join(content) or None}
    if calls:
        message["tool_calls"] = [
            {
                "id": c["id"] or f"call_{i}",
                "type": "function",
                "function": {"name": c["name"], "arguments": c["arguments"]},
            }
            for i, c in sorted(calls.items())
        ]
    return ChatCompletion.model_validate({
        "id": last.id if last else "stream", "object": "chat.completion", "created": last.created if last else 0,
        "model": last.model if last else "", "choices": [{"index": 0, "message": message, "finish_reason": finish or "stop"}],
        "usage": usage.model_dump() if usage is not None else None,
    })  # fmt: skip


def _chunks(response: ChatCompletion) -> list[ChatCompletionChunk]:
    """A decided completion replayed as stream chunks."""
    msg = response.choices[0].message
    base = {
        "id": response.id,
        "object": "chat.completion.chunk",
        "created": response.created,
        "model": response.model,
    }
    out = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": msg.content or ""}}]}]
    for i, tc in enumerate(msg.tool_calls or []):
        fn = tc.function  # type: ignore[union-attr]
        delta = {
            "tool_calls": [
                {
                    "index": i,
                    "id": tc.id,
                    "type": "function",
                    "function": {"name": fn.name, "arguments": fn.arguments},
                }
            ]
        }
        out.append({**base, "choices": [{"index": 0, "delta": delta}]})
    out.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": response.choices[0].finish_reason}],
                "usage": response.usage.model_dump() if response.usage is not None else None})  # fmt: skip
    return [ChatCompletionChunk.model_validate(c) for c in out]


class _Turns(Passthrough):
    """A guarded ``create`` of one API, sync (:class:`_AsyncTurns`: async): the first answer,
    then the guard's turn over it with re-asks as real requests, then the decided answer (a
    stream replayed). The API says how it reads a request and an answer."""

    _core: WrapCore

    def view(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The request in the chat shape the guard reads."""
        return kwargs

    def request(self, kwargs: dict[str, Any], history: list[Message]) -> dict[str, Any]:
        """A hidden re-ask: the request with the guard's exchange ``history`` added."""
        raise NotImplementedError

    def reply(self, response: Any) -> Reply:
        raise NotImplementedError

    def finish(self, outcome: GuardOutcome, responses: list[Any]) -> Any:
        """The decided answer (or :class:`GuardAborted`)."""
        raise NotImplementedError

    def replay(self, response: Any) -> Any:
        """A (decided) answer as the stream a ``stream=True`` caller reads."""
        raise NotImplementedError

    def _once(self, kwargs: dict[str, Any]) -> Any:
        raise NotImplementedError

    async def _aonce(self, kwargs: dict[str, Any]) -> Any:
        raise NotImplementedError

    def create(self, **kwargs: Any) -> Any:
        """``create`` with the guard (see the module docstring)."""
        chat = self.view(kwargs)
        guard = self._core.guard_for(chat)
        first = self._once(kwargs)
        if guard is None:
            return self.replay(first) if kwargs.get("stream") else first
        responses = [first]

        def respond(history: list[Message]) -> Reply:
            responses.append(self._once(self.request(kwargs, history)))
            return self.reply(responses[-1])

        outcome = drive_sync(guard, respond, [], first=self.reply(first), allowed=AllowedCalls.from_openai(chat),
                             context=chat.get("messages"))  # fmt: skip
        final = self.finish(outcome, responses)
        return self.replay(final) if kwargs.get("stream") else final


class _AsyncTurns(_Turns):
    async def create(self, **kwargs: Any) -> Any:
        """``create`` with the guard (see the module docstring)."""
        chat = self.view(kwargs)
        guard = self._core.guard_for(chat)
        first = await self._aonce(kwargs)
        if guard is None:
            return self.replay(first) if kwargs.get("stream") else first
        responses = [first]

        async def respond(history: list[Message]) -> Reply:
            responses.append(await self._aonce(self.request(kwargs, history)))
            return self.reply(responses[-1])

        outcome = await drive(guard, respond, [], first=self.reply(first), allowed=AllowedCalls.from_openai(chat),
                              context=chat.get("messages"))  # fmt: skip
        final = self.finish(outcome, responses)
        return self.replay(final) if kwargs.get("stream") else final


class _Completions(_Turns):
    """``chat.completions`` with the guard."""

    def request(self, kwargs: dict[str, Any], history: list[Message]) -> dict[str, Any]:
        return {**kwargs, "messages": [*kwargs["messages"], *to_openai_messages(history)]}

    def reply(self, response: ChatCompletion) -> Reply:
        usage = response.usage
        turn = Turn.from_openai(response.choices[0].message.model_dump())
        return Reply(turn=turn, input_tokens=usage.prompt_tokens if usage else 0,
                     output_tokens=usage.completion_tokens if usage else 0)  # fmt: skip

    def finish(self, outcome: GuardOutcome, responses: list[ChatCompletion]) -> ChatCompletion:
        last = responses[-1]
        self._core.settle(outcome, last)
        message = last.choices[0].message
        calls = [
            {"id": c.id or f"call_{i}", "type": "function",
             "function": {"name": c.name, "arguments": json.dumps(c.model_dump(mode="json")["arguments"])}}
            for i, c in enumerate(outcome.calls)
        ]  # fmt: skip
        data = message.model_dump()
        data["tool_calls"] = calls or None
        if outcome.final.text is not None:  # calls printed as text were taken as calls
            data["content"] = outcome.final.text or None
        choice = last.choices[0].model_copy(
            update={"message": type(message).model_validate(data),
                    "finish_reason": "tool_calls" if calls else _no_calls(last.choices[0].finish_reason)}
        )  # fmt: skip
        return last.model_copy(update={"choices": [choice], "usage": _usage_sum(responses)})

    def replay(self, response: ChatCompletion) -> Replay:
        return Replay(_chunks(response))

    def _once(self, kwargs: dict[str, Any]) -> ChatCompletion:
        try:
            result = self._inner.create(**kwargs)
        except Exception as exc:
            raise _translate(exc) from exc
        return _assemble(list(result)) if kwargs.get("stream") else result


class _AsyncCompletions(_AsyncTurns, _Completions):
    async def _aonce(self, kwargs: dict[str, Any]) -> ChatCompletion:
        try:
            result = await self._inner.create(**kwargs)
        except Exception as exc:
            raise _translate(exc) from exc
        if kwargs.get("stream"):
            return _assemble([chunk async for chunk in result])
        return result


def _no_calls(finish: str) -> str:
    # Every call was dropped (tool_choice "none"): the answer is the text.
    return "stop" if finish == "tool_calls" else finish


class _Chat(Passthrough):
    def __init__(self, inner: Any, completions: _Completions) -> None:
        super().__init__(inner, completions._core)
        self.completions = completions


# -- the Responses API ------------------------------------------------------------------------------


def _events(response: Response) -> list[Any]:
    """A decided response replayed as the events of its stream (created, each item, completed)."""
    data = response.model_dump(mode="json", exclude_none=True)
    end = "response.incomplete" if data.get("status") == "incomplete" else "response.completed"
    start = {k: v for k, v in data.items() if k != "usage"}
    out: list[dict[str, Any]] = [{"type": "response.created",
                                  "response": {**start, "output": [], "status": "in_progress"}}]  # fmt: skip
    for i, item in enumerate(data.get("output") or []):
        out += item_events(item, i)
    out.append({"type": end, "response": data})
    # Built as the SDK builds what it reads, without validation: servers leave out fields that
    # the newest types require (usage details), and the SDK accepts their answers all the same.
    return [
        construct_type(type_=ResponseStreamEvent, value={**e, "sequence_number": n})
        for n, e in enumerate(out)
    ]


def _final_response(events: Sequence[Any]) -> Response:
    """The response a stream ended with (its ``response.completed`` or ``.incomplete``)."""
    for event in reversed(events):
        if event.type in ("response.completed", "response.incomplete"):
            return event.response
        if event.type in ("response.failed", "error"):
            raise ModelError(f"the response stream failed: {getattr(event, 'message', None) or event.type}")
    raise ModelError("the response stream ended before response.completed")


class _ResponsesCore(_Turns):
    """What the sync and async ``responses`` share: the request in the chat shape the guard
    reads, each answer as a turn, and the decided response."""

    def view(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        return chat_request(kwargs)

    def replay(self, response: Response) -> _Replay:
        return _Replay(response)

    def request(self, kwargs: dict[str, Any], history: list[Message]) -> dict[str, Any]:
        """A hidden re-ask (never streamed): the input with the guard's exchange as items."""
        extra = input_items(to_openai_messages(history))
        out = {k: v for k, v in kwargs.items() if k not in ("stream", "stream_options")}
        out["input"] = [*input_list(kwargs), *extra]
        return out

    def reply(self, response: Response) -> Reply:
        usage = response.usage
        view = completion_view(response.model_dump(mode="json"))
        return Reply(turn=Turn.from_openai(view["choices"][0]["message"]),
                     input_tokens=usage.input_tokens if usage else 0,
                     output_tokens=usage.output_tokens if usage else 0)  # fmt: skip

    def finish(self, outcome: GuardOutcome, responses: list[Response]) -> Response:
        self._core.settle(outcome, responses[-1])
        dumps = [r.model_dump(mode="json", exclude_none=True) for r in responses]
        known = {str(item.get("call_id")): item for d in dumps for item in d.get("output") or []
                 if item.get("type") == "function_call"}  # fmt: skip
        calls = []
        for c in outcome.calls:
            args = c.model_dump(mode="json")["arguments"]
            item = known.get(c.id or "")
            text = json.dumps(args)
            if item is not None and item.get("name") == c.name and _parsed(item.get("arguments")) == args:
                text = item["arguments"]  # unchanged: the model's own bytes
            calls.append({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": text}})
        # The first answer's items stay (its text, reasoning); the calls are the decided ones.
        data = dumps[0]
        content = output_text(data.get("output"))
        if outcome.final.text is not None:  # calls printed as text were taken as calls
            content = outcome.final.text
        data["output"] = final_output(data.get("output") or [], calls, content, known)
        usages = [r.usage for r in responses if r.usage is not None]
        if usages and len(responses) > 1:
            i, o = sum(u.input_tokens for u in usages), sum(u.output_tokens for u in usages)
            data["usage"] = {**usages[-1].model_dump(mode="json"), "input_tokens": i, "output_tokens": o,
                             "total_tokens": i + o}  # fmt: skip
        return cast(Response, construct_type(type_=Response, value=data))


def _parsed(raw: Any) -> Any:
    try:
        return json.loads(raw) if isinstance(raw, str) else None
    except json.JSONDecodeError:
        return None


class _Replay(Replay):
    """A replayed response stream: iterable (sync and async, again and again), usable in
    ``with``, and ``get_final_response()`` / ``until_done()`` as the SDK's ``responses.stream``
    offers."""

    def __init__(self, response: Response) -> None:
        self._response = response
        self._events = _events(response)
        super().__init__(self._events)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._events)

    async def _async(self) -> AsyncIterator[Any]:
        for event in self._events:
            yield event

    def get_final_response(self) -> Response:
        """The decided response."""
        return self._response

    def until_done(self) -> _Replay:
        return self


class _Responses(_ResponsesCore):
    def _once(self, kwargs: dict[str, Any]) -> Response:
        try:
            result = self._inner.create(**kwargs)
            return _final_response(list(result)) if kwargs.get("stream") else result
        except ModelError:
            raise
        except Exception as exc:
            raise _translate(exc) from exc

    def stream(self, **kwargs: Any) -> _Replay:
        """``responses.stream`` with the guard: the decided response's events."""
        return self.create(**{**kwargs, "stream": True})


class _AsyncResponses(_AsyncTurns, _ResponsesCore):
    async def _aonce(self, kwargs: dict[str, Any]) -> Response:
        try:
            result = await self._inner.create(**kwargs)
            return _final_response([e async for e in result]) if kwargs.get("stream") else result
        except ModelError:
            raise
        except Exception as exc:
            raise _translate(exc) from exc

    def stream(self, **kwargs: Any) -> _AsyncStreamManager:
        """``responses.stream`` with the guard: ``async with client.responses.stream(...) as s``."""
        return _AsyncStreamManager(self.create(**{**kwargs, "stream": True}))


class _AsyncStreamManager:
    """``async with`` the guarded stream (the request runs on entering, as the SDK's does)."""

    def __init__(self, pending: Any) -> None:
        self._pending = pending

    async def __aenter__(self) -> _Replay:
        return await self._pending

    async def __aexit__(self, *exc: object) -> None:
        return None


class GuardedClient(GuardedBase):
    """The wrapped client: ``chat.completions.create`` and ``responses.create`` / ``.stream`` are
    guarded, everything else passes through."""

    def __init__(self, client: Any, core: WrapCore) -> None:
        super().__init__(client, core)
        is_async = isinstance(client, openai.AsyncOpenAI)
        kind = _AsyncCompletions if is_async else _Completions
        self.chat = _Chat(client.chat, kind(client.chat.completions, core))
        self.responses = (_AsyncResponses if is_async else _Responses)(client.responses, core)


def wrap(
    client: Any, *, tools: Sequence[Tool | Mapping[str, Any]] | None = None, policy: GuardPolicy | None = None
) -> GuardedClient:
    """A client (``openai.OpenAI`` or ``openai.AsyncOpenAI``) whose chat completions and
    responses are guarded; an ``anthropic.Anthropic`` or ``AsyncAnthropic`` gets its messages
    guarded (:func:`toolmend.guard.anthropic_client.wrap_anthropic`).

    With ``tools`` the guard (and its per-run budget) is shared by every call; without, each
    request is checked against its own ``tools``. Raises :class:`GuardAborted` when the budget
    is spent.
    """
    if type(client).__module__.partition(".")[0] == "anthropic":  # never imports anthropic otherwise
        from toolmend.guard.anthropic_client import wrap_anthropic

        return wrap_anthropic(client, tools=tools, policy=policy)  # type: ignore[return-value]
    if not isinstance(client, openai.OpenAI | openai.AsyncOpenAI):
        raise ToolmendError(
            f"wrap() takes an openai.OpenAI or openai.AsyncOpenAI client, got {type(client).__name__}"
        )
    return GuardedClient(client, WrapCore(tools, policy))
