"""Measurement-integrity audit: kill -9 and resume, injected faults, concurrent resumes.

    .venv/bin/python benchmarks/integrity_audit.py [--n 200] [--kills 10]

Runs ``toolmend bench bfcl`` (simple_python) against a local OpenAI-compatible server
(tests/helpers/fake_openai_server.py, in this process) that answers the gold call for two
questions in three and a wrong call otherwise, so the expected accuracy is known. Reports:

- kill/resume: ``--kills`` SIGKILLs at random moments, each followed by ``--resume``; duplicate
  and lost records, and whether the metrics equal those of an uninterrupted run;
- faults: every sample gets one injected fault (429 + Retry-After, a passing 500, a dropped
  connection, a 200 with an error object, a 200 with no choices, a 503 that never passes, a
  malformed ``<tool_call>`` that a tool-parsing server answers with the same 500 every time);
  samples accounted for, infrastructure errors, scored model failures, and HTTP attempts
  counted by toolmend against requests seen by the server;
- concurrent resume: a second ``--resume`` on a run in progress; its exit code, and whether
  ``results.json`` agrees with ``samples.jsonl``.

Figures are a simulation with a fake server, not a real model's results.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "helpers"))  # the test suite's helpers, as pytest sees them
import fake_openai_server as fake  # noqa: E402

CLI = [sys.executable, "-c", "from toolmend.cli._app import main; main()"]


def _answers(n: int) -> dict[str, str]:
    from toolmend._shared import shared_dir
    from toolmend.benchmarks import BENCHMARKS, load_builtin_benchmarks
    from toolmend.benchmarks.bfcl._decode import render_python

    load_builtin_benchmarks()
    samples = BENCHMARKS.get("bfcl")().load(shared_dir() / "data" / "bfcl", categories=["simple_python"])[:n]
    return {
        s.messages[-1].content: render_python(s.target) if i % 3 else "[wrong_fn(a=1)]"
        for i, s in enumerate(samples)
    }


def _handler(answers: dict[str, str]) -> Any:
    return lambda body: fake.Reply(text=answers.get(fake.last_user_text(body), "[]"))


def _bench(runs: Path, base_url: str, n: int, *extra: str) -> list[str]:
    return [*CLI, "bench", "bfcl", "-m", "openai/audit", "--base-url", base_url, "--categories", "simple_python",
            "--limit", str(n), "--runs-dir", str(runs), "--no-cache", "--no-report", "--json",
            "--max-connections", "8", *extra]  # fmt: skip


def _records(run: Path) -> tuple[int, int]:
    ids = [json.loads(x)["id"] for x in (run / "samples.jsonl").read_text().splitlines() if x.strip()]
    return len(ids), len(set(ids))


def _wait_for_progress(runs: Path, proc: subprocess.Popen[Any]) -> None:
    # Kill only once the process has started writing records (its start-up is seconds of imports).
    start = _lines(runs)
    while proc.poll() is None and _lines(runs) <= start:
        time.sleep(0.02)


def _lines(runs: Path) -> int:
    files = list(runs.glob("*/samples.jsonl")) if runs.exists() else []
    return files[0].read_bytes().count(b"\n") if files else -1


def kill_resume(n: int, kills: int, tmp: Path) -> dict[str, Any]:
    server = fake.FakeOpenAIServer(_handler(_answers(n)), latency=0.1).start()
    try:
        ref = json.loads(
            subprocess.run(
                _bench(tmp / "ref", server.base_url, n), capture_output=True, text=True, check=True
            ).stdout
        )
        runs = tmp / "killed"
        proc = subprocess.Popen(
            _bench(runs, server.base_url, n), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        rng = random.Random(0)
        done = 0
        for _ in range(kills):
            _wait_for_progress(runs, proc)
            time.sleep(rng.uniform(0.0, 0.4))
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                done += 1
            proc.wait()
            run = next(runs.iterdir())
            proc = subprocess.Popen(
                _bench(runs, server.base_url, n, "--resume", str(run)),
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        out, _ = proc.communicate()
        final = json.loads(out)
    finally:
        server.stop()
    lines, unique = _records(next(runs.iterdir()))
    return {"kills": done, "records": lines, "duplicates": lines - unique, "lost": n - unique,
            "metrics_equal": final["metrics"] == ref["metrics"], "accuracy": final["metrics"]["overall_sample_weighted"]}  # fmt: skip


def faults(n: int, tmp: Path) -> dict[str, Any]:
    answers = _answers(n)
    server = fake.FakeOpenAIServer(_handler(answers), parse_tool_calls=True).start()
    R = fake.Reply
    kinds = {
        "429+Retry-After": [R(status=429, headers={"Retry-After": "0.01"})],
        "500 once": [R(status=500, headers={"Retry-After": "0"})],
        "dropped connection": [R(drop=True)],
        "200 + error object": [R(body=b'{"error": {"message": "overloaded"}}')],
        "200 + no choices": [R(body=b'{"choices": []}')],
        "503 for good": [R(status=503, headers={"Retry-After": "0"})] * 6,
        "malformed <tool_call>": [R(text="<tool_call>{name: f(</tool_call>", headers={"Retry-After": "0"})]
        * 6,
    }
    plan: dict[str, int] = {}
    for i, question in enumerate(answers):
        kind = list(kinds)[i % len(kinds)]
        plan[kind] = plan.get(kind, 0) + 1
        server.fail_next(question, *kinds[kind])
    try:
        proc = subprocess.run(
            _bench(tmp / "faults", server.base_url, n, "--max-retries", "3"), capture_output=True, text=True
        )
        summary = json.loads(proc.stdout)
        requests = server.requests
    finally:
        server.stop()
    run = next((tmp / "faults").iterdir())
    records = [json.loads(x) for x in (run / "samples.jsonl").read_text().splitlines()]
    return {"samples": n, "faults": plan, "scored": summary["n_scored"], "infra_errors": summary["n_errors"],
            "model_failures_scored": sum(r["details"].get("outcome") == "model_failure" for r in records),
            "accounted": summary["n_scored"] + summary["n_errors"] == n == len(records),
            "attempts_counted": summary["attempts"], "requests_seen_by_server": requests,
            "infra_error_rate": summary["infra_error_rate"], "warned": "warning:" in proc.stderr}  # fmt: skip


def concurrent(n: int, tmp: Path) -> dict[str, Any]:
    server = fake.FakeOpenAIServer(_handler(_answers(n)), latency=0.2).start()
    runs = tmp / "concurrent"
    try:
        first = subprocess.Popen(
            _bench(runs, server.base_url, n), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        _wait_for_progress(runs, first)
        run = next(runs.iterdir())
        second = subprocess.run(
            _bench(runs, server.base_url, n, "--resume", str(run)), capture_output=True, text=True
        )
        first_running = first.poll() is None
        first.wait()
    finally:
        server.stop()
    lines, unique = _records(run)
    results = json.loads((run / "results.json").read_text())
    return {"first_still_running": first_running, "second_exit": second.returncode,
            "second_says": second.stderr.strip().splitlines()[-1][:140],
            "records": lines, "unique": unique, "results_n_samples": results["n_samples"]}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--kills", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        os.environ["TOOLMEND_CACHE_DIR"] = str(tmp / "cache")
        for name, fn in (("kill/resume", lambda: kill_resume(args.n, args.kills, tmp)),
                         ("faults", lambda: faults(args.n, tmp)), ("concurrent resume", lambda: concurrent(args.n, tmp))):  # fmt: skip
            print(f"{name}: {json.dumps(fn())}", flush=True)


if __name__ == "__main__":
    main()
