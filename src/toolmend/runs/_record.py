"""One line of ``samples.jsonl``: what happened to one sample.

A record ends in exactly one of two states: *scored* (``error is None``; ``scores`` hold the
benchmark's values, a model's mistakes included) or *infrastructure error* (``error`` set: the
backend could not answer even after its retries). The two are never mixed, so a flaky server
lowers the completion rate, not the score.

>>> rec = SampleRecord(id="s1")
>>> rec.add_completion(Completion(text="[f(x=1)]", usage=Usage(input_tokens=10, output_tokens=4)))
>>> rec.outputs, rec.usage.total_tokens
(['[f(x=1)]'], 14)
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from toolmend._errors import ModelError
from toolmend._schema import Finding, ToolCall
from toolmend.models._base import Completion, Usage
from toolmend.runs._redact import redact_text

__all__ = ["InfraError", "SampleRecord"]


class InfraError(BaseModel):
    """Why a sample could not be answered (transport/server failure, not the model's mistake)."""

    model_config = ConfigDict(extra="forbid")

    message: str
    type: str = "ModelError"
    status: int | None = None
    retryable: bool = False
    """True when trying again later may help; ``retry_errors=True`` on resume re-runs these."""

    @property
    def cause(self) -> str:
        """A short label to count failures by: ``HTTP 500``, ``timed out after 5 s``, ``connection failed``."""
        if self.status is not None and self.status >= 400:
            return f"HTTP {self.status}"
        head, sep, rest = self.message.partition(": ")
        text = rest if sep and "://" in head else self.message  # drop the URL the message starts with
        return text.split(" (", 1)[0].strip() or self.type

    @classmethod
    def from_exception(cls, exc: BaseException) -> InfraError:
        """The record of ``exc`` (a :class:`~toolmend.ModelError` keeps its status and retryability)."""
        # Messages quote URLs and headers; credentials in them never reach samples.jsonl.
        message = redact_text(str(exc) or type(exc).__name__)
        if isinstance(exc, ModelError):
            return cls(message=message, type=type(exc).__name__, status=exc.status, retryable=exc.retryable)
        return cls(message=message, type=type(exc).__name__)


class SampleRecord(BaseModel):
    """What a run keeps for one sample (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    id: str
    outputs: list[str] = Field(default_factory=list)
    """What was scored, one per generation (turns, epochs, repair attempts): the model's text,
    or the calls it returned written in the benchmark's reply format (malformed ones included)."""
    seeds: list[int | None] = Field(default_factory=list)
    """The seed sent with each generation, where the runner recorded it."""
    calls: list[ToolCall] = Field(default_factory=list)
    """The calls parsed from the final output."""
    findings: list[Finding] = Field(default_factory=list)
    scores: dict[str, float | None] = Field(default_factory=dict)
    """Metric → value; ``None`` where the metric does not apply to this sample."""
    usage: Usage = Field(default_factory=Usage)
    """Tokens spent on this sample: fresh completions only (a cache hit spends nothing)."""
    retries: int = 0
    """Transport retries across this sample's requests; their usage is never counted."""
    cache_hits: int = 0
    requests: int = 0
    """Completions obtained (from the server or the cache), retries not included."""
    attempts: int = 0
    """HTTP requests really made for this sample: every attempt, failed ones included (a cache
    hit makes none)."""
    latency_s: float = 0.0
    error: InfraError | None = None
    details: dict[str, Any] = Field(default_factory=dict)
    """Anything else a benchmark wants in reports (parse status, the error type, a judge's reason)."""
    events: list[dict[str, Any]] = Field(default_factory=list)
    """What inference-time strategies did on this sample (``SolveState.events``), in order."""

    def add_failure(self, exc: ModelError, *, seed: int | None = None, at: int | None = None) -> None:
        """Account for a request that failed on every attempt (a model failure keeps the sample
        scored: its output is recorded as empty); ``at`` as in :meth:`add_completion`."""
        place = len(self.outputs) if at is None else at
        self.outputs.insert(place, "")
        self.seeds.insert(place, seed)
        self.attempts += exc.attempts
        self.retries += max(0, exc.attempts - 1)

    def fail(self, exc: BaseException) -> SampleRecord:
        """Mark this sample an infrastructure error, keeping what it already spent."""
        if isinstance(exc, ModelError):
            self.attempts += exc.attempts
            self.retries += max(0, exc.attempts - 1)
        self.error = InfraError.from_exception(exc)
        return self

    @property
    def ok(self) -> bool:
        """Scored (possibly zero), as opposed to an infrastructure error."""
        return self.error is None

    def add_completion(
        self,
        completion: Completion,
        *,
        output: str | None = None,
        seed: int | None = None,
        at: int | None = None,
    ) -> None:
        """Account for one completion: its output (``output`` when the scored text differs from
        the completion's text), seed, tokens (unless cached), retries and latency. ``at`` puts
        output and seed at that place instead of last (generations that finish out of order)."""
        place = len(self.outputs) if at is None else at
        self.outputs.insert(place, completion.text if output is None else output)
        self.seeds.insert(place, seed)
        self.requests += 1
        self.retries += completion.retries
        if completion.cached:
            self.cache_hits += 1
        else:
            self.attempts += completion.retries + 1
            self.usage = self.usage + completion.usage
            self.latency_s += completion.latency_s
