"""``guard``: repair first, re-ask only what repair cannot fix (:mod:`toolmend.guard`) — as a
strategy around any benchmark's ``generate``."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from toolmend._errors import ConfigError, first_error
from toolmend._schema import Message
from toolmend.guard import AllowedCalls, Decision, Guard, GuardPolicy, drive
from toolmend.guard._turn import Turn
from toolmend.models._base import GenerateRequest
from toolmend.models._hf import default_choice
from toolmend.strategies._base import Generate, SolveState
from toolmend.strategies._reply import read_answer, read_reply, reply_format, write_reply

__all__ = ["GuardStrategy"]


class GuardStrategy:
    """The guard on every reply. A reply that is valid as sent comes back unchanged (byte for
    byte); a repaired or recovered one is written out again in the benchmark's reply format."""

    name = "guard"

    def __init__(self, policy: GuardPolicy | None = None, **policy_options: Any) -> None:
        try:
            self.policy = policy or GuardPolicy(**policy_options)
        except ValidationError as exc:
            where, msg = first_error(exc)
            got = exc.errors()[0].get("input")
            raise ConfigError(f"--strategy guard: {where}: {msg} (got {got!r})") from None

    def wrap(self, generate: Generate, state: SolveState) -> Generate:
        if not state.sample.tools:
            return generate  # nothing to check against
        fmt = reply_format(state.benchmark)
        guard = Guard(state.sample.tools, self.policy)
        native = state.tool_mode == "native"

        async def guarded(messages: list[Message], *, epoch: int | None = None) -> str:
            first = await generate(messages, epoch=epoch)
            # In native mode an answer in which no call came through the channel is prose, an
            # answer that calls nothing (accepted unless the request requires a call, with calls
            # to offered tools in its text rescued); the answers to a re-ask are read in the
            # reply format: a re-ask asks for calls, and prose corrects none.
            answer = read_answer(first, fmt, state)
            last, read = [first], [answer]

            async def respond(history: list[Message]) -> Turn:
                text = await generate(history, epoch=epoch)
                last.append(text)
                read.append(read_reply(text, fmt))
                return read[-1]

            allowed = _allowed(state, messages) if native else None
            out = await drive(guard, respond, messages, first=answer, allowed=allowed)
            state.events.extend(out.events)
            state.events.append(
                {"kind": "guard_turn", "status": out.status, "requests": out.extra_requests,
                 "codes": sorted({c for d in out.decisions for c in d.codes})}
            )  # fmt: skip
            final = out.final
            if out.status == "aborted":
                return last[_standing(out.decisions, read, last)]
            if final.action == "accept" and not final.fixes and len(final.calls) == len(out.turn.calls):
                return last[-1]  # as the model wrote it
            return write_reply(out.calls, fmt, out.turn, state.sample.tools)

        return guarded


def _standing(decisions: list[Decision], turns: list[Turn], answers: list[str]) -> int:
    """Which of the model's answers stands, as written, when the guard gives up: the earliest
    that is not empty, replaced by a later one only where calls could be read from it and it has
    fewer findings.

    The last answer is not the best one: SmolLM2 answered a re-ask about a wrong tool name with an
    unreadable call twice (issue 35). Nor is the one with the fewest findings: Gemma 3 270M
    answered a re-ask about two missing arguments with prose, one finding (unreadable) against
    two, and no call can be read from it."""
    standing: int | None = None
    for k, (decision, turn, text) in enumerate(zip(decisions, turns, answers, strict=False)):
        if not text.strip():
            continue  # an empty reply is no answer at all
        if standing is None or (turn.calls and len(decision.findings) < len(decisions[standing].findings)):
            standing = k
    return len(answers) - 1 if standing is None else standing


def _allowed(state: SolveState, messages: list[Message]) -> AllowedCalls | None:
    """What the request for ``messages`` allows, from the ``tool_choice`` the model decodes it
    under (``None``: the model chooses)."""
    if state.tool_choice is None:
        return None
    request = GenerateRequest(messages=messages, tools=state.sample.tools)
    choice = default_choice(request, state.tool_choice)
    if choice is None or choice in ("auto", "none", "required"):
        return AllowedCalls.from_openai({"tool_choice": choice})
    return AllowedCalls.from_openai({"tool_choice": {"type": "function", "function": {"name": choice}}})
