"""The one async model interface: messages (and tools) in, a :class:`Completion` out.

Every backend subclasses :class:`Model` and implements a single method, ``_generate``. The base
class owns everything that is policy rather than wire format — the response cache, the bound on
requests in flight and transport retries — so a backend stays a thin translation layer::

    model = get_model("openai/gpt-4o-mini", base_url="http://localhost:8000/v1")
    async with model:
        out = await model.generate([Message(role="user", content="2+2?")], tools=tools)
    out.text, out.tool_calls, out.usage.total_tokens, out.retries

A model's malformed answer is data (``Completion.raw_tool_calls[i].error``); an exception from
:meth:`Model.generate` is always a :class:`~toolmend.ModelError` describing infrastructure
(``retryable=True`` after the retries ran out on a 429/5xx/timeout/dropped connection).
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from toolmend._errors import ModelError
from toolmend._http import Breaker, ModelFailure, RetryPolicy, call_with_retries, is_deterministic
from toolmend._schema import Message, Tool, ToolCall
from toolmend.models._cache import ResponseCache, cache_key

__all__ = [
    "Completion",
    "GenerateConfig",
    "GenerateRequest",
    "Model",
    "RawToolCall",
    "ToolChoice",
    "ToolMode",
    "Usage",
]

ToolChoice = Literal["auto", "none", "required"] | str
"""``"auto"``, ``"none"``, ``"required"``, or the name of the one tool the model must call."""

ToolMode = Literal["native", "prompt"]
"""``native``: tools travel as the API's function-calling schema and calls come back parsed;
``prompt``: tools are described in the system prompt and calls come back as text."""


class GenerateConfig(BaseModel):
    """Generation settings. Every field here changes the answer, so all of them are in the cache
    key; ``None`` means "the backend's default" (greedy for local backends)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    stop: list[str] | None = None
    seed: int | None = None
    extra: dict[str, Any] = Field(default_factory=dict)
    """Backend-specific request fields passed through as they are (e.g. vLLM's ``top_k``)."""


class GenerateRequest(BaseModel):
    """Everything one generation depends on; hashed (minus ``sample_id``) for the cache key."""

    model_config = ConfigDict(extra="forbid")

    messages: list[Message]
    tools: list[Tool] = Field(default_factory=list)
    tool_choice: ToolChoice | None = None
    config: GenerateConfig = Field(default_factory=GenerateConfig)
    epoch: int = 0
    """Which of several samples of the same prompt this is (so sampled answers cache apart)."""
    sample_id: str | None = None
    """The dataset id the request is for; only the replay backend reads it."""
    cache_scope: str | None = None
    """What else the answer is keyed on (e.g. the inference-time strategy asking); not sent."""


class Usage(BaseModel):
    """Token counts of one completion (or a sum of several: ``a + b``)."""

    model_config = ConfigDict(extra="forbid")

    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
        )


class RawToolCall(BaseModel):
    """A natively returned tool call exactly as the backend sent it.

    ``arguments`` is the raw JSON string; ``error`` says why it could not become a
    :class:`~toolmend.ToolCall` (broken JSON, not an object), ``None`` when it did.
    """

    model_config = ConfigDict(extra="forbid")

    id: str | None = None
    name: str
    arguments: str = ""
    error: str | None = None


class Completion(BaseModel):
    """What a model answered, with the bookkeeping a run needs."""

    model_config = ConfigDict(extra="forbid")

    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    """Native tool calls that parsed; calls whose arguments did not are only in ``raw_tool_calls``."""
    raw_tool_calls: list[RawToolCall] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    """Wall time of the attempt that succeeded (waits between retries not included)."""
    finish_reason: str | None = None
    model: str = ""
    cached: bool = False
    """Served from the response cache: no request was made and ``usage`` was not spent again."""
    retries: int = 0
    """Failed attempts before this answer; their (unbilled or unknown) usage is never added."""

    @property
    def empty(self) -> bool:
        """Neither text nor a tool call: never cached, usually a backend hiccup."""
        return not self.text.strip() and not self.raw_tool_calls and not self.tool_calls


class Model(ABC):
    """Base class of every backend (see the module docstring for usage).

    Subclasses implement :meth:`_generate` and, when the answer depends on more than the model
    name (a base URL, a tool mode), extend :meth:`cache_identity`. ``max_connections`` bounds the
    attempts in flight (a retry waiting for its backoff does not hold a slot).
    """

    cacheable: bool = True
    """Whether answers of this backend may be cached (the fakes say no)."""
    http: bool = True
    """Whether its answers come over HTTP; backends that answer in this process (a local engine,
    the fakes, the checklist critic) say no, and ``toolmend bench`` then speaks of replies
    computed here rather than of HTTP attempts and retries."""

    def __init__(
        self,
        name: str,
        *,
        cache: ResponseCache | None = None,
        max_connections: int = 16,
        retry: RetryPolicy | None = None,
    ) -> None:
        if max_connections < 1:
            raise ModelError(f"max_connections must be at least 1, got {max_connections}")
        self.name = name
        self.cache = cache if self.cacheable else None
        self.max_connections = max_connections
        self.retry = retry or RetryPolicy()
        self.breaker: Breaker | None = None
        """Shared by every request of this model; a backend that talks to a server sets it, so
        that a server that stopped accepting connections stops the run (see :class:`~toolmend._http.Breaker`)."""
        self._slots: asyncio.Semaphore | None = None
        self._slots_loop: asyncio.AbstractEventLoop | None = None

    def cache_identity(self) -> dict[str, Any]:
        """What identifies this backend in the cache key (never secrets or limits)."""
        return {"backend": type(self).__name__, "model": self.name}

    def request_defaults(self) -> dict[str, Any]:
        """What this backend sends for the generation settings a request leaves unset (the
        OpenAI backend's ``max_tokens``, ``temperature``); ``{}`` where nothing is stated. Part of
        a run's identity: a run records it, and resuming it with other values is refused."""
        return {}

    @abstractmethod
    async def _generate(self, request: GenerateRequest) -> Completion:
        """One attempt. Raise :class:`~toolmend.ModelError` (``retryable=True`` where trying
        again may help) for infrastructure failures; return malformed answers as data."""

    async def generate(
        self,
        messages: list[Message],
        *,
        tools: list[Tool] | None = None,
        tool_choice: ToolChoice | None = None,
        config: GenerateConfig | None = None,
        epoch: int = 0,
        sample_id: str | None = None,
        cache_scope: str | None = None,
    ) -> Completion:
        """Answer ``messages``: from the cache when possible, else with bounded, retried attempts.

        ``cache_scope`` keys the cached answer apart from the same request asked for another
        purpose (the runner passes the strategy's name)."""
        request = GenerateRequest(
            messages=list(messages),
            tools=list(tools or []),
            tool_choice=tool_choice,
            config=config or GenerateConfig(),
            epoch=epoch,
            sample_id=sample_id,
            cache_scope=cache_scope,
        )
        key = self.cache_key(request) if self.cache is not None else None
        if self.cache is not None and key is not None:
            hit = self.cache.get(key)
            if hit is not None:
                return hit.model_copy(update={"cached": True, "retries": 0})
        completion = await self._attempts(request)
        if self.cache is not None and key is not None:
            self.cache.put(key, completion, model=self.name)
        return completion

    def cache_key(self, request: GenerateRequest) -> str:
        """The cache key of ``request`` for this model (see :func:`~toolmend.models._cache.cache_key`)."""
        payload = request.model_dump(mode="json", exclude={"sample_id", "cache_scope"})
        if request.cache_scope is not None:  # absent otherwise: keys stay those of earlier versions
            payload["cache_scope"] = request.cache_scope
        return cache_key(self.cache_identity(), payload)

    async def _attempts(self, request: GenerateRequest) -> Completion:
        errors: list[ModelError] = []
        slots = self._semaphore()
        timing = [0.0]

        async def attempt() -> Completion:
            async with slots:
                start = time.perf_counter()
                completion = await self._generate(request)
                timing[0] = time.perf_counter() - start
            return completion

        try:
            completion = await call_with_retries(attempt, self.retry, errors, breaker=self.breaker)
        except ModelError as exc:
            failure = self._give_up(exc, errors)
            if failure is exc:
                raise
            raise failure from exc
        return completion.model_copy(
            update={
                "latency_s": completion.latency_s or timing[0],
                # A backend that resent the request itself (to another replica) counts those too.
                "retries": len(errors) + completion.retries,
                "model": completion.model or self.name,
            }
        )

    @staticmethod
    def _give_up(exc: ModelError, errors: list[ModelError]) -> ModelError:
        # Every attempt counts as a request that was made, so totals match the server's log.
        out: ModelError = exc
        if is_deterministic(list(errors)):
            out = ModelFailure(
                f"{exc} (the same answer on all {len(errors)} attempts: the model's failure)",
                status=exc.status,
            )
        out.attempts = len(errors)
        return out

    def _semaphore(self) -> asyncio.Semaphore:
        # A semaphore belongs to the loop it was first used on; tests and scripts may run one model
        # under several asyncio.run() calls, so rebuild it when the loop changes.
        loop = asyncio.get_running_loop()
        if self._slots is None or self._slots_loop is not loop:
            self._slots = asyncio.Semaphore(self.max_connections)
            self._slots_loop = loop
        return self._slots

    async def aclose(self) -> None:
        """Release connections and engines. Safe to call twice."""
        return None

    async def __aenter__(self) -> Model:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"
