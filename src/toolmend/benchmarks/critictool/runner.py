"""Running a model on CriticTool samples: one reply for internal errors, the interactive retry loop
for external ones.

The model is any :class:`~toolmend.benchmarks.Generate` (an async ``generate(messages) -> str``),
so this module does not depend on a backend::

    async def generate(messages: list[Message], *, epoch: int | None = None) -> str:
        return await my_model.complete(messages)

    outputs = await run_sample(sample, generate)            # str, or list[str] for external errors
    score = CriticToolBenchmark().score(sample, outputs)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from toolmend.benchmarks.base import Generate, Prediction
from toolmend.benchmarks.critictool.prompts import Instructions, build_prompt
from toolmend.benchmarks.critictool.scoring import gold_actions
from toolmend.formats.critictool import parse_action
from toolmend.schema import Message, Sample

__all__ = ["run_external", "run_sample"]


async def run_external(
    messages: list[Message],
    failed_call: Mapping[str, Any],
    generate: Generate,
    *,
    retry_limit: int = 3,
) -> list[str]:
    """The official external-error episode: up to ``retry_limit + 1`` generations.

    While the model repeats the failed call exactly (same name, ``==`` args), the reply is appended
    and the tool's error response is given again; the first reply that does anything else (or does
    not parse as a whole, fence aside: prose around the object ends the episode, as officially)
    ends it. Returns every raw reply, in order.

    >>> import asyncio
    >>> async def stubborn(msgs, *, epoch=None): return '{"name": "Weather.now", "args": {"city": "Oslo"}}'
    >>> failed = {"name": "Weather.now", "args": {"city": "Oslo"}}
    >>> len(asyncio.run(run_external([Message(role="user", content="error")], failed, stubborn)))
    4
    """
    msgs = list(messages)
    outputs: list[str] = []
    name, args = failed_call.get("name"), failed_call.get("args")
    for _ in range(retry_limit + 1):
        out = await generate(list(msgs))
        outputs.append(out)
        # The official loop reads the reply without cutting out the {...} object, so a repeat
        # wrapped in prose ends the episode (the scorer, which cuts, still counts it as a retry).
        if not parse_action(out, find_object=False).same_call(name, args):
            break
        error_response = msgs[-1]
        msgs += [Message(role="assistant", content=out), error_response.model_copy()]
    return outputs


async def run_sample(
    sample: Sample,
    generate: Generate,
    *,
    instructions: Instructions | None = None,
    tool_role: Literal["tool", "user"] = "user",
    retry_limit: int = 3,
) -> Prediction:
    """Run ``generate`` on one sample the way the official runner does; the result is what
    :meth:`CriticToolBenchmark.score` takes."""
    messages = build_prompt(sample, instructions, tool_role=tool_role)
    if sample.metadata.get("part") == "external":
        return await run_external(messages, gold_actions(sample)[0], generate, retry_limit=retry_limit)
    return await generate(messages)
