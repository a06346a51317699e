"""`toolmend bench` end to end: replay vs `toolmend score`, a real HTTP server, kill -9 + resume,
--retry-errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fake_openai_server as fake
import pytest
import typer
from typer.testing import CliRunner

from toolmend._schema import Sample
from toolmend.benchmarks import BENCHMARKS, load_builtin_benchmarks
from toolmend.benchmarks.bfcl._decode import render_python
from toolmend.cli import _bench as bench
from toolmend.cli import _score as score
from toolmend.runs import RunDir, load_run

# A root app with both commands, as the real CLI wires them (a callback keeps subcommand names).
_APP_SOURCE = """
import typer
from toolmend.cli import _bench as bench, _score as score
app = typer.Typer()
@app.callback()
def _root() -> None:
    pass
bench.register(app)
score.register(app)
app()
"""


def _app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        pass

    bench.register(app)
    score.register(app)
    return app


@pytest.fixture(autouse=True)
def _private_cache(private_cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "1")


@pytest.fixture(scope="module")
def simple(data_dir: Path) -> list[Sample]:
    load_builtin_benchmarks()
    return BENCHMARKS.get("bfcl")().load(data_dir / "bfcl", categories=["simple_python"])


def _invoke(*args: str) -> Any:
    result = CliRunner().invoke(_app(), [str(a) for a in args])
    return result


def _only_run(runs: Path) -> Path:
    (run,) = [p for p in runs.iterdir() if p.is_dir()]
    return run


def test_bench_with_replay_equals_score_on_the_same_outputs(
    tmp_path: Path, data_dir: Path, simple: list[Sample]
) -> None:
    preds = tmp_path / "pred.jsonl"
    with preds.open("w") as f:
        for i, s in enumerate(simple[:30]):
            out = render_python(s.target) if i % 4 else "[calculate(x=1)]"
            f.write(json.dumps({"id": s.id, "output": out}) + "\n")
    runs = tmp_path / "runs"
    res = _invoke(
        "bench", "bfcl", "--model", f"replay/{preds}", "--data", data_dir / "bfcl",
        "--categories", "simple_python", "--limit", "30", "--runs-dir", runs, "--json",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    payload = json.loads(res.stdout)
    scored = _invoke(
        "score", "bfcl", "-p", preds, "--data", data_dir / "bfcl",
        "-o", 'categories=["simple_python"]', "--json",
    )  # fmt: skip
    assert scored.exit_code == 0, scored.output
    want = json.loads(scored.stdout)["metrics"]
    run = _only_run(runs)
    results = RunDir(run).results()
    assert results is not None and results["metrics"] == want == payload["metrics"]
    assert want["overall_sample_weighted"] == pytest.approx(22 / 30)
    assert (run / "report.md").exists() and (run / "report.html").exists()


@pytest.fixture
def gold_server(simple: list[Sample]) -> Iterator[Any]:
    gold = {s.messages[-1].content: render_python(s.target) for s in simple}
    server = fake.FakeOpenAIServer(lambda body: fake.Reply(text=gold.get(fake.last_user_text(body), "no")))
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_bench_against_an_openai_compatible_server_with_cache(
    tmp_path: Path, data_dir: Path, gold_server: Any
) -> None:
    args = [
        "bench", "bfcl", "--model", "openai/fake-model", "--base-url", gold_server.base_url,
        "--data", data_dir / "bfcl", "--categories", "simple_python", "--limit", "12",
        "--max-connections", "4", "--cache-dir", tmp_path / "cache", "--runs-dir", tmp_path / "runs", "--json",
    ]  # fmt: skip
    first = _invoke(*args)
    assert first.exit_code == 0, first.output
    out = json.loads(first.stdout)
    assert out["metrics"]["overall_sample_weighted"] == 1.0
    assert out["requests"] == 12 and out["cache_hits"] == 0
    assert gold_server.requests == 12 and gold_server.peak_in_flight <= 4
    assert gold_server.bodies[0]["model"] == "fake-model"
    assert "tools" not in gold_server.bodies[0]  # prompt mode: the benchmark's prompt has them
    second = _invoke(*args)
    assert json.loads(second.stdout)["cache_hits"] == 12 and gold_server.requests == 12
    third = _invoke(*args[:-1], "--no-cache", "--tool-mode", "native", "--json")
    assert third.exit_code == 0, third.output
    assert gold_server.requests == 24 and "tools" in gold_server.bodies[-1]


def test_infra_errors_are_reported_then_retried(
    tmp_path: Path, data_dir: Path, gold_server: Any, simple: list[Sample]
) -> None:
    for s in simple[2:4]:
        gold_server.fail_next(s.messages[-1].content, fake.Reply(status=500), fake.Reply(status=500))
    runs = tmp_path / "runs"
    res = _invoke(
        "bench", "bfcl", "--model", "openai/fake-model", "--base-url", gold_server.base_url,
        "--data", data_dir / "bfcl", "--categories", "simple_python", "--limit", "10",
        "--max-retries", "0", "--no-cache", "--runs-dir", runs,
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    run = _only_run(runs)
    assert (
        f"2 samples failed with infrastructure errors; rerun with --resume {run} --retry-errors" in res.output
    )
    results = RunDir(run).results()
    assert results is not None and results["n_errors"] == 2
    assert results["metrics"]["overall_sample_weighted"] == 1.0
    failed = [r for r in load_run(run).records if r.error is not None]
    assert {r.id for r in failed} == {s.id for s in simple[2:4]} and failed[0].error.status == 500  # type: ignore[union-attr]
    # The second queued 500 is still waiting: one more resume without --retry-errors changes nothing.
    res = _invoke(
        "bench", "bfcl", "--resume", run, "--base-url", gold_server.base_url, "--no-cache", "--json"
    )
    assert json.loads(res.stdout)["new_samples"] == 0
    # One retry lets each failed sample get past its remaining 500.
    res = _invoke(
        "bench", "bfcl", "--resume", run, "--retry-errors", "--base-url", gold_server.base_url,
        "--max-retries", "1", "--no-cache", "--json",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["n_errors"] == 0 and out["new_samples"] == 2 and out["n_samples"] == 10
    lines = (run / "samples.jsonl").read_text().splitlines()
    assert sorted(json.loads(x)["id"] for x in lines) == sorted(s.id for s in simple[:10])


def test_retry_errors_needs_resume() -> None:
    res = _invoke("bench", "bfcl", "--model", "scripted", "--retry-errors")
    assert res.exit_code == 2 and "--retry-errors needs --resume" in res.output


def _comparable(run: Path) -> list[dict[str, Any]]:
    recs = sorted(load_run(run).records, key=lambda r: r.id)
    return [r.model_dump(exclude={"latency_s"}) for r in recs]


def test_sigkill_midway_then_resume_equals_an_uninterrupted_run(tmp_path: Path, data_dir: Path) -> None:
    n = 48
    common = [
        "--model", "scripted", "-M", "delay=0.05", "--data", str(data_dir / "bfcl"),
        "--categories", "simple_python", "--limit", str(n), "--max-connections", "4", "--no-report",
    ]  # fmt: skip
    killed_root = tmp_path / "killed"
    env = {**os.environ, "CI": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-c", _APP_SOURCE, "bench", "bfcl", *common, "--runs-dir", str(killed_root)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 90
    samples: Path | None = None
    while time.monotonic() < deadline:
        found = list(killed_root.glob("*/samples.jsonl"))
        if found and found[0].read_bytes().count(b"\n") >= 8:
            samples = found[0]
            break
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert samples is not None, "the run never got going"
    before = samples.read_bytes().count(b"\n")
    assert 8 <= before < n, "must be killed midway"
    run = samples.parent
    assert RunDir(run).results() is None
    res = _invoke("bench", "bfcl", "--resume", run, "--json")
    assert res.exit_code == 0, res.output
    resumed = json.loads(res.stdout)
    assert resumed["new_samples"] == n - before and resumed["n_samples"] == n
    ids = [json.loads(x)["id"] for x in samples.read_text().splitlines()]
    assert len(ids) == len(set(ids)) == n
    whole_root = tmp_path / "whole"
    res = _invoke("bench", "bfcl", *common, "--runs-dir", whole_root, "--json")
    whole = json.loads(res.stdout)
    assert resumed["metrics"] == whole["metrics"]
    assert resumed["metrics"]["overall_sample_weighted"] == 1.0
    assert _comparable(run) == _comparable(_only_run(whole_root))
