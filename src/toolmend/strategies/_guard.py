"""``guard``: repair first, re-ask only what repair cannot fix (:mod:`toolmend.guard`) — as a
strategy around any benchmark's ``generate``."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from toolmend._errors import ConfigError, first_error
from toolmend._schema import Message
from toolmend.guard import Guard, GuardPolicy, drive
from toolmend.guard._turn import Turn
from toolmend.strategies._base import Generate, SolveState
from toolmend.strategies._reply import read_reply, reply_format, write_reply

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

        async def guarded(messages: list[Message], *, epoch: int | None = None) -> str:
            first = await generate(messages, epoch=epoch)
            last = [first]

            async def respond(history: list[Message]) -> Turn:
                text = await generate(history, epoch=epoch)
                last.append(text)
                return read_reply(text, fmt)

            out = await drive(guard, respond, messages, first=read_reply(first, fmt))
            state.events.extend(out.events)
            state.events.append(
                {"kind": "guard_turn", "status": out.status, "requests": out.extra_requests,
                 "codes": sorted({c for d in out.decisions for c in d.codes})}
            )  # fmt: skip
            final = out.final
            if out.status == "aborted":
                # The guard gave up: the model's last answer stands as it wrote it (an empty
                # reply to a re-ask is no answer, so the one before it).
                return next((text for text in reversed(last) if text.strip()), last[-1])
            if final.action == "accept" and not final.fixes and len(final.calls) == len(out.turn.calls):
                return last[-1]  # as the model wrote it
            return write_reply(out.calls, fmt, out.turn, state.sample.tools)

        return guarded
