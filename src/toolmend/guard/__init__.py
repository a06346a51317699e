"""The guard: catch a bad tool call before it runs, repair it safely, or re-ask precisely.

:class:`Guard` decides (data, no I/O), :func:`drive` runs the loop against any model, and the
adapters put the same decisions where agents live (:func:`wrap` for an ``openai`` or
``anthropic`` client, :class:`~toolmend.guard.langchain.GuardMiddleware` for LangChain agents;
all lazy extras).

>>> from toolmend.guard import Guard, Turn
>>> guard = Guard([{"name": "add", "parameters": {"type": "object",
...     "properties": {"a": {"type": "integer"}}, "required": ["a"]}}])
>>> guard.decide(Turn.from_native("", [{"id": "c1", "name": "add", "arguments": '{"a": "2"}'}])).action
'repaired'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolmend.guard._allowed import AllowedCalls
from toolmend.guard._conversation import SESSION_HEADER, Conversation, Conversations, call_signature
from toolmend.guard._decision import Action, Decision, GuardFix
from toolmend.guard._driver import GuardOutcome, Reply, drive
from toolmend.guard._engine import Guard
from toolmend.guard._env import EnvDecision, EnvPolicy, classify_fault
from toolmend.guard._policy import GuardPolicy
from toolmend.guard._turn import Turn, TurnCall

if TYPE_CHECKING:
    from toolmend.guard.openai_client import wrap

__all__ = [
    "Action",
    "Conversation",
    "Conversations",
    "SESSION_HEADER",
    "Decision",
    "EnvDecision",
    "EnvPolicy",
    "Guard",
    "GuardFix",
    "GuardOutcome",
    "GuardPolicy",
    "Reply",
    "AllowedCalls",
    "Turn",
    "TurnCall",
    "call_signature",
    "classify_fault",
    "drive",
    "wrap",
]


def __getattr__(name: str) -> Any:
    # The openai adapter imports the openai package; load it only when asked for.
    if name == "wrap":
        from toolmend.guard.openai_client import wrap

        return wrap
    raise AttributeError(f"module 'toolmend.guard' has no attribute {name!r}")
