"""``toolmend bench world`` against a real OpenAI-compatible server on 127.0.0.1 (the test's fake
server plays an agent that follows the gold trajectory), in native and prompt mode, then a report
comparing two runs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_openai_server import FakeOpenAIServer, Reply
from typer.testing import CliRunner

from toolmend.benchmarks import BENCHMARKS, load_builtin_benchmarks
from toolmend.cli._app import app
from toolmend.formats._tags import parse_tagged_calls

load_builtin_benchmarks("world")
LIMIT = 8


@pytest.fixture(autouse=True)
def _private_cache(private_cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "1")


def _first_user(body: dict[str, Any]) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


@pytest.fixture
def agent_server() -> Iterator[FakeOpenAIServer]:
    """Answers turn k of a task with the k-th gold reply: native tool calls when the request
    offers tools, the benchmark's text format otherwise."""
    bench = BENCHMARKS.get("world")()
    gold = {s.messages[-1].content: bench.gold(s) for s in bench.load()[:LIMIT]}

    def handler(body: dict[str, Any]) -> Reply:
        replies = gold[_first_user(body)]
        turn = sum(m["role"] == "assistant" for m in body["messages"])
        text = replies[min(turn, len(replies) - 1)]
        calls = parse_tagged_calls(text).calls
        if body.get("tools") and calls:
            return Reply(text=None, tool_calls=[{"name": c.name, "arguments": c.arguments} for c in calls])
        return Reply(text=text)

    server = FakeOpenAIServer(handler).start()
    try:
        yield server
    finally:
        server.stop()


def _bench(server: FakeOpenAIServer, runs: Path, *extra: str) -> dict[str, Any]:
    result = CliRunner().invoke(
        app,
        ["bench", "world", "--model", "openai/agent", "--base-url", server.base_url, "--limit", str(LIMIT),
         "--runs-dir", str(runs), "--json", "--no-report", *extra],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    payload: dict[str, Any] = json.loads(result.stdout)
    return payload


def _assert_provider_correct(body: dict[str, Any]) -> None:
    open_ids: list[str] = []
    for message in body["messages"]:
        if message["role"] == "assistant":
            assert not open_ids, f"tool calls {open_ids} were never answered"
            open_ids = [c["id"] for c in message.get("tool_calls") or []]
        elif message["role"] == "tool":
            assert message["tool_call_id"] in open_ids
            open_ids.remove(message["tool_call_id"])
        else:
            assert not open_ids, f"tool calls {open_ids} were never answered"


def test_native_mode_executes_calls_and_keeps_the_history_provider_correct(
    agent_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    payload = _bench(agent_server, tmp_path, "--tool-mode", "native")
    assert payload["metrics"]["success"] == 1.0
    bodies = agent_server.bodies
    assert all(len(b["tools"]) == 50 for b in bodies)
    # The tools travel through the API: the system prompt neither lists them nor asks for text calls.
    assert all("<tool_call>" not in b["messages"][0]["content"] for b in bodies)
    later = [b for b in bodies if any(m["role"] == "tool" for m in b["messages"])]
    assert later, "no request carried tool results"
    for body in bodies:
        _assert_provider_correct(body)


def test_prompt_mode_sends_tools_in_the_prompt_and_results_as_messages(
    agent_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    payload = _bench(agent_server, tmp_path, "--tool-mode", "prompt")
    assert payload["metrics"]["success"] == 1.0
    for body in agent_server.bodies:
        assert "tools" not in body
        assert "<tool_call>" in body["messages"][0]["content"]
        assert all(m["role"] in ("system", "user", "assistant") for m in body["messages"])
    assert any(
        m["role"] == "user" and m["content"].startswith("Tool response (")
        for b in agent_server.bodies
        for m in b["messages"]
    )


def test_report_shows_recovery_and_pass_hat_k_of_two_runs_side_by_side(
    agent_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    clean = _bench(agent_server, tmp_path / "a", "--trials", "2", "--faults", "none")
    faulty = _bench(agent_server, tmp_path / "b", "--trials", "2", "--faults", "heavy")
    assert clean["metrics"]["pass^2"] == 1.0
    assert faulty["metrics"]["faults_injected"] > 0
    assert faulty["metrics"]["pass^2"] < 1.0
    out = tmp_path / "report"
    result = CliRunner().invoke(
        app, ["report", clean["run_dir"], faulty["run_dir"], "--out", str(out), "--no-plots"]
    )
    assert result.exit_code == 0, result.output
    text = (out / "report.md").read_text()
    assert "pass^2" in text and "pass@2" in text
    assert any(line.startswith("| fault/") and "recovered" in line for line in text.splitlines())
