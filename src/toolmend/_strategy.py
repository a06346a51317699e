"""The strategy protocol and its registry: what a benchmark's ``solve`` calls (:class:`Generate`),
what may wrap that call (:class:`Strategy`, given a :class:`SolveState`), and
:data:`STRATEGIES`, the strategies by name.

A layer of its own, below both the strategies (:mod:`toolmend.strategies`, which register the
built-in ones) and the benchmarks (which only call a ``generate``), so that neither needs the
other. The runner builds one ``generate`` per sample and wraps it::

    class Reask:
        name = "reask"

        def wrap(self, generate: Generate, state: SolveState) -> Generate:
            async def again(messages, *, epoch=None):
                reply = await generate(messages, epoch=epoch)
                state.events.append({"strategy": "reask", "event": "asked"})
                return reply
            return again

>>> STRATEGIES.kind
'strategy'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from toolmend._registry import Registry
from toolmend._schema import Message, Sample

if TYPE_CHECKING:
    from toolmend.benchmarks._base import Benchmark

__all__ = ["STRATEGIES", "Generate", "SolveState", "Strategy"]


class Generate(Protocol):
    """One model request.

    Returns the reply text in the benchmark's :attr:`~toolmend.benchmarks.Benchmark.reply_format`:
    when the model answered with native tool calls, the runner has already written them into
    that format. Every call is a real request, recorded in the sample's record (requests, tokens,
    latency, outputs). ``epoch`` picks one of several samples of the same prompt (so that they
    cache apart); left out, successive calls of one sample get epochs 0, 1, 2 … (turns of one
    episode).
    """

    async def __call__(self, messages: list[Message], *, epoch: int | None = None) -> str: ...


@dataclass
class SolveState:
    """What a :class:`Strategy` knows about the sample being solved."""

    sample: Sample
    benchmark: Benchmark
    events: list[dict[str, Any]] = field(default_factory=list)
    """Strategy telemetry (JSON-able dicts); stored in the sample's record (``SampleRecord.events``)."""
    tool_mode: Literal["prompt", "native"] = "prompt"
    """How the sample's tools reach the model. ``prompt``: in the prompt, so a reply is text in
    the benchmark's reply format and prose there is a reply in the wrong format. ``native``:
    through the API, so a reply's calls come from the tool-call channel (the runner writes them
    in the reply format) and prose without a call is an answer that calls nothing."""
    tool_choice: str | None = None
    """In native mode, the ``tool_choice`` the model's requests are decoded under when they set
    none (a backend's ``-M tool_choice=required`` or a tool's name; ``None``: the model chooses).
    Requests that answer tool results decode freely
    (:func:`~toolmend.models._hf.default_choice`)."""
    content_only: set[str] = field(default_factory=set)
    """In native mode, the replies (as :class:`Generate` returned them) in which no call came
    through the tool-call channel: the model's content alone. Code in such a reply (a Python
    snippet that reads as a call) is prose, not a call."""


class Strategy(Protocol):
    """Wraps a :class:`Generate` (inference-time recovery: re-ask, repair, reflection…)."""

    name: str

    def wrap(self, generate: Generate, state: SolveState) -> Generate: ...


STRATEGIES: Registry[Callable[[], Strategy]] = Registry("strategy", group="toolmend.strategies")
"""Strategy factories (no arguments) by name; ``"a+b"`` in the runner applies ``a`` then ``b``.
The built-in ones are registered (lazily) by :mod:`toolmend.strategies`."""
