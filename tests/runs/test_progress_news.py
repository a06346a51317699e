"""Progress a newcomer can trust: no ETA from the first samples, a line for long preparation, and
the resume command on Ctrl-C."""

from __future__ import annotations

import asyncio
import io
import logging
from pathlib import Path

import pytest

from toolmend.bench import arun_bench
from toolmend.runs.progress import ETA_AFTER, STATUS_LOGGER, PlainProgress, RunningStats
from toolmend.runs.record import SampleRecord


def test_no_eta_until_a_few_samples_are_done() -> None:
    stats = RunningStats()
    stats.total = 100
    for i in range(ETA_AFTER):
        assert stats.eta_s is None and "ETA" not in stats.line()
        stats.update(SampleRecord(id=str(i), scores={"acc": 1.0}))
    assert stats.eta_s is not None and "ETA" in stats.line()


def test_preparation_steps_show_while_a_run_is_displayed() -> None:
    stream = io.StringIO()
    progress = PlainProgress(stream=stream, every_s=3600)
    progress.start(total=3, done=0)
    logging.getLogger(STATUS_LOGGER).info("preparing: embedding %d tools", 42)
    progress.close()
    logging.getLogger(STATUS_LOGGER).info("after the run")
    text = stream.getvalue()
    assert "[toolmend] preparing: embedding 42 tools" in text and "after the run" not in text


async def test_interrupting_a_run_prints_the_resume_command(
    tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    task = asyncio.create_task(
        arun_bench(
            "bfcl",
            "scripted",
            data=data_dir / "bfcl",
            categories=["simple_python"],
            limit=50,
            model_options={"delay": 0.2},
            runs_dir=runs,
            progress=False,
            cache=False,
            max_connections=2,
        )  # fmt: skip
    )
    while not list(runs.glob("*/samples.jsonl")):
        await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    (run,) = list(runs.iterdir())
    assert f"interrupted; continue with: toolmend bench --resume {run}" in capsys.readouterr().err
