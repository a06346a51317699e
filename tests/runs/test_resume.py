"""Resume after kill -9: every id exactly once, and the same results as an uninterrupted run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from resume_worker import run

from toolmend.runs import RunDir, load_run

WORKER = Path(__file__).resolve().parents[1] / "helpers" / "resume_worker.py"
N = 60


def _comparable(path: Path) -> list[dict[str, object]]:
    return [r.model_dump(exclude={"latency_s"}) for r in sorted(load_run(path).records, key=lambda r: r.id)]


async def test_sigkill_midway_then_resume_matches_an_uninterrupted_run(tmp_path: Path) -> None:
    killed = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, str(WORKER), str(killed), str(N), "0.05"])
    samples = killed / "samples.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if samples.exists() and samples.read_bytes().count(b"\n") >= 12:
            break
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = samples.read_bytes().count(b"\n")
    assert 12 <= before < N, "the worker must be killed midway"
    # kill -9 in the middle of a write leaves a torn line; simulate one on top.
    with samples.open("ab") as f:
        f.write(b'{"id": "s999", "outputs": ["tor')

    await run(str(killed), N, 0.0)

    lines = [json.loads(x) for x in samples.read_text().splitlines()]
    ids = [x["id"] for x in lines]
    assert sorted(ids) == sorted(f"s{i}" for i in range(N))  # each exactly once, torn line gone
    whole = tmp_path / "whole"
    await run(str(whole), N, 0.0)
    assert _comparable(killed) == _comparable(whole)
    got, want = RunDir(killed).results(), RunDir(whole).results()
    assert got is not None and want is not None
    assert got["metrics"] == want["metrics"] == {"acc": 20 / 60, "long": 1.0}
    assert got["n_samples"] == want["n_samples"] == N
    assert got["new_samples"] == N - before and want["new_samples"] == N


async def test_resume_of_a_finished_run_does_nothing(tmp_path: Path) -> None:
    await run(str(tmp_path), 8, 0.0)
    first = (tmp_path / "samples.jsonl").read_text()
    await run(str(tmp_path), 8, 0.0)
    assert (tmp_path / "samples.jsonl").read_text() == first
    results = RunDir(tmp_path).results()
    assert results is not None and results["new_samples"] == 0 and results["n_samples"] == 8
