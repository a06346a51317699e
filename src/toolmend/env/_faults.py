"""Seeded, reproducible injection of external environment errors (CriticTool's "environment
errors": timeouts, rate limits, missing permissions, outages, dropped connections).

A :class:`FaultPlan` is a list of rules. A rule fires either by schedule ("fail call #k of tool
X", counting calls of that tool from 1) or with a probability. Whether a probabilistic rule fires
for call #k of tool X depends only on ``(seed, rule index, tool, k)`` — not on which other tools
were called in between — so a plan replays identically for the same seed and call sequence::

    plan = FaultPlan(seed=7, rules=[
        FaultRule(kind="timeout", tool="flight_search", calls=[1]),   # first call times out
        FaultRule(kind="rate_limit", probability=0.1),                 # any tool, 10 %
    ])
"""

from __future__ import annotations

import hashlib
import random
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

from toolmend.env._response import ToolResponse

__all__ = ["FAULT_KINDS", "FaultKind", "FaultPlan", "FaultRule", "fault_response"]

FaultKind = Literal["timeout", "rate_limit", "permission_denied", "service_unavailable", "connection_reset"]
FAULT_KINDS: tuple[FaultKind, ...] = get_args(FaultKind)


class FaultRule(BaseModel):
    """One way a tool may fail: which fault, for which tool (``None`` = any), and when."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: FaultKind
    tool: str | None = None
    calls: list[int] | None = None
    """1-based numbers of the calls of ``tool`` that fail (counted per tool)."""
    probability: float | None = Field(default=None, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _when(self) -> FaultRule:
        if (self.calls is None) == (self.probability is None):
            raise ValueError("a fault rule needs exactly one of 'calls' (a schedule) or 'probability'")
        if self.calls is not None and any(k < 1 for k in self.calls):
            raise ValueError("call numbers in a fault schedule start at 1")
        return self


class FaultPlan(BaseModel):
    """The fault rules of an environment, and the seed that makes probabilistic ones replay."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    seed: int = 0
    rules: list[FaultRule] = Field(default_factory=list)

    def decide(self, tool: str, call_number: int) -> FaultKind | None:
        """The fault for call #``call_number`` (1-based) of ``tool``, or ``None``: the first rule
        that fires wins."""
        for index, rule in enumerate(self.rules):
            if rule.tool is not None and rule.tool != tool:
                continue
            if rule.calls is not None:
                if call_number in rule.calls:
                    return rule.kind
            elif rule.probability and _draw(self.seed, index, tool, call_number) < rule.probability:
                return rule.kind
        return None


def _draw(seed: int, rule: int, tool: str, call_number: int) -> float:
    # A fresh generator per (seed, rule, tool, k): reproducible whatever the interleaving of calls.
    digest = hashlib.sha256(f"{seed}\x00{rule}\x00{tool}\x00{call_number}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big")).random()


# status, message template, extra fields of the error body; worded like common HTTP APIs.
_FAULTS: dict[FaultKind, tuple[int | None, str, dict[str, Any]]] = {
    "timeout": (504, "The upstream service did not answer {tool} within 30 seconds.", {"timeout_s": 30}),
    "rate_limit": (
        429,
        "Rate limit exceeded for {tool}: too many requests. Retry after 20 seconds.",
        {"retry_after_s": 20},
    ),
    "permission_denied": (
        403,
        "The caller does not have permission to use {tool}. Ask the account owner to grant access.",
        {},
    ),
    "service_unavailable": (
        503,
        "The service behind {tool} is temporarily unavailable (maintenance). Please try again later.",
        {},
    ),
    "connection_reset": (None, "Connection reset by peer while calling {tool} (ECONNRESET).", {"errno": 104}),
}


def fault_response(kind: FaultKind, tool: str) -> ToolResponse:
    """The error response a real service gives for ``kind``, labelled ``error=kind``.

    >>> fault_response("rate_limit", "mail_send").status
    429
    """
    status, template, extra = _FAULTS[kind]
    return ToolResponse.from_error(
        status, kind, template.format(tool=tool), source="fault", tool=tool, **extra
    )
