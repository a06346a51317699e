"""Ctrl-C on a real ``toolmend bench`` process: the hint it prints is a command that works and
finishes the run with the run's own settings; a Ctrl-C after the last sample still leaves the
report, and says so."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import typer

from toolmend._bench import BenchInterrupted
from toolmend.cli._bench import _after_interrupt
from toolmend.runs import RunDir

pytestmark = pytest.mark.slow  # long tests in few items: handed to a worker first (tests/conftest.py)

N = 30
# Slow enough to be stopped midway: 2 samples in flight, each reply 50 ms, several turns a task.
COMMON = ["world", "--model", "noisy/scripted", "-M", "noise=0.3", "-M", "delay=0.05", "--limit", str(N),
          "--max-connections", "2"]  # fmt: skip


@pytest.fixture(autouse=True)
def _plain(private_cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "1")


def _interruptible() -> None:
    # A shell starts background jobs with SIGINT ignored, and Python keeps an inherited "ignore":
    # the child must take Ctrl-C however the suite itself was started.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _toolmend(*args: str, cwd: Path) -> list[str]:
    return [sys.executable, "-m", "toolmend", *args]


def _wait_for_lines(runs: Path, at_least: int, proc: subprocess.Popen[bytes], within_s: float = 120) -> Path:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline and proc.poll() is None:
        found = list(runs.glob("*/samples.jsonl"))
        if found and found[0].read_bytes().count(b"\n") >= at_least:
            return found[0].parent
        time.sleep(0.01)
    raise AssertionError(f"the run never reached {at_least} samples")


def test_sigint_midway_prints_a_hint_that_finishes_the_run(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    proc = subprocess.Popen(
        _toolmend("bench", *COMMON, "--runs-dir", str(runs), "--no-report", cwd=tmp_path),
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "CI": "1"},
        preexec_fn=_interruptible,
    )  # fmt: skip
    run = _wait_for_lines(runs, 4, proc)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    stderr = err.decode()
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    before = (run / "samples.jsonl").read_bytes().count(b"\n")
    assert before < N, "must be stopped midway"
    assert RunDir(run).results() is None
    (hint,) = [
        line.split("continue with: ", 1)[1] for line in stderr.splitlines() if "continue with: " in line
    ]
    words = shlex.split(hint)
    assert words[0] == "toolmend"

    done = subprocess.run(
        _toolmend(*words[1:], "--json", "--no-report", cwd=tmp_path),
        cwd=tmp_path, capture_output=True, text=True, env={**os.environ, "CI": "1"}, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    resumed = json.loads(done.stdout)
    assert resumed["n_samples"] == N and resumed["new_samples"] == N - before
    assert resumed["settings"]["model_options"] == {"noise": 0.3, "delay": 0.05}

    whole = subprocess.run(
        _toolmend("bench", *COMMON, "--runs-dir", str(tmp_path / "whole"), "--json", "--no-report", cwd=tmp_path),
        cwd=tmp_path, capture_output=True, text=True, env={**os.environ, "CI": "1"}, timeout=300,
    )  # fmt: skip
    assert whole.returncode == 0, whole.stderr
    assert resumed["metrics"] == json.loads(whole.stdout)["metrics"]


def test_sigint_after_the_last_sample_still_writes_the_report(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    proc = subprocess.Popen(
        _toolmend("bench", *COMMON, "--runs-dir", str(runs), cwd=tmp_path),
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "CI": "1"},
        preexec_fn=_interruptible,
    )  # fmt: skip
    run = _wait_for_lines(runs, N, proc)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    stderr = err.decode()
    said = f"exit {proc.returncode}:\n{stderr}"
    assert "Traceback" not in stderr, said
    # The signal lands while the run closes or its report is written, or after the command
    # returned: at interpreter exit, where the signal's default action ends the process.
    assert (run / "report.md").exists() and (run / "report.html").exists(), said
    assert RunDir(run).results() is not None
    assert proc.returncode in (0, 130, -signal.SIGINT), said
    if proc.returncode == 130:
        assert "interrupted after the last sample" in stderr and "report" in stderr, said


def test_an_interrupt_while_closing_a_finished_run_finishes_it(tmp_path: Path, data_dir: Path) -> None:
    """Every sample recorded, no results yet (Ctrl-C while the run closed): finished and reported."""
    from toolmend._bench import run_bench

    result = run_bench(
        "bfcl", "scripted", data=data_dir / "bfcl", categories=["simple_python"], limit=4, runs_dir=tmp_path
    )
    (result.run_dir / "results.json").unlink()
    with pytest.raises(typer.Exit) as stop:
        _after_interrupt(BenchInterrupted(result.run_dir, "bfcl"), no_report=False)
    assert stop.value.exit_code == 130
    results = RunDir(result.run_dir).results()
    assert results is not None and results["n_samples"] == 4
    assert (result.run_dir / "report.md").exists()


def test_an_interrupt_while_the_status_lines_stop_still_writes_the_report(
    tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C once the run has returned, as the status lines stop (before the report's own guard
    against it): the run is complete, so it is reported all the same. Delivered there on purpose
    here; a real Ctrl-C lands there rarely, and did once in CI."""
    from typer.testing import CliRunner

    from toolmend.cli import _bench as bench

    def stop_then_ctrl_c() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(bench, "show_status", lambda emit: stop_then_ctrl_c)
    app = typer.Typer()
    app.callback()(lambda: None)
    bench.register(app)
    runs = tmp_path / "runs"
    args = ["bench", "bfcl", "-m", "scripted", "--data", str(data_dir / "bfcl"), "--categories", "simple_python",
            "--limit", "3", "--runs-dir", str(runs)]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 130, result.output
    (run,) = runs.iterdir()
    assert (run / "report.md").exists() and RunDir(run).results() is not None
    assert "interrupted after the last sample" in result.output


MAIN_JOB_SAMPLES = 491


def test_sigint_on_the_main_job_prints_a_hint_that_finishes_it(tmp_path: Path) -> None:
    """`toolmend bench critic` (the main job, its defaults), stopped once its first samples are
    on disk: status lines came before any sample, the hint resumes it, and the resumed run has the
    main job's sample count and its report."""
    runs = tmp_path / "runs"
    proc = subprocess.Popen(
        _toolmend("bench", "critic", "--runs-dir", str(runs), cwd=tmp_path),
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "CI": "1"},
        preexec_fn=_interruptible,
    )  # fmt: skip
    # A cold main job builds its suite and embeds its texts first (minutes on a loaded 2-core CI).
    run = _wait_for_lines(runs, 1, proc, within_s=600)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=300)
    stderr = err.decode()
    assert "Traceback" not in stderr
    # Phases are shown before the first sample: the suite, then the embedding model.
    assert "[toolmend] preparing: the critic suite (seed 0)" in stderr.splitlines()[0]
    before = (run / "samples.jsonl").read_bytes().count(b"\n")
    assert proc.returncode == 130, stderr
    assert before < MAIN_JOB_SAMPLES, "must be stopped midway"
    (hint,) = [
        line.split("continue with: ", 1)[1] for line in stderr.splitlines() if "continue with: " in line
    ]
    words = shlex.split(hint)
    assert words[:2] == ["toolmend", "bench"]
    done = subprocess.run(
        _toolmend(*words[1:], cwd=tmp_path),
        cwd=tmp_path, capture_output=True, text=True, env={**os.environ, "CI": "1"}, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (
        f"{MAIN_JOB_SAMPLES} of {MAIN_JOB_SAMPLES} samples scored ({MAIN_JOB_SAMPLES - before} new)"
        in done.stdout
    )
    # The checklist critic answers in this process: replies, not HTTP attempts.
    assert "replies computed here (no HTTP)" in done.stdout and "HTTP attempts" not in done.stdout
    assert RunDir(run).results() is not None and (run / "report.html").exists()
