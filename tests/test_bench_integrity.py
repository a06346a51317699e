"""Measurement integrity against local OpenAI-compatible servers (issue 16): no call silently
dropped, server-parsed calls kept in prompt mode, independent seeds per generation, model-caused
server errors scored, gateway overload answers retried."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fake_openai_server import FakeOpenAIServer, Reply

from toolmend._bench import run_bench
from toolmend._schema import Sample
from toolmend.benchmarks import BENCHMARKS, load_builtin_benchmarks
from toolmend.runs import RunDir


@pytest.fixture(autouse=True)
def _private(private_cache_dir: Path) -> None:
    pass


def _serve(handler: Any, **kw: Any) -> Any:
    return FakeOpenAIServer(handler, **kw).start()


def _bench(name: str, server: Any, tmp_path: Path, **kw: Any) -> Any:
    kw.setdefault("runs_dir", tmp_path / "runs")
    return run_bench(name, "openai/tiny", base_url=server.base_url, progress=False, cache=False, **kw)


def _native_irrelevance(handler: Any, tmp_path: Path, data_dir: Path, limit: int, mode: str) -> Any:
    """The first ``limit`` BFCL ``irrelevance`` samples, tools passed natively, every request
    answered by ``handler`` from a server on 127.0.0.1, scored in ``mode``."""
    server = _serve(handler)
    try:
        return _bench(
            "bfcl", server, tmp_path, data=data_dir / "bfcl", categories=["irrelevance"], limit=limit,
            tool_mode="native", mode=mode,
        )  # fmt: skip
    finally:
        server.stop()


def _reflection_samples(data_dir: Path, n: int) -> list[Sample]:
    load_builtin_benchmarks()
    return BENCHMARKS.get("reflection-bench")().load(data_dir / "tool-reflection-bench")[:n]


@pytest.mark.parametrize("mode", ["compat", "improved"])
def test_malformed_native_calls_reach_the_scorer_as_calls(tmp_path: Path, data_dir: Path, mode: str) -> None:
    # A model that answers every irrelevance question with a call whose arguments are broken JSON.
    def handler(body: dict[str, Any]) -> Any:
        name = body["tools"][0]["function"]["name"]
        return Reply(text=None, tool_calls=[{"name": name, "arguments": '{"base": 10, "height": '}])

    result = _native_irrelevance(handler, tmp_path, data_dir, 6, mode)
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


@pytest.mark.parametrize("mode", ["compat", "improved"])
def test_a_native_call_python_cannot_name_is_scored_as_a_call(
    tmp_path: Path, data_dir: Path, mode: str
) -> None:
    # SmolLM2 once called a tool 'chicken dish' natively; writing that reply in BFCL's Python
    # format raised and ended the whole run. It is a call to a tool nobody offered: on
    # irrelevance it is not an abstention, as BFCL's function-calling harness reads it.
    def handler(body: dict[str, Any]) -> Any:
        return Reply(text=None, tool_calls=[{"name": "chicken dish", "arguments": '{"class": "spicy"}'}])

    result = _native_irrelevance(handler, tmp_path, data_dir, 3, mode)
    records = RunDir(result.run_dir).read_records()
    assert [r.outputs[0] for r in records] == [
        "[chicken_dish__invalid_name(class__invalid_name='spicy')]"
    ] * 3
    assert result.summary.metrics["overall_sample_weighted"] == 0.0


def test_valid_and_malformed_native_calls_keep_their_order() -> None:
    from toolmend._schema import ToolCall
    from toolmend.benchmarks._replies import reply_text
    from toolmend.models._base import Completion, RawToolCall

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


def test_every_benchmark_writes_malformed_native_calls_back(data_dir: Path) -> None:
    # The runner asks the benchmark for the reply text (Benchmark.reply_text); NesTools overrides
    # it to add api ids, and a malformed call must survive there as in the base writer.
    from toolmend.benchmarks.nestools import NesTools
    from toolmend.models._base import Completion, RawToolCall

    load_builtin_benchmarks()
    broken = RawToolCall(name="f", arguments='{"a": 1', error="bad JSON")
    c = Completion(raw_tool_calls=[broken])
    bfcl = BENCHMARKS.get("bfcl")()
    assert bfcl.reply_text(Sample(id="x", messages=[]), c) == '[f({"a": 1)]'
    nes = NesTools()
    sample = nes.load(data_dir / "nestools", limit=1)[0]
    reply = nes.reply_text(sample, c)
    assert '"parameters": {"a": 1' in reply and reply != ""


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


def test_no_seed_is_sent_or_recorded_unless_the_user_sets_one(tmp_path: Path, data_dir: Path) -> None:
    server = _serve(lambda body: Reply(text="no idea"))
    try:
        result = _bench(
            "reflection-bench", server, tmp_path, data=data_dir / "tool-reflection-bench", limit=2, samples=3
        )
        bodies = list(server.bodies)
    finally:
        server.stop()
    assert len(bodies) == 6 and not any("seed" in body for body in bodies)
    for record in RunDir(result.run_dir).read_records():
        assert record.seeds == [None, None, None]
    assert json.loads((result.run_dir / "manifest.json").read_text())["config"]["bench"]["seed"] is None


def test_the_cli_sends_no_seed_by_default(tmp_path: Path, data_dir: Path) -> None:
    from typer.testing import CliRunner

    from toolmend.cli import app

    server = _serve(lambda body: Reply(text="no idea"))
    try:
        args = ["bench", "reflection-bench", "--model", "openai/tiny", "--base-url", server.base_url,
                "--data", str(data_dir / "tool-reflection-bench"), "--limit", "2", "--no-cache",
                "--runs-dir", str(tmp_path / "runs"), "--json", "--no-report"]  # fmt: skip
        out = CliRunner().invoke(app, args)
        bodies = list(server.bodies)
    finally:
        server.stop()
    assert out.exit_code == 0, out.output
    assert len(bodies) == 2 and not any("seed" in body for body in bodies)
    assert json.loads(out.stdout)["settings"]["seed"] is None


def _fast_retries(n: int = 2) -> dict[str, Any]:
    from toolmend.models import RetryPolicy

    return {"retry": RetryPolicy(max_retries=n, initial_wait=0.001, max_wait=0.001, jitter=0.0)}


def test_a_server_error_the_model_causes_is_scored_not_excluded(tmp_path: Path, data_dir: Path) -> None:
    # Half the questions get a garbled <tool_call>, which a tool-parsing server answers with the
    # same 500 on every retry; the other half a correct abstention.
    load_builtin_benchmarks()
    samples = BENCHMARKS.get("bfcl")().load(data_dir / "bfcl", categories=["irrelevance"])[:8]
    garbled = {s.messages[-1].content for s in samples[::2]}

    def handler(body: dict[str, Any]) -> Any:
        if body["messages"][-1]["content"] in garbled:
            return Reply(text="<tool_call>{name: area(base=10</tool_call>")
        return Reply(text="None of the functions can be used.")

    server = _serve(handler, parse_tool_calls=True)
    try:
        result = _bench(
            "bfcl", server, tmp_path, data=data_dir / "bfcl", categories=["irrelevance"], limit=8,
            seed=3, model_options=_fast_retries(2),
        )  # fmt: skip
        requests = server.requests
    finally:
        server.stop()
    s = result.summary
    assert s.n_errors == 0 and s.n_scored == 8
    assert s.metrics["overall_sample_weighted"] == 0.5  # not 1.0 over the 4 abstentions
    assert s.attempts == requests == 4 * 3 + 4  # every real HTTP attempt is counted
    failed = [r for r in RunDir(result.run_dir).read_records() if r.details.get("outcome") == "model_failure"]
    assert len(failed) == 4 and all(r.attempts == 3 and r.scores["accuracy"] == 0.0 for r in failed)


def test_overload_stays_an_infrastructure_error_with_its_attempts_counted(
    tmp_path: Path, data_dir: Path
) -> None:
    server = _serve(lambda body: Reply(text="[]"))
    server.fail_next("triangle", *[Reply(status=503)] * 3)
    try:
        result = _bench(
            "bfcl", server, tmp_path, data=data_dir / "bfcl", categories=["irrelevance"], limit=4,
            model_options=_fast_retries(2),
        )  # fmt: skip
        requests = server.requests
    finally:
        server.stop()
    s = result.summary
    assert s.n_errors == 1 and s.infra_error_rate == 0.25
    assert s.attempts == requests == 3 + 3
    [failed] = [r for r in RunDir(result.run_dir).read_records() if r.error is not None]
    assert failed.attempts == 3 and failed.error.status == 503  # type: ignore[union-attr]
    assert s.infra_warning() is not None and "25.0%" in s.infra_warning()  # type: ignore[operator]
    assert json.loads((result.run_dir / "results.json").read_text())["infra_error_rate"] == 0.25


@pytest.mark.parametrize(
    "body", [b'{"error": {"message": "overloaded", "code": 529}}', b'{"id": "x", "choices": []}']
)
def test_a_200_with_an_error_or_no_choices_is_retried(tmp_path: Path, data_dir: Path, body: bytes) -> None:
    server = _serve(lambda b: Reply(text="[]"))
    server.fail_next("triangle", Reply(body=body), Reply(body=body))
    try:
        result = _bench(
            "bfcl", server, tmp_path, data=data_dir / "bfcl", categories=["irrelevance"], limit=2,
            model_options=_fast_retries(3),
        )  # fmt: skip
    finally:
        server.stop()
    assert result.summary.n_errors == 0 and result.summary.retries == 2 and result.summary.attempts == 4


def test_a_lone_surrogate_in_a_response_is_data(tmp_path: Path, data_dir: Path) -> None:
    # An emoji cut at a token boundary: the server sends "\ud83d" escaped, json.loads keeps it.
    cut = "I cannot help \ud83d"
    server = _serve(lambda body: Reply(text=cut))
    try:
        opts: dict[str, Any] = {"data": data_dir / "bfcl", "categories": ["irrelevance"], "limit": 3}
        first = run_bench(
            "bfcl", "openai/tiny", base_url=server.base_url, progress=False, runs_dir=tmp_path, **opts
        )
        # Again from the cache, into a new run, and a resume of the first run.
        again = run_bench(
            "bfcl", "openai/tiny", base_url=server.base_url, progress=False, runs_dir=tmp_path, **opts
        )
        resumed = run_bench(
            "bfcl", "openai/tiny", base_url=server.base_url, progress=False, resume=first.run_dir
        )
        requests = server.requests
    finally:
        server.stop()
    assert requests == 3 and again.summary.cache_hits == 3 and resumed.summary.new_samples == 0
    for result in (first, again):
        records = RunDir(result.run_dir).read_records()
        assert [r.outputs for r in records] == [[cut]] * 3  # stored losslessly
        assert result.summary.metrics["overall_sample_weighted"] == 1.0
        (result.run_dir / "samples.jsonl").read_text(encoding="utf-8")  # valid UTF-8 on disk


def test_check_repair_json_prints_a_lone_surrogate(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from toolmend.cli._app import app

    tools = tmp_path / "tools.json"
    tools.write_text(
        json.dumps([{"name": "f", "parameters": {"type": "object", "properties": {"c": {"type": "string"}}}}])
    )
    calls = tmp_path / "out.txt"
    calls.write_text('{"name": "f", "arguments": {"c": "Par\\ud83d", "x": 1}}')
    for extra in (["--json"], []):
        result = CliRunner().invoke(
            app, ["check", "--tools", str(tools), "--calls", str(calls), "--repair", *extra]
        )
        assert result.exception is None or isinstance(result.exception, SystemExit), result.output
        assert "ud83d" in result.output


def test_embedding_hash_takes_a_lone_surrogate() -> None:
    from toolmend.compare._embed import _text_hash

    assert _text_hash("a\ud83d") != _text_hash("a\ud83e")


def test_bench_runs_on_a_corrupt_cache(tmp_path: Path, data_dir: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "responses.sqlite").write_bytes(b"\xff" * 8192)
    server = _serve(lambda body: Reply(text="[]"))
    try:
        with pytest.warns(RuntimeWarning, match="corrupt response cache"):
            result = run_bench(
                "bfcl", "openai/tiny", base_url=server.base_url, data=data_dir / "bfcl", categories=["irrelevance"],
                limit=2, runs_dir=tmp_path / "runs", cache_dir=cache, progress=False,
            )  # fmt: skip
    finally:
        server.stop()
    assert result.summary.n_scored == 2
    assert any(p.name.startswith("responses.sqlite.corrupt-") for p in cache.iterdir())
