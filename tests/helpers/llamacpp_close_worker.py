"""A llama.cpp run that ends with an exception while its replies are being written:
``python llamacpp_close_worker.py <run_dir>``.

Four samples of SmolLM2 (one llama.cpp thread) run through :func:`~toolmend.runs.run_samples`
inside ``async with model``, as ``toolmend bench`` runs them; one sample raises a
:class:`~toolmend.ConfigError` once another one's reply is being written, which ends the run and
closes the model with requests in flight. Prints what it observed after the close, one
``key: value`` a line; a native crash ends the process with a signal instead.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from toolmend._errors import ConfigError
from toolmend._schema import Message, Sample
from toolmend.models import GenerateConfig, get_model
from toolmend.runs import Manifest, RunDir, SampleRecord, run_samples

STORY = "Tell me a long story about a lighthouse keeper and a storm."


async def writing(model: Any) -> Any:
    """The model's ``Llama`` once a reply is being written: its token count changed after a
    prompt was read (prompt read, then one more token)."""
    seen: list[int] = []
    while len(seen) < 2:
        llm = model._llm
        n = llm.n_tokens if llm is not None else 0
        if n and (not seen or seen[-1] != n):
            seen.append(n)
        await asyncio.sleep(0.005)
    return model._llm


async def main(run_dir: str) -> None:
    model = get_model(
        "local/smollm2-135m", engine="llama.cpp", cache=False, max_new_tokens=256, n_threads=1, n_ctx=1024
    )
    samples = [Sample(id=f"s{i}", messages=[Message(role="user", content=STORY)]) for i in range(4)]

    async def solve(sample: Sample) -> SampleRecord:
        if sample.id == "s3":
            await writing(model)
            raise ConfigError("a sample that ends the run")
        out = await model.generate(sample.messages, config=GenerateConfig(), sample_id=sample.id)
        record = SampleRecord(id=sample.id)
        record.add_completion(out)
        return record

    rd = RunDir(run_dir)
    rd.path.mkdir(parents=True, exist_ok=True)
    rd.write_manifest(Manifest(benchmark="close-demo", model=model.name, config={}))
    try:
        async with model:
            await run_samples(samples, solve, rd, max_samples=4, progress=False)
    except ConfigError as exc:
        print(f"ended by: {exc}", flush=True)
    idle = model._lock.acquire(blocking=False)  # type: ignore[attr-defined]
    if idle:
        model._lock.release()  # type: ignore[attr-defined]
    print(f"writing after the close: {not idle}", flush=True)
    # Requests that were queued when the model closed must not load it again.
    await asyncio.sleep(0.5)
    print(f"loaded after the close: {model._llm is not None}", flush=True)  # type: ignore[attr-defined]


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
    print("exited", flush=True)
