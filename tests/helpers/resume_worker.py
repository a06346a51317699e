"""A small run for the resume tests: ``python resume_worker.py <run_dir> <n> <delay>``.

Each sample is answered by the scripted backend after ``delay`` seconds and scored by a rule that
depends only on the sample, so an interrupted-then-resumed run must equal an uninterrupted one.
"""

from __future__ import annotations

import asyncio
import sys

from toolmend._schema import Message, Sample
from toolmend.models import ScriptedModel
from toolmend.runs import Manifest, RunDir, SampleRecord, run_samples


def build_samples(n: int) -> list[Sample]:
    return [Sample(id=f"s{i}", messages=[Message(role="user", content=f"question {i}")]) for i in range(n)]


def make_solve(delay: float):  # type: ignore[no-untyped-def]
    model = ScriptedModel(lambda messages: f"answer to {messages[-1].content}", delay=delay)

    async def solve(sample: Sample) -> SampleRecord:
        record = SampleRecord(id=sample.id)
        out = await model.generate(sample.messages, sample_id=sample.id)
        record.add_completion(out)
        number = int(sample.id[1:])
        record.scores = {"acc": 1.0 if number % 3 == 0 else 0.0, "long": None if number % 2 else 1.0}
        return record

    return solve


async def run(run_dir: str, n: int, delay: float, *, retry_errors: bool = False) -> None:
    rd = RunDir(run_dir)
    if not (rd.path / "manifest.json").exists():
        rd.path.mkdir(parents=True, exist_ok=True)
        rd.write_manifest(Manifest(benchmark="resume-demo", model="scripted", config={"n": n}))
    await run_samples(
        build_samples(n), make_solve(delay), rd, max_samples=4, progress=False, retry_errors=retry_errors
    )


if __name__ == "__main__":
    asyncio.run(run(sys.argv[1], int(sys.argv[2]), float(sys.argv[3])))
