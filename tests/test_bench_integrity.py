"""Measurement integrity against local OpenAI-compatible servers (issue 16): no call silently
dropped, server-parsed calls kept in prompt mode, independent seeds per generation, model-caused
server errors scored, gateway overload answers retried."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fake_openai_server import FakeOpenAIServer, Reply

from toolmend.bench import run_bench
from toolmend.benchmarks import BENCHMARKS, load_builtin_benchmarks
from toolmend.runs import RunDir
from toolmend.schema import Sample


@pytest.fixture(autouse=True)
def _private(private_cache_dir: Path) -> None:
    pass


def _serve(handler: Any, **kw: Any) -> Any:
    return FakeOpenAIServer(handler, **kw).start()


def _bench(name: str, server: Any, tmp_path: Path, **kw: Any) -> Any:
    kw.setdefault("runs_dir", tmp_path / "runs")
    return run_bench(
        name, "openai/tiny", base_url=server.base_url, progress=False, report=False, cache=False, **kw
    )


def _reflection_samples(data_dir: Path, n: int) -> list[Sample]:
    load_builtin_benchmarks()
    return BENCHMARKS.get("reflection-bench")().load(data_dir / "tool-reflection-bench")[:n]


@pytest.mark.parametrize("mode", ["compat", "improved"])
def test_malformed_native_calls_reach_the_scorer_as_calls(tmp_path: Path, data_dir: Path, mode: str) -> None:
    # A model that answers every irrelevance question with a call whose arguments are broken JSON.
    def handler(body: dict[str, Any]) -> Any:
        name = body["tools"][0]["function"]["name"]
        return Reply(text=None, tool_calls=[{"name": name, "arguments": '{"base": 10, "height": '}])

    server = _serve(handler)
    try:
        result = _bench(
            "bfcl", server, tmp_path, data=data_dir / "bfcl", categories=["irrelevance"], limit=6,
            tool_mode="native", mode=mode,
        )  # fmt: skip
    finally:
        server.stop()
    records = RunDir(result.run_dir).read_records()
    # The record shows the call that was scored, broken arguments and all.
    assert all('{"base": 10, "height": ' in r.outputs[0] for r in records)
    accuracy = result.summary.metrics["overall_sample_weighted"]
    if mode == "improved":
        assert accuracy == 0.0  # an attempted call, never an abstention
        assert {r.details.get("outcome") for r in records} == {"malformed"}
    else:
        # BFCL's own harness cannot decode such a reply (json.loads of the arguments fails),
        # and its irrelevance check counts a reply it cannot decode as no call.
        assert accuracy == 1.0


def test_valid_and_malformed_native_calls_keep_their_order() -> None:
    from toolmend.models.base import Completion, RawToolCall
    from toolmend.runs.replies import reply_text
    from toolmend.schema import ToolCall

    c = Completion(
        tool_calls=[ToolCall(name="g", arguments={"x": 1})],
        raw_tool_calls=[
            RawToolCall(name="f", arguments="{oops", error="bad"),
            RawToolCall(name="g", arguments='{"x": 1}'),
        ],
    )
    assert reply_text(c, "python") == "[f({oops), g(x=1)]"
    assert reply_text(c, "tags") == (
        '<tool_call>\n{"name": "f", "arguments": {oops}\n</tool_call>\n\n'
        '<tool_call>\n{"name": "g", "arguments": {"x": 1}}\n</tool_call>'
    )


@pytest.mark.parametrize("tool_mode", ["prompt", "native"])
def test_calls_parsed_by_the_server_are_scored(tmp_path: Path, data_dir: Path, tool_mode: str) -> None:
    # transformers serve / vLLM with a tool parser move <tool_call> blocks into message.tool_calls
    # even when the request sent no tools; the gold reply must still score.
    samples = _reflection_samples(data_dir, 6)
    truth = {s.messages[-1].content: s.metadata["ground_truth"] for s in samples}

    def handler(body: dict[str, Any]) -> Any:
        return Reply(text=truth[body["messages"][-1]["content"]])

    server = _serve(handler, parse_tool_calls=True)
    try:
        result = _bench(
            "reflection-bench", server, tmp_path, data=data_dir / "tool-reflection-bench", limit=6,
            tool_mode=tool_mode, mode="improved",
        )  # fmt: skip
        if tool_mode == "prompt":
            assert all("tools" not in b for b in server.bodies)
    finally:
        server.stop()
    assert result.summary.n_scored == 6
    assert result.summary.metrics["accuracy"] == 1.0
    record = RunDir(result.run_dir).read_records()[0]
    assert "<tool_call>" in record.outputs[0]


def test_each_generation_gets_its_own_recorded_seed(tmp_path: Path, data_dir: Path) -> None:
    server = _serve(lambda body: Reply(text="no idea"))
    try:
        result = _bench(
            "reflection-bench", server, tmp_path, data=data_dir / "tool-reflection-bench", limit=2,
            samples=3, seed=11,
        )  # fmt: skip
        sent: dict[str, list[int]] = {}
        for body in server.bodies:
            sent.setdefault(body["messages"][-1]["content"], []).append(body["seed"])
    finally:
        server.stop()
    assert len(sent) == 2
    for seeds in sent.values():
        assert len(set(seeds)) == 3 and 11 in seeds
    for record in RunDir(result.run_dir).read_records():
        assert len(set(record.seeds)) == 3 and record.seeds[0] == 11
    assert json.loads((result.run_dir / "manifest.json").read_text())["config"]["bench"]["seed"] == 11
