"""The ``reflection-bench`` benchmark: official correctness, Repair@N and the reflection reward.

A prediction is one raw reply, or a list of N replies sampled for the same record (Repair@N:
the record counts as repaired when any of them is correct).

>>> bench = ReflectionBench()
>>> samples = bench.load()
>>> s = bench.score(samples[0], bench.gold(samples[0]), mode="improved")
>>> bench.aggregate([s])
{'accuracy': 1.0, 'repair@1': 1.0, 'partial': 1.0, 'reward': 1.0, 'n_samples': 1.0}
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toolmend._shared import shared_dir
from toolmend.benchmarks.base import BENCHMARKS, Benchmark, Generate, Mode, Prediction, SampleScore
from toolmend.benchmarks.reflection_bench.loader import load_reflection_bench
from toolmend.benchmarks.reflection_bench.reward import RewardConfig, Similarity, reflection_reward
from toolmend.benchmarks.reflection_bench.scoring import score_attempt
from toolmend.errors import ConfigError, DatasetError
from toolmend.schema import Message, Sample

__all__ = ["ReflectionBench"]


@BENCHMARKS.register("reflection-bench")
class ReflectionBench(Benchmark):
    """Tool-Reflection-Bench (Qwen ``<tool_call>`` format).

    ``compat`` reproduces ``benchmark/test.py`` (list/object arguments score 0); ``improved``
    compares canonical JSON bags (see :mod:`~toolmend.benchmarks.reflection_bench.scoring`).
    Each attempt also gets the paper's reward, with ``reward_config`` / ``similarity``.
    """

    gold_ceiling = (
        "the official harness rejects list and object arguments, and its bare-call pattern also "
        "fires on calls quoted inside <reflect>"
    )
    load_options = ()
    """The keys ``load()`` takes (``-o KEY=VALUE`` on the command line)."""

    name = "reflection-bench"
    default_data = "data/tool-reflection-bench"
    reply_format = "tags"
    headline = "correct"

    def __init__(
        self,
        reward_config: RewardConfig | None = None,
        similarity: Similarity | None = None,
        *,
        samples: int = 1,
    ) -> None:
        if samples < 1:
            raise ConfigError(f"samples must be at least 1, got {samples}")
        self.reward_config = reward_config
        self.similarity = similarity
        self.samples = samples
        """Replies sampled per record (Repair@N: the record is repaired when any one is correct)."""

    def load(self, path: str | Path | None = None, **options: Any) -> list[Sample]:
        """Read one JSONL file, or every ``*.jsonl`` in a folder (default: the shared sample)."""
        self.check_load_options(options)
        target = Path(path) if path is not None else shared_dir() / self.default_data
        if target.is_dir():
            files = sorted(target.glob("*.jsonl"))
            if not files:
                raise DatasetError("no *.jsonl files in this folder", path=target)
            return [s for f in files for s in load_reflection_bench(f)]
        return load_reflection_bench(target)

    def prompt(self, sample: Sample) -> list[Message]:
        """The record's messages, verbatim: the system prompt already states the protocol."""
        return list(sample.messages)

    async def solve(self, sample: Sample, generate: Generate) -> Prediction:
        """One reply, or :attr:`samples` replies to the same prompt (epochs 0 … N-1) for Repair@N."""
        messages = self.prompt(sample)
        if self.samples == 1:
            return await generate(messages, epoch=0)
        return list(await asyncio.gather(*(generate(messages, epoch=i) for i in range(self.samples))))

    def gold(self, sample: Sample) -> Prediction:
        """The record's ``ground_truth`` reply."""
        truth = sample.metadata.get("ground_truth")
        if not isinstance(truth, str):
            raise ConfigError(f"sample {sample.id} has no ground_truth reply")
        return truth

    def score(self, sample: Sample, prediction: Prediction, mode: Mode = "compat") -> SampleScore:
        attempts = [prediction] if isinstance(prediction, str) else list(prediction)
        gold = sample.metadata.get("ground_truth", "")
        gold = gold if isinstance(gold, str) else ""
        rows: list[dict[str, Any]] = []
        for attempt in attempts:
            result = score_attempt(attempt, gold, mode)
            rows.append(
                {
                    "correct": result.correct,
                    "partial": result.partial,
                    "reward": reflection_reward(attempt, gold, self.reward_config, self.similarity),
                    "errors": list(result.errors),
                }
            )
        n = len(rows)
        values: dict[str, float | None] = {
            "correct": float(any(r["correct"] for r in rows)) if rows else 0.0,
            "pass@1": float(rows[0]["correct"]) if rows else 0.0,
            "partial": sum(r["partial"] for r in rows) / n if n else 0.0,
            "reward": sum(r["reward"] for r in rows) / n if n else 0.0,
        }
        return SampleScore(id=sample.id, values=values, details={"n": n, "attempts": rows})

    def aggregate(self, scores: Sequence[SampleScore], mode: Mode = "compat") -> dict[str, float]:
        """``accuracy`` (first attempt), ``repair@N``, and the attempt-weighted ``partial``/``reward``."""
        if not scores:
            return {"accuracy": 0.0, "partial": 0.0, "reward": 0.0, "n_samples": 0.0}
        ns = {int(s.details.get("n", 1)) for s in scores}
        key = f"repair@{ns.pop()}" if len(ns) == 1 else "repair@n"
        attempts = [a for s in scores for a in s.details.get("attempts", [])]
        total = len(attempts) or 1
        return {
            "accuracy": sum((s.values.get("pass@1") or 0.0) for s in scores) / len(scores),
            key: sum((s.values.get("correct") or 0.0) for s in scores) / len(scores),
            # The harness averages the partial score over every attempt, not per record.
            "partial": sum(float(a["partial"]) for a in attempts) / total,
            "reward": sum(float(a["reward"]) for a in attempts) / total,
            "n_samples": float(len(scores)),
        }
