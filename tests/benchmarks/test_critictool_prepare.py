"""Batched similarity: prepare() embeds every pair scoring will ask for in one call, same scores."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolmend._schema import Sample
from toolmend.benchmarks import score_predictions
from toolmend.benchmarks.critictool import CriticToolBenchmark, load_critictool
from toolmend.benchmarks.critictool._scoring import CachedSimilarity, similarity_pairs

FIXTURES = Path(__file__).parent / "fixtures" / "critictool"


class FakeEmbedder:
    """An embedder-shaped fake: ``cosine`` one pair, ``cosine_many`` a batch; counts model calls."""

    def __init__(self) -> None:
        self.single = 0
        self.batches: list[int] = []

    @staticmethod
    def _value(a: str, b: str) -> float:
        if a == b:
            return 1.0
        common = len(set(a.lower().split()) & set(b.lower().split()))
        return common / (1 + max(len(a.split()), len(b.split()))) - 0.1  # may go below 0

    def cosine(self, a: str, b: str) -> float:
        self.single += 1
        return self._value(a, b)

    def cosine_many(self, pairs: list[tuple[str, str]]) -> list[float]:
        self.batches.append(len(pairs))
        return [self._value(a, b) for a, b in pairs]


def _perturbed(sample: Sample, bench: CriticToolBenchmark) -> str | list[str]:
    """A reply that keeps the gold tool but rewrites every string argument (so it is compared)."""
    gold = bench.gold(sample)
    replies = [gold] if isinstance(gold, str) else list(gold)
    out = []
    for text in replies:
        body = json.loads(text)
        if isinstance(body.get("args"), dict):
            body["args"] = {k: f"{v} please" if isinstance(v, str) else v for k, v in body["args"].items()}
        elif isinstance(body.get("args"), str):
            body["args"] = body["args"] + " thanks"
        out.append(json.dumps(body))
    return out[0] if isinstance(gold, str) else out


@pytest.fixture(scope="module")
def samples() -> list[Sample]:
    return load_critictool(FIXTURES, variants=["base", "evol"]) + load_critictool(FIXTURES, cot=True)


def test_prepare_batches_every_pair_and_changes_no_score(samples: list[Sample]) -> None:
    plain_fake, batched_fake = FakeEmbedder(), FakeEmbedder()
    plain = CriticToolBenchmark(similarity=plain_fake.cosine)
    batched = CriticToolBenchmark(similarity=batched_fake.cosine)
    outputs = [_perturbed(s, plain) for s in samples]

    want = [plain.score(s, o) for s, o in zip(samples, outputs, strict=True)]
    batched.prepare(samples, outputs)
    got = [batched.score(s, o) for s, o in zip(samples, outputs, strict=True)]

    assert [w.values for w in want] == [g.values for g in got]
    assert plain_fake.single > 10 and not plain_fake.batches
    assert batched_fake.single == 0 and batched_fake.batches == [plain_fake.single]
    assert any(0 < (v or 0) < 1 for g in got for v in g.values.values())  # similarity really used


def test_prepare_pairs_cover_improved_mode(samples: list[Sample]) -> None:
    fake = FakeEmbedder()
    bench = CriticToolBenchmark(similarity=fake.cosine)
    outputs = [_perturbed(s, bench) for s in samples]
    bench.prepare(samples, outputs)
    for s, o in zip(samples, outputs, strict=True):
        bench.score(s, o, "improved")
    assert fake.single == 0
    assert set(similarity_pairs(samples, outputs, "improved")) <= set(similarity_pairs(samples, outputs))


def test_prepare_without_predictions_does_nothing(samples: list[Sample]) -> None:
    fake = FakeEmbedder()
    CriticToolBenchmark(similarity=fake.cosine).prepare(samples)
    assert fake.single == 0 and not fake.batches


def test_warm_uses_plain_functions_pair_by_pair_and_clamps() -> None:
    calls: list[tuple[str, str]] = []

    def sim(a: str, b: str) -> float:
        calls.append((a, b))
        return -0.5 if a != b else 1.0

    cached = CachedSimilarity(sim)
    assert cached.warm([("a", "b"), (3, "3"), ("a", "b")]) == 2
    assert calls == [("a", "b"), ("3", "3")]
    assert cached("a", "b") == 0.0 and cached(3, "3") == 1.0 and len(calls) == 2


def test_score_predictions_prepares_once(samples: list[Sample]) -> None:
    fake = FakeEmbedder()
    bench = CriticToolBenchmark(similarity=fake.cosine)
    outputs = {s.id: _perturbed(s, bench) for s in samples[:-2]}
    report = score_predictions(bench, samples, outputs)
    assert report.scored == len(samples) - 2 and len(report.missing) == 2
    assert fake.single == 0 and len(fake.batches) == 1
