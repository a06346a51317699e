"""What the ``wrap()`` adapters share (:mod:`toolmend.guard.openai_client`,
:mod:`toolmend.guard.anthropic_client`), whatever the SDK: the state a wrapped client keeps across
calls (:class:`WrapCore`), the wrapped client and its resources passing on what they do not guard
(:class:`GuardedBase`, :class:`Passthrough`), a decided answer replayed as a stream
(:class:`Replay`), and an SDK's transport errors as :class:`~toolmend.ModelError`.

>>> core = WrapCore(None, None)
>>> core.guard_for({"messages": []}) is None  # no tools given, none in the request: nothing to guard
True
>>> [chunk for chunk in Replay(["a", "b"])]
['a', 'b']
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any, Self

from toolmend._errors import ModelError
from toolmend._schema import Tool
from toolmend.guard._aborted import GuardAborted
from toolmend.guard._driver import GuardOutcome
from toolmend.guard._engine import Guard
from toolmend.guard._policy import GuardPolicy

__all__ = ["GuardedBase", "Passthrough", "Replay", "WrapCore", "transport_error"]


def transport_error(exc: Exception, retryable: tuple[type[Exception], ...]) -> Exception:
    """``exc`` as a retryable :class:`~toolmend.ModelError` when it is one of the SDK's
    ``retryable`` transport errors (connection, time-out, rate limit, server error); others as
    they are."""
    if isinstance(exc, retryable):
        return ModelError(str(exc), retryable=True, status=getattr(exc, "status_code", None))
    return exc


class WrapCore:
    """What a wrapped client keeps across calls: the policy, the guard when ``tools`` were given
    (its run budget spans calls), and every guarded turn's telemetry. ``tool_list`` makes the
    SDK's tool dicts the tools the guard takes."""

    def __init__(
        self,
        tools: Sequence[Tool | Mapping[str, Any]] | None,
        policy: GuardPolicy | None,
        tool_list: Callable[[Any], list[Any]] = list,
    ) -> None:
        self.policy = policy or GuardPolicy()
        self.tool_list = tool_list
        self.guard = Guard(tool_list(tools), self.policy) if tools is not None else None
        self.events: list[dict[str, Any]] = []

    def guard_for(self, kwargs: Mapping[str, Any]) -> Guard | None:
        """The guard for a request: the client's, else one for the request's own ``tools``."""
        if self.guard is not None:
            return self.guard
        tools = kwargs.get("tools")
        return Guard(self.tool_list(tools), self.policy) if tools else None

    def settle(self, outcome: GuardOutcome, last: Any) -> None:
        """Keep the turn's telemetry; raise :class:`GuardAborted` (with ``last``, the last answer)
        when the guard stopped the run."""
        self.events.extend(outcome.events)
        if outcome.status == "aborted":
            raise GuardAborted(outcome, last)


class Passthrough:
    """A wrapped SDK resource: what it does not guard is the SDK's own."""

    def __init__(self, inner: Any, core: Any) -> None:
        self._inner, self._core = inner, core

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class GuardedBase:
    """A wrapped client: its guarded resources are set by the subclass, everything else passes
    through."""

    def __init__(self, client: Any, core: WrapCore) -> None:
        self._client = client
        self._core = core

    @property
    def events(self) -> list[dict[str, Any]]:
        """Telemetry of every guarded turn so far."""
        return self._core.events

    @property
    def guard(self) -> Guard | None:
        """The guard, when ``tools=`` was given to ``wrap`` (its run budget spans calls)."""
        return self._core.guard

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


class Replay:
    """A decided answer's events replayed as a stream: iterable (sync and async), closable, usable
    in ``with`` and ``async with``."""

    def __init__(self, items: Sequence[Any]) -> None:
        self._items = iter(items)

    def __iter__(self) -> Iterator[Any]:
        return self._items

    def __next__(self) -> Any:
        return next(self._items)

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._async()

    async def _async(self) -> AsyncIterator[Any]:
        for item in self._items:
            yield item

    def close(self) -> None:
        return None

    async def aclose(self) -> None:
        return None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None
