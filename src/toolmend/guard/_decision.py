"""What the guard decided about a turn: a :class:`Decision`, plain data.

The action is one of

- ``accept`` — every call is valid as it stands;
- ``repaired`` — every problem had a safe fix (``fixes``, each tied to its finding);
- ``reask`` — ask the model again: ``messages`` are what to append to the conversation, ``reask``
  the indices of the calls in question, ``keep`` the valid siblings that go ahead;
- ``fail_to_model`` — re-asking is not allowed (or the budget says so): the bad calls get the
  tool results in ``messages`` and only ``keep`` runs;
- ``abort`` — the budget is spent: a terminal state, never a silent success.

``calls`` is what may be executed now (after repairs): all of them for accept/repaired, the
kept ones otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from toolmend._schema import Finding, Message, ToolCall

__all__ = ["Action", "Decision", "GuardFix"]

Action = Literal["accept", "repaired", "reask", "fail_to_model", "abort"]


@dataclass(slots=True)
class GuardFix:
    """One safe change the guard made, with the code of the finding it answers."""

    code: str
    action: str
    call: int | None = None
    path: str = ""
    before: Any = None
    after: Any = None


@dataclass(slots=True)
class Decision:
    """The guard's verdict on one turn (see the module docstring). Plain data: a dataclass, so
    that deciding a clean turn costs little next to the check itself."""

    action: Action
    calls: list[ToolCall] = field(default_factory=list)
    fixes: list[GuardFix] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    """What was found and not fixed (what the re-ask or the tool results are about)."""
    reask: list[int] = field(default_factory=list)
    keep: list[int] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    attempt: int = 0
    """0 for the model's first answer, k for the answer to the k-th re-ask."""
    escalated: bool = False
    reason: str = ""
    """For ``abort``/``fail_to_model``: which budget or rule ended the turn."""
    text: str | None = None
    """The turn's text as it should now read, where the guard changed it (calls printed as text
    and taken as calls leave the prose around them); ``None``: unchanged."""

    @property
    def codes(self) -> list[str]:
        """The finding codes the decision is about (fixed and unfixed), in order, unique."""
        seen: dict[str, None] = {}
        for fix in self.fixes:
            seen.setdefault(fix.code, None)
        for f in self.findings:
            seen.setdefault(f.code, None)
        return list(seen)

    @property
    def terminal(self) -> bool:
        """Whether the turn ends here (nothing more to ask the model)."""
        return self.action != "reask"

    def event(self, **extra: Any) -> dict[str, Any]:
        """The decision as a JSON-able telemetry event (``extra`` adds tokens, latency, ...)."""
        return {
            "kind": "guard",
            "action": self.action,
            "attempt": self.attempt,
            "codes": self.codes,
            "fixed": [f.code for f in self.fixes],
            "unfixed": [f.code for f in self.findings],
            "reask": list(self.reask),
            "keep": list(self.keep),
            "escalated": self.escalated,
            "reason": self.reason,
            **extra,
        }
