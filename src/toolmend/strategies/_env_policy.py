"""``env-policy``: what to do when a *tool* failed — retry, skip or finish per fault kind
(:class:`~toolmend.guard.EnvPolicy`), the behaviours CriticTool scores as Retry / Break / Skip /
Finish.

When the conversation ends with a failed tool result: ``retry`` repeats the failed call without
asking the model (after the Retry-After or backoff wait: slept for with ``wait=True``, else only
recorded, as in a simulated environment); ``skip`` tells the model to go on without that call;
``finish`` ends the episode (in a JSON action format, a finish action naming the failure; else
the model is told to stop and answer). Anything else goes to the model unchanged."""

from __future__ import annotations

import asyncio
from typing import Any

from toolmend._schema import Message
from toolmend.formats import write_calls
from toolmend.guard import EnvPolicy
from toolmend.strategies._base import Generate, SolveState
from toolmend.strategies._reply import reply_format

__all__ = ["EnvPolicyStrategy"]

_SKIP = "The call above failed ({fault}) and will not be retried. Go on with the task without it."
_FINISH = "The call above failed ({fault}) and cannot succeed. Stop calling tools and give your final answer, saying what failed."


def _attempts(messages: list[Message]) -> int:
    """How often the failed call was already repeated at the end of ``messages``."""
    n, k = 0, len(messages) - 1
    while k >= 3 and messages[k - 1].role == "assistant" and messages[k - 3].role == "assistant":
        if messages[k - 1].content.strip() != messages[k - 3].content.strip():
            break
        n, k = n + 1, k - 2
    return n


class EnvPolicyStrategy:
    """See the module docstring; ``policy_options`` build the :class:`~toolmend.guard.EnvPolicy`."""

    name = "env-policy"

    def __init__(self, policy: EnvPolicy | None = None, *, wait: bool = False, **policy_options: Any) -> None:
        self.policy_options = policy_options
        self.template = policy
        self.wait = wait

    def wrap(self, generate: Generate, state: SolveState) -> Generate:
        fmt = reply_format(state.benchmark)
        policy = self.template.model_copy(deep=True) if self.template else EnvPolicy(**self.policy_options)

        async def env(messages: list[Message], *, epoch: int | None = None) -> str:
            last = messages[-1] if messages else None
            previous = next((m for m in reversed(messages[:-1]) if m.role == "assistant"), None)
            if last is None or last.role not in ("tool", "user") or previous is None:
                return await generate(messages, epoch=epoch)
            decision = policy.decide(last.content, attempt=_attempts(messages))
            if decision.action == "proceed":
                return await generate(messages, epoch=epoch)
            state.events.append(decision.event())
            if decision.action == "retry":
                if self.wait and decision.wait_s:
                    await asyncio.sleep(decision.wait_s)
                return previous.content
            if decision.action == "finish" and fmt == "json":
                return write_calls(
                    [],
                    "json",
                    key="args",
                    final=f"The tool failed ({decision.fault}); the task cannot be completed.",
                )
            note = (_SKIP if decision.action == "skip" else _FINISH).format(fault=decision.fault)
            return await generate([*messages, Message(role="user", content=note)], epoch=epoch)

        return env
