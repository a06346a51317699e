"""Backends without a model: ``scripted`` for tests and ``replay`` for re-scoring saved outputs.

>>> import asyncio
>>> from toolmend import Message
>>> model = ScriptedModel(lambda messages: messages[-1].content.upper())
>>> asyncio.run(model.generate([Message(role="user", content="hi")])).text
'HI'

Usage is counted in whitespace-separated words so that token sums can be checked in tests.
Neither backend is cached: their answers cost nothing and a script may change between runs.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from toolmend._errors import ModelError
from toolmend._schema import Message
from toolmend.models._base import Completion, GenerateRequest, Model, Usage
from toolmend.models._predictions import read_predictions

__all__ = ["ReplayModel", "Script", "ScriptedModel"]

Reply = str | Completion
Script = Sequence[Reply] | Callable[[list[Message]], Reply | Awaitable[Reply]]
"""A list of replies given in order, or a (sync or async) function of the messages."""


def _words(text: str) -> int:
    return len(text.split())


def _completion(reply: Reply, messages: list[Message]) -> Completion:
    if isinstance(reply, Completion):
        return reply
    return Completion(
        text=reply,
        usage=Usage(input_tokens=sum(_words(m.content) for m in messages), output_tokens=_words(reply)),
        finish_reason="stop",
    )


class ScriptedModel(Model):
    """Answers from a script; ``delay`` seconds per answer stands in for latency.

    The function may raise :class:`~toolmend.ModelError` to play an infrastructure failure
    (``retryable=True`` ones are retried like real ones).
    """

    cacheable = False
    http = False

    def __init__(
        self, script: Script, *, delay: float = 0.0, name: str = "scripted", max_connections: int = 1000
    ) -> None:
        super().__init__(name, max_connections=max_connections)
        self.script = script
        self.delay = delay
        self.calls = 0
        self._next = 0

    async def _generate(self, request: GenerateRequest) -> Completion:
        self.calls += 1
        if self.delay:
            await asyncio.sleep(self.delay)
        if callable(self.script):
            reply = self.script(request.messages)
            if inspect.isawaitable(reply):
                reply = await reply
        else:
            if self._next >= len(self.script):
                raise ModelError(f"script exhausted after {len(self.script)} replies")
            reply = self.script[self._next]
            self._next += 1
        return _completion(reply, request.messages)


class ReplayModel(Model):
    """Replays a predictions file of ``{"id": ..., "output": "..."}`` lines (or ``"outputs": [...]``,
    one per epoch); ``generate`` must be given the ``sample_id``."""

    cacheable = False
    http = False

    def __init__(self, path: str | Path) -> None:
        super().__init__(f"replay/{path}", max_connections=1000)
        self.path = Path(path)
        preds = read_predictions(self.path, strict=True).outputs
        self.outputs = {sid: [out] if isinstance(out, str) else out for sid, out in preds.items()}

    async def _generate(self, request: GenerateRequest) -> Completion:
        if request.sample_id is None:
            raise ModelError("the replay backend needs sample_id= to find the saved output")
        outputs = self.outputs.get(request.sample_id)
        if outputs is None:
            raise ModelError(f"{self.path}: no output for sample {request.sample_id!r}")
        if request.epoch >= len(outputs):
            raise ModelError(
                f"{self.path}: sample {request.sample_id!r} has {len(outputs)} outputs, epoch {request.epoch} asked"
            )
        return _completion(outputs[request.epoch], request.messages)
