"""Build a critique suite, run a model on it and score it with the CriticTool scorer, in one call.

>>> result = run_critic_main(seed=0, out=tmp_path, model="checklist")   # doctest: +SKIP
>>> round(result.metrics["overall"], 1)                                # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from toolmend.benchmarks.base import Prediction, SampleScore
from toolmend.benchmarks.critic.build import SuiteInfo, build_suite
from toolmend.benchmarks.critic.traces import Source
from toolmend.benchmarks.critictool.benchmark import CriticToolBenchmark
from toolmend.benchmarks.critictool.scoring import SimilarityFn
from toolmend.models.base import Model
from toolmend.schema import Message

__all__ = ["CriticResult", "run_critic", "run_critic_main"]


class CriticResult(BaseModel):
    """The suite, the aggregate metrics (percent) and the per-sample scores and outputs."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    suite: SuiteInfo
    model: str
    metrics: dict[str, float]
    scores: list[SampleScore]
    outputs: dict[str, Prediction]


def _model(model: str | Model) -> Model:
    if isinstance(model, Model):
        return model
    if model.partition("/")[0] == "checklist":
        import toolmend.models.checklist  # noqa: F401  (registers the backend)
    from toolmend.models.providers import get_model

    return get_model(model, cache=False)


async def run_critic(
    suite: SuiteInfo,
    model: str | Model = "checklist",
    *,
    similarity: SimilarityFn | None = None,
    concurrency: int = 16,
    **generate_options: Any,
) -> CriticResult:
    """Run ``model`` on a built suite (both external modes, no CoT) and score it."""
    bench = CriticToolBenchmark(similarity=similarity)
    samples = bench.load(suite.root)
    backend = _model(model)
    gate = asyncio.Semaphore(concurrency)

    async def one(sample_id: str, messages: list[Message]) -> str:
        completion = await backend.generate(messages, sample_id=sample_id, **generate_options)
        return completion.text

    async def run(index: int) -> Prediction:
        sample = samples[index]
        async with gate:
            return await bench.run(sample, lambda msgs: one(sample.id, msgs))

    outputs = await asyncio.gather(*(run(i) for i in range(len(samples))))
    bench.prepare(samples, outputs)  # every text pair embedded in one batch
    scores = [bench.score(s, o) for s, o in zip(samples, outputs, strict=True)]
    return CriticResult(
        suite=suite,
        model=backend.name,
        metrics=bench.aggregate(scores),
        scores=scores,
        outputs={s.id: o for s, o in zip(samples, outputs, strict=True)},
    )


def run_critic_main(
    seed: int = 0,
    out: str | Path = "runs/critic",
    model: str | Model = "checklist",
    *,
    source: Source | str = "world",
    limit: int | None = None,
    similarity: SimilarityFn | None = None,
) -> CriticResult:
    """Build the ``source`` suite for ``seed`` under ``out``, run ``model`` and score it.

    The default (world suite, checklist critic, MiniLM similarity) is the project's main job,
    ``toolmend bench critic``.
    """
    suite = build_suite(source, seed=seed, out=out, limit=limit)
    return asyncio.run(run_critic(suite, model, similarity=similarity))
