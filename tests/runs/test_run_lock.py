"""One writer per run directory (issue 16, item 8): a second process exits 2 naming the holder,
and results.json agrees with samples.jsonl."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from typer.testing import CliRunner

from toolmend._bench import run_bench
from toolmend.cli._app import app

WORKER = Path(__file__).resolve().parents[1] / "helpers" / "resume_worker.py"
HOLD = (
    "import sys, time\nfrom toolmend.runs import RunDir\n"
    "with RunDir(sys.argv[1]).lock():\n    print('held', flush=True)\n    time.sleep(60)\n"
)


def _wait_for_pid(lock: Path, pid: int) -> None:
    for _ in range(600):
        if lock.exists() and lock.read_text().strip() == str(pid):
            return
        time.sleep(0.02)
    raise AssertionError("the first process never took the lock")


def test_two_concurrent_resumes_lose_nothing(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    first = subprocess.Popen([sys.executable, str(WORKER), str(run_dir), "400", "0.05"])
    try:
        _wait_for_pid(run_dir / ".lock", first.pid)
        second = subprocess.run(
            [sys.executable, str(WORKER), str(run_dir), "400", "0.05"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert second.returncode != 0
        assert f"is in use by another toolmend process (pid {first.pid})" in second.stderr
        assert first.wait(timeout=120) == 0
    finally:
        first.kill()
    lines = [json.loads(x) for x in (run_dir / "samples.jsonl").read_text().splitlines()]
    results = json.loads((run_dir / "results.json").read_text())
    assert len(lines) == len({r["id"] for r in lines}) == results["n_samples"] == 400


def test_bench_on_a_run_in_use_exits_2_naming_the_holder(tmp_path: Path) -> None:
    first = run_bench(
        "reflection-bench", "scripted", limit=2, runs_dir=tmp_path, progress=False,
        cache_dir=tmp_path / "cache",
    )  # fmt: skip
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(first.run_dir)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        result = CliRunner().invoke(app, ["bench", "reflection-bench", "--resume", str(first.run_dir)])
    finally:
        holder.kill()
        holder.wait()
    assert result.exit_code == 2, result.output
    assert f"pid {holder.pid}" in result.output and "Traceback" not in result.output
    # Once the holder is gone (a killed holder releases the kernel lock), resuming works.
    again = run_bench("reflection-bench", resume=first.run_dir, progress=False)
    assert again.summary.n_samples == 2
