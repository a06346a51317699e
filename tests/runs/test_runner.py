"""The runner end to end against a real loopback server that misbehaves on some samples."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from fake_openai_server import Reply

from toolmend._errors import ConfigError
from toolmend._schema import Message, Sample
from toolmend.models import Model, OpenAIModel, ResponseCache, RetryPolicy
from toolmend.runs import Manifest, PlainProgress, RunDir, SampleRecord, load_run, run_samples

FAST = RetryPolicy(max_retries=2, initial_wait=0.01, max_wait=0.05, jitter=0.0)


def samples(n: int) -> list[Sample]:
    return [Sample(id=f"q{i}", messages=[Message(role="user", content=f"q{i} two words")]) for i in range(n)]


def solver(model: Model) -> Any:
    async def solve(sample: Sample) -> SampleRecord:
        record = SampleRecord(id=sample.id)
        out = await model.generate(sample.messages, sample_id=sample.id)
        record.add_completion(out)
        record.scores = {"exact": 1.0 if out.text.endswith(sample.messages[0].content) else 0.0}
        return record

    return solve


async def test_every_sample_is_scored_or_an_infra_error_and_usage_is_not_double_counted(
    openai_server: Any, tmp_path: Path
) -> None:
    for i in range(0, 20, 5):  # q0, q5, q10, q15: a 429 and a 500, then fine
        openai_server.fail_next(f"q{i} ", Reply(status=429, headers={"Retry-After": "0"}), Reply(status=500))
    openai_server.fail_next("q7 ", *[Reply(status=503)] * 3)  # never recovers within 2 retries
    openai_server.fail_next("q9 ", Reply(drop=True), Reply(drop=True), Reply(drop=True))
    openai_server.fail_next("q11 ", Reply(status=400))  # not retryable: recorded at once
    model = OpenAIModel("m", base_url=openai_server.base_url, retry=FAST, max_connections=4)
    run = RunDir.create(tmp_path, Manifest(benchmark="echo", model=model.name))
    stream = io.StringIO()
    summary = await run_samples(
        samples(20), solver(model), run, max_samples=6, progress=PlainProgress(stream)
    )
    await model.aclose()

    records = {r.id: r for r in load_run(run.path).records}
    assert len(records) == 20
    errors = {i for i, r in records.items() if not r.ok}
    assert errors == {"q7", "q9", "q11"}
    assert (
        records["q7"].error is not None
        and records["q7"].error.retryable
        and records["q7"].error.status == 503
    )
    assert records["q11"].error is not None and not records["q11"].error.retryable
    assert all(r.scores == {"exact": 1.0} for r in records.values() if r.ok)
    # Retries of requests that never succeeded count too: they were real requests.
    retried = {"q0": 2, "q5": 2, "q10": 2, "q15": 2, "q7": 2, "q9": 2}
    assert {i: r.retries for i, r in records.items() if r.retries} == retried
    # 17 answered: each prompt is 3 words and each answer "m: qN two words" is 4 words, once.
    assert summary.usage.input_tokens == 17 * 3 and summary.usage.output_tokens == 17 * 4
    assert summary.n_samples == 20 and summary.n_scored == 17 and summary.n_errors == 3
    assert summary.requests == 17 and summary.metrics == {"exact": 1.0}
    assert openai_server.requests == 17 + 4 * 2 + 3 + 3 + 1 == summary.attempts
    assert "20/20 samples" in stream.getvalue() and "errors=3" in stream.getvalue()
    assert json.loads((run.path / "results.json").read_text())["n_errors"] == 3


async def test_retry_errors_on_resume_reruns_only_the_infra_errors(
    openai_server: Any, tmp_path: Path
) -> None:
    openai_server.fail_next("q3 ", *[Reply(status=500)] * 3)
    model = OpenAIModel("m", base_url=openai_server.base_url, retry=FAST, cache=None)
    await run_samples(samples(6), solver(model), tmp_path, progress=False)
    assert openai_server.requests == 5 + 3
    summary = await run_samples(samples(6), solver(model), tmp_path, progress=False)
    assert summary.new_samples == 0 and summary.n_errors == 1  # plain resume keeps the error
    summary = await run_samples(samples(6), solver(model), tmp_path, progress=False, retry_errors=True)
    await model.aclose()
    assert summary.new_samples == 1 and summary.n_errors == 0 and summary.n_samples == 6
    assert openai_server.requests == 5 + 3 + 1
    lines = (tmp_path / "samples.jsonl").read_text().splitlines()
    assert len(lines) == 6  # compacted: the error line was replaced


async def test_second_run_is_served_by_the_cache_and_models_never_mix(
    openai_server: Any, tmp_path: Path
) -> None:
    cache = ResponseCache(tmp_path / "cache")
    first = OpenAIModel("model-a", base_url=openai_server.base_url, cache=cache)
    s1 = await run_samples(samples(10), solver(first), tmp_path / "r1", progress=False)
    assert openai_server.requests == 10 and s1.cache_hits == 0
    s2 = await run_samples(samples(10), solver(first), tmp_path / "r2", progress=False)
    assert openai_server.requests == 10 and s2.cache_hits == 10
    assert s2.usage.total_tokens == 0 and s1.usage.total_tokens > 0  # cached answers cost nothing
    # records are written as samples finish, so compare them by sample, not by line
    assert {r.id: r.outputs for r in load_run(tmp_path / "r1").records} == {
        r.id: r.outputs for r in load_run(tmp_path / "r2").records
    }
    other = OpenAIModel("model-b", base_url=openai_server.base_url, cache=cache)
    await run_samples(samples(10), solver(other), tmp_path / "r3", progress=False)
    assert openai_server.requests == 20
    assert all(r.outputs[0].startswith("model-b: ") for r in load_run(tmp_path / "r3").records)
    await first.aclose()
    await other.aclose()


async def test_worker_pool_never_creates_a_task_per_sample(tmp_path: Path) -> None:
    import asyncio

    from toolmend.models import ScriptedModel

    peak = 0

    async def solve(sample: Sample) -> SampleRecord:
        nonlocal peak
        peak = max(peak, len(asyncio.all_tasks()))
        await asyncio.sleep(0)
        return SampleRecord(id=sample.id, scores={"s": 1.0})

    def lazy() -> Any:
        for i in range(500):
            yield Sample(id=str(i))

    summary = await run_samples(lazy(), solve, tmp_path, max_samples=8, progress=False, total=500)
    assert summary.n_samples == 500
    assert peak <= 8 + 2  # the workers, the test's own task and the writer never more
    assert ScriptedModel  # imported lazily above to keep module import light


async def test_a_bug_in_solve_stops_the_run_with_finished_records_kept(tmp_path: Path) -> None:
    async def solve(sample: Sample) -> SampleRecord:
        if sample.id == "5":
            raise KeyError("bug")
        return SampleRecord(id=sample.id)

    with pytest.raises(KeyError):
        await run_samples(
            [Sample(id=str(i)) for i in range(10)], solve, tmp_path, max_samples=1, progress=False
        )
    assert [r.id for r in RunDir(tmp_path).read_records()] == ["0", "1", "2", "3", "4"]
    assert RunDir(tmp_path).results() is None


async def test_duplicate_ids_and_bad_settings_are_refused(tmp_path: Path) -> None:
    async def solve(sample: Sample) -> SampleRecord:
        return SampleRecord(id=sample.id)

    with pytest.raises(ConfigError, match="duplicate"):
        await run_samples([Sample(id="a"), Sample(id="a")], solve, tmp_path, progress=False)
    with pytest.raises(ConfigError, match="max_samples"):
        await run_samples([], solve, tmp_path, max_samples=0, progress=False)


async def test_aggregate_decides_the_metrics(tmp_path: Path) -> None:
    async def solve(sample: Sample) -> SampleRecord:
        return SampleRecord(id=sample.id, scores={"x": float(sample.id)})

    summary = await run_samples(
        [Sample(id=str(i)) for i in range(4)],
        solve,
        tmp_path,
        progress=False,
        aggregate=lambda recs: {"max_x": max(r.scores["x"] or 0.0 for r in recs)},
    )
    assert summary.metrics == {"max_x": 3.0}
