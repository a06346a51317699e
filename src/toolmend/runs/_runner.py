"""The generic, resumable sample runner that ``toolmend bench`` drives.

You give it samples, an async ``solve(sample) -> SampleRecord`` (prompt a model, parse, score)
and a run directory; it runs a bounded pool of workers over the samples — never more than
``max_samples`` tasks, however many samples there are — and appends each finished record to
``samples.jsonl`` at once::

    model = get_model("openai/gpt-4o-mini", max_connections=32)

    async def solve(sample: Sample) -> SampleRecord:
        record = SampleRecord(id=sample.id)
        out = await model.generate(bench.prompt(sample), tools=sample.tools, sample_id=sample.id)
        record.add_completion(out)
        record.scores = bench.score(sample, out.text).values
        return record

    run = RunDir.create("runs", Manifest(benchmark=bench.name, model=model.name))
    summary = await run_samples(samples, solve, run, max_samples=32)

A :class:`~toolmend.ModelError` out of ``solve`` (the backend gave up after its retries) is
recorded as the sample's infrastructure error; any other exception stops the run (it is a bug,
not a sample's fate), with every finished record already on disk. Running again on the same
directory resumes: finished ids are skipped, infrastructure errors too unless
``retry_errors=True``. On completion the file is compacted (one line per id) and
``results.json`` is written.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable, Iterable, Sized
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, computed_field

from toolmend._errors import ConfigError, ModelError
from toolmend._schema import Sample
from toolmend.models._base import Usage
from toolmend.runs._progress import Progress, make_progress
from toolmend.runs._record import SampleRecord
from toolmend.runs._store import RunDir

__all__ = ["Aggregate", "RunSummary", "Solve", "run_samples", "summarize"]

Solve = Callable[[Sample], Awaitable[SampleRecord]]
Aggregate = Callable[[list[SampleRecord]], dict[str, float]]
"""A benchmark's aggregation over the scored records (its published metrics)."""


class RunSummary(BaseModel):
    """What ``results.json`` holds."""

    model_config = ConfigDict(extra="forbid")

    n_samples: int
    n_scored: int
    n_errors: int
    metrics: dict[str, float] = Field(default_factory=dict)
    """The benchmark's aggregate, or the mean of each score over the scored samples where it applies."""
    usage: Usage = Field(default_factory=Usage)
    requests: int = 0
    """Completions obtained (server or cache)."""
    attempts: int = 0
    """HTTP requests really made, failed attempts included."""
    retries: int = 0
    cache_hits: int = 0
    new_samples: int = 0
    """Samples run in this session (the rest came from an earlier, interrupted session)."""
    wall_s: float = 0.0
    """Wall time of this session."""
    completed: bool = True

    @computed_field  # type: ignore[prop-decorator]
    @property
    def infra_error_rate(self) -> float:
        """Share of samples left unscored by infrastructure errors; report it beside every metric."""
        return self.n_errors / self.n_samples if self.n_samples else 0.0

    def infra_warning(self, threshold: float = 0.01) -> str | None:
        """A warning line when more than ``threshold`` of the samples are infrastructure errors
        (the metrics then cover a subset that the failures may have biased)."""
        if self.infra_error_rate <= threshold:
            return None
        return (
            f"warning: {self.n_errors} of {self.n_samples} samples ({self.infra_error_rate:.1%}) are "
            "infrastructure errors, excluded from the metrics; the metrics may be biased"
        )


def summarize(run: RunDir, aggregate: Aggregate | None = None) -> RunSummary:
    """Totals and metrics over ``run``'s records (one streaming pass unless ``aggregate`` needs them all)."""
    n = scored = errors = requests = attempts = retries = hits = 0
    usage = Usage()
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    kept: list[SampleRecord] = []
    for rec in run.iter_records():
        n += 1
        requests += rec.requests
        attempts += rec.attempts
        retries += rec.retries
        hits += rec.cache_hits
        usage = usage + rec.usage
        if rec.error is not None:
            errors += 1
            continue
        scored += 1
        if aggregate is not None:
            kept.append(rec)
        for key, value in rec.scores.items():
            if value is not None and not math.isnan(value):
                sums[key] = sums.get(key, 0.0) + value
                counts[key] = counts.get(key, 0) + 1
    metrics = aggregate(kept) if aggregate is not None else {k: sums[k] / counts[k] for k in sums}
    return RunSummary(
        n_samples=n,
        n_scored=scored,
        n_errors=errors,
        metrics=metrics,
        usage=usage,
        requests=requests,
        attempts=attempts,
        retries=retries,
        cache_hits=hits,
    )


async def _solve_one(sample: Sample, solve: Solve) -> SampleRecord:
    start = time.perf_counter()
    try:
        record = await solve(sample)
    except ModelError as exc:
        return SampleRecord(id=sample.id, latency_s=time.perf_counter() - start).fail(exc)
    if record.id != sample.id:
        raise ConfigError(f"solve() returned a record for {record.id!r} when given sample {sample.id!r}")
    return record


async def run_samples(
    samples: Iterable[Sample],
    solve: Solve,
    run: RunDir | str | Path,
    *,
    max_samples: int = 16,
    retry_errors: bool = False,
    progress: bool | Progress | None = None,
    score_key: str | None = None,
    aggregate: Aggregate | None = None,
    total: int | None = None,
) -> RunSummary:
    """Run ``solve`` over ``samples`` into ``run`` (resuming it), and return the summary.

    ``max_samples`` bounds the samples in progress (the model's own ``max_connections`` bounds its
    requests); ``progress``: see :func:`~toolmend.runs._progress.make_progress`; ``score_key``: the
    score shown as it runs (default: the first one seen); ``aggregate``: the benchmark's
    aggregation for ``results.json``; ``total``: the sample count when ``samples`` has no ``len``.
    """
    if max_samples < 1:
        raise ConfigError(f"max_samples must be at least 1, got {max_samples}")
    run = run if isinstance(run, RunDir) else RunDir(run)
    with run.lock():
        return await _run_locked(
            samples, solve, run, max_samples, retry_errors, progress, score_key, aggregate, total
        )


async def _run_locked(
    samples: Iterable[Sample],
    solve: Solve,
    run: RunDir,
    max_samples: int,
    retry_errors: bool,
    progress: bool | Progress | None,
    score_key: str | None,
    aggregate: Aggregate | None,
    total: int | None,
) -> RunSummary:
    # One writer per run directory (the caller holds its lock): the records read here, the
    # appends, the compaction and results.json all see the same file, so the summary agrees
    # with samples.jsonl by construction.
    started = time.perf_counter()
    skip: set[str] = set()
    for n, text in run.iter_lines(repair=True):
        # Every earlier record is read in full before anything runs: a malformed one stops the
        # resume here, naming its line, instead of after new samples were appended.
        record = run.parse_line(n, text)
        rid, ok = record.id, record.error is None
        # The last record of an id decides, as everywhere else.
        if ok or not retry_errors:
            skip.add(rid)
        else:
            skip.discard(rid)
    if total is None and isinstance(samples, Sized):
        total = len(samples)
    display = make_progress(progress, score_key=score_key)
    display.start(total, len(skip))
    writer = run.writer()
    seen: set[str] = set()
    source = iter(samples)
    new = 0

    def next_sample() -> Sample | None:
        for sample in source:
            if sample.id in seen:
                raise ConfigError(f"duplicate sample id {sample.id!r}: ids must be unique within a run")
            seen.add(sample.id)
            if sample.id not in skip:
                return sample
        return None

    async def worker() -> None:
        nonlocal new
        while (sample := next_sample()) is not None:
            record = await _solve_one(sample, solve)
            writer.append(record)
            new += 1
            display.update(record)

    workers = [asyncio.create_task(worker()) for _ in range(max_samples)]
    try:
        done, pending = await asyncio.wait(workers, return_when=asyncio.FIRST_EXCEPTION)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        for task in done:
            if task.exception() is not None:
                raise task.exception()  # type: ignore[misc]
    finally:
        for task in workers:
            task.cancel()
        writer.close()
        display.close()
    run.compact()
    summary = summarize(run, aggregate).model_copy(
        update={"new_samples": new, "wall_s": time.perf_counter() - started}
    )
    run.write_results(summary.model_dump(mode="json"))
    return summary
