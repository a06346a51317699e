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
or re-asked; tool-execution errors belong to :class:`~toolmend.guard.env.EnvPolicy`.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from toolmend.errors import ModelError
from toolmend.guard.decision import Decision
from toolmend.guard.engine import Guard
from toolmend.guard.turn import Turn
from toolmend.schema import Message, ToolCall

__all__ = ["GuardOutcome", "Reply", "Respond", "Status", "drive"]

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


async def drive(
    guard: Guard, respond: Respond, messages: list[Message], *, first: Turn | Reply | None = None
) -> GuardOutcome:
    """Run one guarded turn: ask (unless ``first`` is the answer already), decide, act, repeat.

    Returns a :class:`GuardOutcome`; never raises on model output. A non-retryable
    :class:`~toolmend.ModelError`, or a retryable one past ``policy.transport_retries``, propagates.
    """
    outcome = GuardOutcome(status="accepted", calls=[], turn=Turn())
    history = list(messages)

    async def ask(recovery: bool) -> Reply:
        failures = 0
        while True:
            start = time.perf_counter()
            try:
                got = respond(list(history))
                reply = await got if inspect.isawaitable(got) else got
            except ModelError as exc:
                if not exc.retryable or failures >= guard.policy.transport_retries:
                    raise
                failures += 1
                outcome.transport_retries += 1
                continue
            reply = reply if isinstance(reply, Reply) else Reply(turn=reply)
            if recovery:
                outcome.extra_requests += 1
                outcome.extra_tokens += reply.input_tokens + reply.output_tokens
                outcome.recovery_latency_s += time.perf_counter() - start
            return reply

    reply = (
        (first if isinstance(first, Reply) else Reply(turn=first)) if first is not None else await ask(False)
    )
    attempt = 0
    kept: list[ToolCall] = []
    while True:
        outcome.turn = reply.turn
        decision = guard.decide(reply.turn, attempt=attempt, kept=kept)
        outcome.decisions.append(decision)
        outcome.events.append(
            decision.event(
                tokens=reply.input_tokens + reply.output_tokens if attempt else 0,
                requests=1 if attempt else 0,
            )
        )
        if decision.action != "reask":
            break
        kept = list(decision.calls)
        history.extend(decision.messages)
        outcome.messages.extend(decision.messages)
        attempt += 1
        reply = await ask(True)
    outcome.calls = list(decision.calls)
    if decision.action == "fail_to_model":
        outcome.messages.extend(decision.messages)
    outcome.status = _status(decision, attempt)
    outcome.events[-1]["recovery_latency_s"] = round(outcome.recovery_latency_s, 6)
    return outcome


def _status(decision: Decision, attempts: int) -> Status:
    if decision.action == "abort":
        return "aborted"
    if decision.action == "fail_to_model":
        return "failed_to_model"
    if attempts:
        return "recovered"
    return "repaired" if decision.action == "repaired" else "accepted"
