"""The thin driver: ask, let the guard decide, act, repeat. The same loop serves a benchmark
strategy, the OpenAI-client wrapper and a proxy.

>>> import asyncio
>>> from toolmend.guard import Guard, Turn, drive
>>> tools = [{"name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "integer"}},
...     "required": ["a"]}}]
>>> replies = iter(["[f()]", "[f(a=1)]"])
>>> async def respond(messages):
...     return Turn.from_text(next(replies))
>>> out = asyncio.run(drive(Guard(tools), respond, []))
>>> out.status, [c.arguments for c in out.calls], out.extra_requests
('recovered', [{'a': 1}], 1)

Error classes stay apart: a retryable :class:`~toolmend.ModelError` (transport, rate limit,
server) re-sends the *same* request and is never shown to the model; a model error is repaired
or re-asked; tool-execution errors belong to :class:`~toolmend.guard._env.EnvPolicy`.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass, field
from typing import Any, Literal

from toolmend._errors import ConfigError, ModelError
from toolmend._schema import Message, ToolCall
from toolmend.check._ground import Context
from toolmend.guard._allowed import AllowedCalls
from toolmend.guard._decision import Decision
from toolmend.guard._engine import Guard
from toolmend.guard._turn import Turn

__all__ = ["GuardOutcome", "Reply", "Respond", "Status", "drive", "drive_sync"]

Status = Literal["accepted", "repaired", "recovered", "failed_to_model", "aborted"]


@dataclass
class Reply:
    """A turn with what it cost (for the recovery telemetry)."""

    turn: Turn
    input_tokens: int = 0
    output_tokens: int = 0


Respond = Callable[[list[Message]], Awaitable[Turn | Reply]]
"""One model request: the conversation in, the assistant turn out."""


@dataclass
class GuardOutcome:
    """How a guarded turn ended.

    ``status``: ``accepted`` (valid as sent), ``repaired`` (safe fixes only), ``recovered``
    (valid after re-asks), ``failed_to_model`` (bad calls answered with tool results; ``calls``
    are the valid ones), ``aborted`` (budget spent; ``calls`` is empty). ``messages`` are what
    the conversation gained (the re-ask exchanges, then for ``failed_to_model`` the tool results).
    """

    status: Status
    calls: list[ToolCall]
    turn: Turn
    decisions: list[Decision] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    extra_requests: int = 0
    extra_tokens: int = 0
    recovery_latency_s: float = 0.0
    transport_retries: int = 0

    @property
    def final(self) -> Decision:
        """The last decision."""
        return self.decisions[-1]


class _Loop:
    """The decisions of one turn, apart from how requests are made (async or not)."""

    def __init__(
        self,
        guard: Guard,
        messages: list[Message],
        allowed: AllowedCalls | None,
        decision: Decision | None,
        context: Context | None = None,
    ) -> None:
        self.guard = guard
        self.allowed = allowed
        self.given = decision
        """The guard's decision on the first answer, when the caller has already made it."""
        self.history = list(messages)
        self.context = (list(messages) if context is None else context) if guard.policy.ground else None
        """The conversation before the turn, for the policy's grounding check."""
        self.outcome = GuardOutcome(status="accepted", calls=[], turn=Turn())
        self.attempt = 0
        self.kept: list[ToolCall] = []
        self.failures = 0
        # Where each call of the turn goes: kept calls stay at their places and corrected ones
        # fill the places of the calls they replace (call order matters for nested calls).
        self.slots: list[ToolCall | None] | None = None

    def failed(self, exc: ModelError) -> None:
        """A transport error: retried (the same request) while the budget lasts, else raised."""
        if not exc.retryable or self.failures >= self.guard.policy.transport_retries:
            raise exc
        self.failures += 1
        self.outcome.transport_retries += 1

    def answered(self, got: Turn | Reply, started: float) -> list[Message] | None:
        """Decide on an answer; the next request's messages, or ``None`` when the turn is over."""
        self.failures = 0
        reply = got if isinstance(got, Reply) else Reply(turn=got)
        out = self.outcome
        if self.attempt:
            out.extra_requests += 1
            out.extra_tokens += reply.input_tokens + reply.output_tokens
            out.recovery_latency_s += time.perf_counter() - started
        out.turn = reply.turn
        decision, self.given = self.given, None
        if decision is None:
            decision = self.guard.decide(
                reply.turn, attempt=self.attempt, kept=self.kept, allowed=self.allowed, context=self.context
            )
        out.decisions.append(decision)
        recovery = bool(self.attempt)
        out.events.append(
            decision.event(
                tokens=reply.input_tokens + reply.output_tokens if recovery else 0, requests=int(recovery)
            )
        )
        if decision.action == "reask":
            # The calls judged: a native answer's calls, or those rescued from its text.
            n = max([len(reply.turn.calls), *(i + 1 for i in (*decision.keep, *decision.reask))])
            self._place(decision.calls[len(self.kept) :], decision.keep, n, final=False)
            self.kept = list(decision.calls)
            self.history.extend(decision.messages)
            out.messages.extend(decision.messages)
            self.attempt += 1
            return list(self.history)
        if decision.action == "abort":
            out.calls = []
        elif self.kept:
            self._place(decision.calls[len(self.kept) :], [], 0, final=True)
            out.calls = [c for c in self.slots or [] if c is not None]
        else:
            out.calls = list(decision.calls)
        if decision.action == "fail_to_model":
            out.messages.extend(decision.messages)
        out.status = _status(decision, self.attempt)
        out.events[-1]["recovery_latency_s"] = round(out.recovery_latency_s, 6)
        return None

    def _place(self, new: list[ToolCall], keep: list[int], n: int, *, final: bool) -> None:
        """Put this round's accepted calls into the turn's slots (see ``slots``)."""
        if not new and not keep and not final:
            self.slots = None  # everything is asked again (hold all, or a count problem)
            return
        if self.slots is None:
            # First round: the turn's calls by position, the re-asked ones as holes.
            slots: list[ToolCall | None] = [None] * n
            for call, i in zip(new, keep, strict=False):
                slots[i] = call
            self.slots = slots
            return
        holes = [p for p, c in enumerate(self.slots) if c is None]
        placed = list(zip(keep, new, strict=False)) if not final else list(enumerate(new))
        for i, call in placed:
            if i < len(holes):
                self.slots[holes[i]] = call
            else:
                self.slots.append(call)
        if final:
            self.slots = [c for c in self.slots if c is not None]


async def drive(
    guard: Guard,
    respond: Respond,
    messages: list[Message],
    *,
    first: Turn | Reply | None = None,
    decision: Decision | None = None,
    allowed: AllowedCalls | None = None,
    context: Context | None = None,
) -> GuardOutcome:
    """Run one guarded turn: ask (unless ``first`` is the answer already), decide, act, repeat.

    ``decision`` is the guard's decision on ``first`` when the caller has made it already (a
    proxy that answers clean turns at once and drives only the others): it is acted on as it
    is, not checked again, and its re-ask counts once against the budget. ``allowed`` is what
    the request allows (``tool_choice``, ``parallel_tool_calls``), applied to every answer.
    ``context`` is the conversation before the turn for the policy's ``ground`` check, when
    ``messages`` is not all of it (a caller that sends the re-asks after a request of its own).

    Returns a :class:`GuardOutcome`; never raises on model output. A non-retryable
    :class:`~toolmend.ModelError`, or a retryable one past ``policy.transport_retries``, propagates.
    """
    steps = _steps(_Loop(guard, messages, allowed, _given(first, decision), context), messages, first)
    try:
        pending = next(steps)
        while True:
            try:
                answer = respond(pending)
                got: Turn | Reply | ModelError = await answer if inspect.isawaitable(answer) else answer
            except ModelError as exc:
                got = exc
            pending = steps.send(got)
    except StopIteration as done:
        return done.value


def drive_sync(
    guard: Guard,
    respond: Callable[[list[Message]], Turn | Reply],
    messages: list[Message],
    *,
    first: Turn | Reply | None = None,
    decision: Decision | None = None,
    allowed: AllowedCalls | None = None,
    context: Context | None = None,
) -> GuardOutcome:
    """:func:`drive` for a blocking ``respond`` (a sync client), with no event loop."""
    steps = _steps(_Loop(guard, messages, allowed, _given(first, decision), context), messages, first)
    try:
        pending = next(steps)
        while True:
            try:
                got: Turn | Reply | ModelError = respond(pending)
            except ModelError as exc:
                got = exc
            pending = steps.send(got)
    except StopIteration as done:
        return done.value


def _steps(
    loop: _Loop, messages: list[Message], first: Turn | Reply | None
) -> Generator[list[Message], Turn | Reply | ModelError, GuardOutcome]:
    """One guarded turn without its I/O, which :func:`drive` and :func:`drive_sync` do: it yields
    the messages to ask with and is sent the answer (or the :class:`~toolmend.ModelError` asking
    raised, asked again while the policy allows); it returns the outcome."""
    pending: list[Message] | None = None if first is not None else list(messages)
    started = time.perf_counter()
    got = first
    while True:
        if pending is not None:
            started = time.perf_counter()
            answer = yield pending
            if isinstance(answer, ModelError):
                loop.failed(answer)
                continue
            got = answer
        assert got is not None
        pending = loop.answered(got, started)
        if pending is None:
            return loop.outcome


def _given(first: Turn | Reply | None, decision: Decision | None) -> Decision | None:
    if decision is not None and (first is None or decision.attempt != 0):
        raise ConfigError("drive(decision=...) needs first=: the answer that decision is about (attempt 0)")
    return decision


def _status(decision: Decision, attempts: int) -> Status:
    if decision.action == "abort":
        return "aborted"
    if decision.action == "fail_to_model":
        return "failed_to_model"
    if attempts:
        return "recovered"
    return "repaired" if decision.action == "repaired" else "accepted"
