"""bench's score batcher: samples finishing together are prepared together, scores unchanged."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toolmend._bench import _make_solve
from toolmend._schema import Message, Sample
from toolmend.benchmarks import Benchmark, Mode, Prediction, SampleScore
from toolmend.models import Completion, GenerateConfig, Model
from toolmend.models._base import GenerateRequest


class EchoBench(Benchmark):
    name = "echo"

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def load(self, path: str | Path | None = None, **options: Any) -> list[Sample]:
        return []

    def prompt(self, sample: Sample) -> list[Message]:
        return [Message(role="user", content=sample.id)]

    def prepare(self, samples: Sequence[Sample], predictions: Sequence[Prediction] | None = None) -> None:
        self.batches.append([s.id for s in samples])

    def score(self, sample: Sample, prediction: Prediction, mode: Mode = "compat") -> SampleScore:
        return SampleScore(id=sample.id, values={"echo": float(prediction == f"re:{sample.id}")})

    def aggregate(self, scores: Sequence[SampleScore], mode: Mode = "compat") -> dict[str, float]:
        return {}


class EchoModel(Model):
    """Answers ``re:<id>``; samples whose id starts with ``slow`` take ``slow`` seconds."""

    def __init__(self, slow: float = 0.0) -> None:
        super().__init__("echo", max_connections=100)
        self.slow = slow

    async def _generate(self, request: GenerateRequest) -> Completion:
        text = request.messages[-1].content
        if text.startswith("slow"):
            await asyncio.sleep(self.slow)
        return Completion(text=f"re:{text}")


def _samples(*ids: str) -> list[Sample]:
    return [Sample(id=i, messages=[Message(role="user", content=i)]) for i in ids]


async def _run(bench: EchoBench, model: Model, samples: list[Sample]) -> list[float | None]:
    solve = _make_solve(bench, model, "compat", GenerateConfig(), False, [], "none")
    records = await asyncio.gather(*(solve(s) for s in samples))
    return [r.scores["echo"] for r in records]


async def test_samples_finishing_together_are_prepared_in_one_batch() -> None:
    bench = EchoBench()
    samples = _samples(*(f"s{i}" for i in range(12)))
    assert await _run(bench, EchoModel(), samples) == [1.0] * 12
    assert len(bench.batches) == 1 and sorted(bench.batches[0]) == sorted(s.id for s in samples)


async def test_a_slow_sample_does_not_hold_back_the_others() -> None:
    bench = EchoBench()
    samples = _samples("a", "b", "slow")
    async with asyncio.timeout(5):
        assert await _run(bench, EchoModel(slow=1.0), samples) == [1.0] * 3
    # The fast ones are flushed after max_wait, long before the slow one answers.
    assert [sorted(b) for b in bench.batches] == [["a", "b"], ["slow"]]


async def test_benchmarks_without_prepare_score_at_once() -> None:
    class Plain(EchoBench):
        prepare = Benchmark.prepare

    bench = Plain()
    assert await _run(bench, EchoModel(), _samples("x", "y")) == [1.0, 1.0]
    assert bench.batches == []


def test_in_process_models_keep_more_samples_in_flight() -> None:
    from toolmend._bench import _samples_in_flight
    from toolmend.benchmarks.critictool._checklist import ChecklistCritic

    assert _samples_in_flight(EchoModel(), 16) == 16
    assert _samples_in_flight(EchoModel(), 0) == 1
    assert _samples_in_flight(ChecklistCritic(), 16) == 256
    assert _samples_in_flight(ChecklistCritic(), 1000) == 1000


async def test_long_replies_are_scored_off_the_event_loop() -> None:
    import threading

    threads: dict[str, bool] = {}

    class Plain(EchoBench):
        prepare = Benchmark.prepare  # type: ignore[assignment]

        def score(self, sample: Sample, prediction: Prediction, mode: Mode = "compat") -> SampleScore:
            threads[sample.id] = threading.current_thread() is threading.main_thread()
            return super().score(sample, prediction, mode)

    long_id = "x" * 5000  # its reply "re:xxxx…" is long: a degenerate reply must not stall the loop
    assert await _run(Plain(), EchoModel(), _samples("short", long_id)) == [1.0, 1.0]
    assert threads == {"short": True, long_id: False}
