"""``toolmend.guard.wrap(Anthropic())``: an ``anthropic`` client whose ``messages.create`` (streamed
or not) and ``messages.stream`` are guarded, sync and async (extra ``anthropic``).

::

    from anthropic import Anthropic
    from toolmend import wrap

    client = wrap(Anthropic())
    message = client.messages.create(model="claude-sonnet-5-5", max_tokens=512, tools=tools,
                                     messages=[{"role": "user", "content": "Weather in Oslo?"}])
    # every tool_use block's input is valid for its tool's input_schema (repaired or re-asked),
    # or GuardAborted was raised with the last answer attached

The guarantees are :func:`toolmend.guard.wrap`'s for OpenAI: each ``tool_use`` block is checked
against ``tools[].input_schema`` (``tools=`` given to :func:`wrap_anthropic`, else each request's
own), ``tool_choice`` (``auto``/``any``/``tool``/``none``, ``disable_parallel_tool_use``) is
enforced, safe repairs are applied, and what repair cannot fix is re-asked as a real second
request: the assistant turn with its ``tool_use`` blocks, then a user turn of ``tool_result``
blocks with ``is_error: true`` saying what is wrong. ``usage`` adds up every request the turn
took. A stream is read to its end before the guard decides, then replayed: a clean answer as the
events that came (a call's ``input_json_delta`` fragments as they were), a changed one as the
events of the decided message. ``messages.stream`` gives the SDK's own ``MessageStream`` over
them, so ``text_stream``, ``get_final_message()`` and the event helpers work as usual.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from toolmend._errors import MissingExtraError, ToolmendError
from toolmend._schema import Message, Tool
from toolmend.guard._aborted import GuardAborted
from toolmend.guard._allowed import AllowedCalls
from toolmend.guard._anthropic import (
    MessageAssembler,
    anthropic_turns,
    choice_as_openai,
    events_of,
    native_calls,
    text_of,
    tools_as_openai,
)
from toolmend.guard._driver import GuardOutcome, Reply, drive, drive_sync
from toolmend.guard._policy import GuardPolicy
from toolmend.guard._turn import Turn
from toolmend.guard._wrapped import GuardedBase, Passthrough, Replay, WrapCore, transport_error

__all__ = ["GuardAborted", "wrap_anthropic"]

try:
    import anthropic
    from anthropic.lib.streaming import AsyncMessageStream, MessageStream
    from anthropic.types import (
        Message as AnthropicMessage,
    )
    from anthropic.types import (
        RawContentBlockDeltaEvent,
        RawContentBlockStartEvent,
        RawContentBlockStopEvent,
        RawMessageDeltaEvent,
        RawMessageStartEvent,
        RawMessageStopEvent,
    )
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise MissingExtraError("anthropic", "anthropic", "toolmend.guard.wrap") from exc

_EVENT_TYPES: dict[str, Any] = {
    "message_start": RawMessageStartEvent, "message_delta": RawMessageDeltaEvent,
    "message_stop": RawMessageStopEvent, "content_block_start": RawContentBlockStartEvent,
    "content_block_delta": RawContentBlockDeltaEvent, "content_block_stop": RawContentBlockStopEvent,
}  # fmt: skip
_NOT_FOR_CREATE = ("stream", "output_format")


_RETRYABLE = (anthropic.APIConnectionError, anthropic.RateLimitError, anthropic.InternalServerError)


def _translate(exc: Exception) -> Exception:
    return transport_error(exc, _RETRYABLE)


def _dump(model: Any) -> dict[str, Any]:
    out: dict[str, Any] = model.model_dump(mode="json", exclude_none=True)
    return out


def _thinking(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    out = []
    for b in message.get("content") or ():
        if b.get("type") not in ("thinking", "redacted_thinking"):
            break
        out.append(b)
    return out


class _Replay(Replay):
    """Events replayed as the raw stream the SDK's ``MessageStream`` reads (or a caller iterates)."""

    def __init__(self, events: list[Any], response: Any = None) -> None:
        super().__init__(events)
        self.response = response


class _AsyncReplay(_Replay):
    """The async form: ``async for``, ``await close()``, ``async with``."""

    async def close(self) -> None:  # type: ignore[override]
        return None


class _Turn:
    """One guarded turn: the answers so far (as dicts) and what the first one streamed."""

    def __init__(self, kwargs: Mapping[str, Any]) -> None:
        self.kwargs = dict(kwargs)
        self.answers: list[dict[str, Any]] = []
        self.events: list[Any] | None = None
        """The first answer's stream events as they came (for a stream)."""
        self.fragments: dict[str, list[str]] = {}
        self.first: Any = None
        """The first answer as the SDK gave it (returned as it is when the guard changes nothing)."""

    def streamed(self, events: list[Any]) -> None:
        asm = MessageAssembler()
        for e in events:
            asm.add(_dump(e))
        self.events = events
        self.fragments = {str(asm.blocks[i].get("id")): parts for i, parts in asm.fragments.items()}
        self.answers.append(asm.message())

    def request(self, history: list[Message]) -> dict[str, Any]:
        kwargs = {k: v for k, v in self.kwargs.items() if k not in _NOT_FOR_CREATE}
        turns = anthropic_turns(history, [_thinking(a) for a in self.answers])
        return {**kwargs, "messages": [*self.kwargs["messages"], *turns]}

    def reply(self, message: dict[str, Any]) -> Reply:
        usage = message.get("usage") or {}
        turn = Turn.from_native(text_of(message.get("content")), native_calls(message.get("content")))
        return Reply(turn=turn, input_tokens=int(usage.get("input_tokens") or 0),
                     output_tokens=int(usage.get("output_tokens") or 0))  # fmt: skip

    def final(self, outcome: GuardOutcome) -> dict[str, Any] | None:
        """The decided message, or None when it is the first answer unchanged."""
        last = self.answers[-1]
        blocks = {str(b.get("id")): b for b in last.get("content") or () if b.get("type") == "tool_use"}
        calls = []
        for i, c in enumerate(outcome.calls):
            args = c.model_dump(mode="json")["arguments"]
            block = blocks.get(str(c.id))
            if block is not None and block.get("name") == c.name and block.get("input") == args:
                calls.append(block)
            else:
                calls.append({"type": "tool_use", "id": c.id or f"toolu_{i}", "name": c.name, "input": args})
        content = [b for b in last.get("content") or () if b.get("type") != "tool_use"]
        if outcome.final.text is not None:  # calls printed as text were taken as calls
            content = [b for b in content if b.get("type") != "text"]
            if outcome.final.text:
                content.append({"type": "text", "text": outcome.final.text})
        stop = last.get("stop_reason")
        out = {**last, "content": content + calls,
               "stop_reason": "tool_use" if calls else ("end_turn" if stop == "tool_use" else stop)}  # fmt: skip
        if len(self.answers) == 1 and out == last:
            return None
        usage = dict(last.get("usage") or {})
        usage["input_tokens"] = sum(
            int((a.get("usage") or {}).get("input_tokens") or 0) for a in self.answers
        )
        usage["output_tokens"] = sum(
            int((a.get("usage") or {}).get("output_tokens") or 0) for a in self.answers
        )
        out["usage"] = usage
        return out

    def replay(self, final: dict[str, Any] | None) -> list[Any]:
        if final is None and self.events is not None:
            return self.events
        message = final or self.answers[0]
        # A call goes in the fragments it came in only when the guard kept it as it was.
        first = {str(b.get("id")): b for b in self.answers[0].get("content") or ()}
        kept = {str(b.get("id")) for b in message.get("content") or () if first.get(str(b.get("id"))) == b}
        pieces = {k: v for k, v in self.fragments.items() if k in kept}
        return [_EVENT_TYPES[e["type"]].model_validate(e) for e in events_of(message, pieces)]


class _Core(WrapCore):
    def __init__(self, tools: Sequence[Tool | Mapping[str, Any]] | None, policy: GuardPolicy | None) -> None:
        super().__init__(tools, policy, _tool_list)

    @staticmethod
    def allowed(kwargs: Mapping[str, Any]) -> AllowedCalls:
        return AllowedCalls.from_openai(choice_as_openai(kwargs.get("tool_choice")))

    @staticmethod
    def context(kwargs: Mapping[str, Any]) -> list[Any]:
        system = kwargs.get("system")
        return [
            *([{"role": "system", "content": text_of(system)}] if system else []),
            *kwargs.get("messages", ()),
        ]

    def finish(self, turn: _Turn, outcome: GuardOutcome) -> dict[str, Any] | None:
        self.settle(outcome, turn.answers[-1])
        return turn.final(outcome)


def _tool_list(tools: Any) -> list[Any]:
    """Tools as the guard takes them: Anthropic tool dicts become function tools; toolmend tools
    and OpenAI-shaped ones pass as they are."""
    tools = list(tools or ())
    if all(isinstance(t, Mapping) and "name" in t and "function" not in t for t in tools):
        return tools_as_openai(tools)
    return tools


class _Messages(Passthrough):
    _core: _Core

    def _call(self, **kwargs: Any) -> Any:
        try:
            return self._inner.create(**kwargs)
        except Exception as exc:
            raise _translate(exc) from exc

    def _guarded(self, turn: _Turn) -> dict[str, Any] | None:
        guard = self._core.guard_for(turn.kwargs)
        if guard is None:
            return None

        def respond(history: list[Message]) -> Reply:
            got = self._call(**turn.request(history))
            turn.answers.append(_dump(got))
            return turn.reply(turn.answers[-1])

        outcome = drive_sync(guard, respond, [], first=turn.reply(turn.answers[0]),
                             allowed=self._core.allowed(turn.kwargs), context=self._core.context(turn.kwargs))  # fmt: skip
        return self._core.finish(turn, outcome)

    def create(self, **kwargs: Any) -> Any:
        """``messages.create`` with the guard (see the module docstring)."""
        turn = _Turn(kwargs)
        first = self._call(**kwargs)
        if kwargs.get("stream"):
            with first:
                turn.streamed(list(first))
            return _Replay(turn.replay(self._guarded(turn)), first.response)
        turn.first = first
        turn.answers.append(_dump(first))
        final = self._guarded(turn)
        return first if final is None else AnthropicMessage.model_validate(final)

    def stream(self, **kwargs: Any) -> _StreamManager:
        """``messages.stream`` with the guard: the SDK's ``MessageStream`` over the replayed events."""
        return _StreamManager(self, kwargs)


class _StreamManager:
    def __init__(self, messages: _Messages, kwargs: dict[str, Any]) -> None:
        self._messages, self._kwargs = messages, kwargs
        self._stream: Any = None

    def _read(self, raw: Any) -> list[Any]:
        return [e for e in raw if e.type in _EVENT_TYPES]

    def __enter__(self) -> Any:
        m = self._messages
        turn = _Turn(self._kwargs)
        try:
            with m._inner.stream(**self._kwargs) as inner:
                turn.streamed(self._read(inner))
                response = inner.response
        except Exception as exc:
            raise _translate(exc) from exc
        events = turn.replay(m._guarded(turn))
        fmt = self._kwargs.get("output_format", anthropic.NOT_GIVEN)
        self._stream = MessageStream(_Replay(events, response), output_format=fmt)  # type: ignore[arg-type]
        return self._stream

    def __exit__(self, *exc: object) -> None:
        if self._stream is not None:
            self._stream.close()


class _AsyncMessages(_Messages):
    async def _acall(self, **kwargs: Any) -> Any:
        try:
            return await self._inner.create(**kwargs)
        except Exception as exc:
            raise _translate(exc) from exc

    async def _aguarded(self, turn: _Turn) -> dict[str, Any] | None:
        guard = self._core.guard_for(turn.kwargs)
        if guard is None:
            return None

        async def respond(history: list[Message]) -> Reply:
            got = await self._acall(**turn.request(history))
            turn.answers.append(_dump(got))
            return turn.reply(turn.answers[-1])

        outcome = await drive(guard, respond, [], first=turn.reply(turn.answers[0]),
                              allowed=self._core.allowed(turn.kwargs), context=self._core.context(turn.kwargs))  # fmt: skip
        return self._core.finish(turn, outcome)

    async def create(self, **kwargs: Any) -> Any:
        """``messages.create`` with the guard (see the module docstring)."""
        turn = _Turn(kwargs)
        first = await self._acall(**kwargs)
        if kwargs.get("stream"):
            async with first:
                turn.streamed([e async for e in first])
            return _AsyncReplay(turn.replay(await self._aguarded(turn)), first.response)
        turn.answers.append(_dump(first))
        final = await self._aguarded(turn)
        return first if final is None else AnthropicMessage.model_validate(final)

    def stream(self, **kwargs: Any) -> _AsyncStreamManager:  # type: ignore[override]
        """``messages.stream`` with the guard: the SDK's ``AsyncMessageStream`` over the replayed events."""
        return _AsyncStreamManager(self, kwargs)


class _AsyncStreamManager:
    def __init__(self, messages: _AsyncMessages, kwargs: dict[str, Any]) -> None:
        self._messages, self._kwargs = messages, kwargs
        self._stream: Any = None

    async def __aenter__(self) -> Any:
        m = self._messages
        turn = _Turn(self._kwargs)
        try:
            async with m._inner.stream(**self._kwargs) as inner:
                turn.streamed([e async for e in inner if e.type in _EVENT_TYPES])
                response = inner.response
        except Exception as exc:
            raise _translate(exc) from exc
        events = turn.replay(await m._aguarded(turn))
        fmt = self._kwargs.get("output_format", anthropic.NOT_GIVEN)
        self._stream = AsyncMessageStream(_AsyncReplay(events, response), output_format=fmt)  # type: ignore[arg-type]
        return self._stream

    async def __aexit__(self, *exc: object) -> None:
        if self._stream is not None:
            await self._stream.close()


class GuardedAnthropic(GuardedBase):
    """The wrapped client: ``messages.create`` and ``messages.stream`` are guarded, everything else
    passes through."""

    def __init__(self, client: Any, core: _Core) -> None:
        super().__init__(client, core)
        kind = _AsyncMessages if isinstance(client, anthropic.AsyncAnthropic) else _Messages
        self.messages = kind(client.messages, core)


def wrap_anthropic(
    client: Any, *, tools: Sequence[Tool | Mapping[str, Any]] | None = None, policy: GuardPolicy | None = None
) -> GuardedAnthropic:
    """An ``anthropic.Anthropic`` or ``anthropic.AsyncAnthropic`` whose messages are guarded
    (:func:`toolmend.guard.wrap` hands an Anthropic client here). ``tools`` (Anthropic tool dicts
    or toolmend tools): one guard, and one run budget, for every call; without, each request is
    checked against its own ``tools``. Raises :class:`GuardAborted` when the budget is spent."""
    if not isinstance(client, anthropic.Anthropic | anthropic.AsyncAnthropic):
        raise ToolmendError(
            f"wrap_anthropic() takes an anthropic.Anthropic or anthropic.AsyncAnthropic client, got {type(client).__name__}"
        )
    return GuardedAnthropic(client, _Core(tools, policy))
