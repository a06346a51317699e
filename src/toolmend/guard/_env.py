"""The environment policy: what to do when a *tool* fails (not the model): retry, skip or finish.

These are the behaviours CriticTool scores for external errors (Retry / Break / Skip / Finish):
a transient fault is retried a bounded number of times (a rate limit after the ``Retry-After``
it names, else with exponential backoff); a permission error is never retried; when retries
are spent the call is skipped if the task can go on without it, else the episode finishes.

>>> policy = EnvPolicy()
>>> d = policy.decide('{"error": {"code": 429, "type": "rate_limit", "message": "Retry after 20 seconds."}}', attempt=0)
>>> d.action, d.fault, d.wait_s
('retry', 'rate_limit', 20.0)
>>> policy.decide("403 Forbidden: the caller does not have permission", attempt=0).action
'finish'
>>> policy.decide('{"temp_c": 18}', attempt=0).action
'proceed'
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from toolmend._jsontext import loads

__all__ = ["EnvAction", "EnvDecision", "EnvPolicy", "Fault", "classify_fault"]

Fault = Literal[
    "timeout",
    "rate_limit",
    "permission_denied",
    "service_unavailable",
    "connection_reset",
    "not_found",
    "other",
]
EnvAction = Literal["proceed", "retry", "skip", "finish"]

_STATUS: dict[int, Fault] = {408: "timeout", 504: "timeout", 429: "rate_limit", 401: "permission_denied",
                             403: "permission_denied", 502: "service_unavailable", 503: "service_unavailable",
                             404: "not_found"}  # fmt: skip
_WORDS: list[tuple[Fault, re.Pattern[str]]] = [
    ("rate_limit", re.compile(r"rate.?limit|too many requests|\b429\b|quota", re.I)),
    ("timeout", re.compile(r"time[d ]?.?out|did not answer .* within|deadline exceeded|\b504\b", re.I)),
    ("permission_denied", re.compile(r"permission|forbidden|unauthori[sz]ed|access denied|\b40[13]\b", re.I)),
    ("service_unavailable", re.compile(r"unavailable|maintenance|bad gateway|\b50[23]\b", re.I)),
    ("connection_reset", re.compile(r"connection (reset|refused|aborted)|ECONNRESET|broken pipe", re.I)),
    ("not_found", re.compile(r"not found|\b404\b|no such", re.I)),
]
_PLAIN_ERROR = re.compile(r"\berror\b|\bfail(ed|ure)?\b|exception", re.I)
_RETRY_AFTER = re.compile(r"retry.?after\D{0,12}(\d+(?:\.\d+)?)", re.I)


def _error_part(result: Any) -> tuple[Any, str]:
    """(the error object or None, the text to read) of a tool result in any common shape."""
    if isinstance(result, str):
        try:
            parsed = loads(result)
        except json.JSONDecodeError:
            faulty = _PLAIN_ERROR.search(result) or any(p.search(result) for _, p in _WORDS)
            return (result if faulty else None), result
        return _error_part(parsed)
    if isinstance(result, dict):
        err = result.get("error")
        if err:
            return err, json.dumps(err, default=str) if not isinstance(err, str) else err
        if isinstance(result.get("status"), int) and result["status"] >= 400:
            return result, json.dumps(result, default=str)
    return None, json.dumps(result, default=str) if not isinstance(result, str) else result


def classify_fault(result: Any) -> tuple[Fault | None, float | None]:
    """The fault a tool result reports (``None`` for a normal result) and any Retry-After seconds."""
    err, text = _error_part(result)
    if err is None:
        return None, None
    fault: Fault | None = None
    if isinstance(err, dict):
        kind = err.get("type") or err.get("kind")
        if isinstance(kind, str) and kind in _FAULTS:
            fault = kind  # type: ignore[assignment]
        code = err.get("code") or err.get("status")
        if fault is None and isinstance(code, int):
            fault = _STATUS.get(code)
        for key in ("retry_after_s", "retry_after"):
            if isinstance(err.get(key), int | float):
                return fault or "rate_limit", float(err[key])
    if fault is None:
        fault = next((f for f, pat in _WORDS if pat.search(text)), "other")
    m = _RETRY_AFTER.search(text)
    return fault, (float(m.group(1)) if m else None)


_FAULTS = {
    "timeout",
    "rate_limit",
    "permission_denied",
    "service_unavailable",
    "connection_reset",
    "not_found",
}


_GIVE_UP: dict[str, Literal["skip", "finish"]] = {"permission_denied": "finish"}


class EnvDecision(BaseModel):
    """What to do about one tool result (``proceed`` when it is not a fault)."""

    model_config = ConfigDict(extra="forbid")

    action: EnvAction
    fault: Fault | None = None
    wait_s: float = 0.0
    attempt: int = 0
    reason: str = ""

    def event(self) -> dict[str, Any]:
        """As a JSON-able telemetry event."""
        return {"kind": "env", **self.model_dump()}


class EnvPolicy(BaseModel):
    """Per fault kind: retry (how often, how long to wait) or give up (skip or finish).

    ``retry`` lists the faults worth retrying; ``max_retries`` bounds retries per call and
    ``max_retries_per_run`` over a run; waits grow ``backoff_s * 2**attempt`` up to
    ``max_wait_s`` unless the fault names a ``Retry-After``. ``on_give_up`` says what happens to a
    call that still fails per fault (``finish`` for permissions: no retry can grant access;
    ``default_give_up`` for the retried faults). Any other error (a bad argument, an unknown id)
    is the model's to handle: ``proceed``.
    """

    model_config = ConfigDict(extra="forbid")

    retry: tuple[Fault, ...] = ("timeout", "rate_limit", "service_unavailable", "connection_reset")
    max_retries: int = 2
    max_retries_per_run: int = 10
    backoff_s: float = 1.0
    max_wait_s: float = 60.0
    on_give_up: dict[str, Literal["skip", "finish"]] = Field(default_factory=lambda: dict(_GIVE_UP))
    default_give_up: Literal["skip", "finish"] = "skip"
    retries_used: int = 0

    def decide(self, result: Any, *, attempt: int) -> EnvDecision:
        """The decision for a tool ``result`` after ``attempt`` retries of that call."""
        fault, after = classify_fault(result)
        if fault is None:
            return EnvDecision(action="proceed", attempt=attempt)
        if (
            fault in self.retry
            and attempt < self.max_retries
            and self.retries_used < self.max_retries_per_run
        ):
            self.retries_used += 1
            wait = after if after is not None else min(self.max_wait_s, self.backoff_s * 2**attempt)
            return EnvDecision(action="retry", fault=fault, wait_s=float(wait), attempt=attempt,
                               reason="Retry-After" if after is not None else "backoff")  # fmt: skip
        if fault not in self.retry and fault not in self.on_give_up:
            # Not an environment fault (a bad argument, an unknown id): the model's to handle.
            return EnvDecision(action="proceed", fault=fault, attempt=attempt, reason="for the model")
        give_up = self.on_give_up.get(fault, self.default_give_up)
        why = "not retryable" if fault not in self.retry else "retries spent"
        return EnvDecision(action=give_up, fault=fault, attempt=attempt, reason=why)
