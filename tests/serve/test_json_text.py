"""Text that trips JSON writers and line splitters, end to end through the real proxy: a lone
UTF-16 surrogate (an emoji cut at a token boundary) in a reply the proxy repairs, and U+2028 in a
traced exchange that ``toolmend score -p`` and the ``replay/`` backend read back."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import typer
from scripted_upstream import Scene, call, completion, stream_of
from typer.testing import CliRunner

from toolmend.benchmarks import BENCHMARKS, load_builtin_benchmarks
from toolmend.benchmarks._predictions import read_predictions
from toolmend.benchmarks.bfcl._decode import render_python

openai = pytest.importorskip("openai")

WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
    "city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}}  # fmt: skip
ASK = {"model": "m", "messages": [{"role": "user", "content": "Weather in Oslo?"}], "tools": [WEATHER]}
BAD = call("get_weather", '{"city": "Oslo", "days": "2"}', "c1")  # "2" must be coerced: a repair
CUT = "Looking it up \ud83d"  # an emoji cut after its first UTF-16 half


def _client(proxy: Any) -> Any:
    return openai.OpenAI(base_url=proxy.url, api_key="k", max_retries=0)


def _trace_lines(run: Path, n: int = 1) -> list[dict[str, Any]]:
    """The first ``n`` trace lines, once written: the proxy writes a trace after it counts the
    request, just after the client has its answer (a bounded wait)."""
    for _ in range(500):
        raw = (run / "traces.jsonl").read_bytes()
        if raw.count(b"\n") >= n:
            break
        time.sleep(0.01)
    text = raw.decode("utf-8")  # valid UTF-8 on disk, or this raises
    return [json.loads(line) for line in text.split("\n") if line]


def test_a_repaired_reply_holding_a_lone_surrogate_is_answered_and_traced(serve: Any, tmp_path: Path) -> None:
    proxy = serve(Scene(body=completion(CUT, [BAD])), traces=tmp_path / "run")
    resp = _client(proxy).chat.completions.with_raw_response.create(
        **ASK, extra_headers={"x-toolmend-sample-id": "s1"}
    )
    assert resp.http_response.status_code == 200
    assert resp.headers["x-toolmend-outcome"] == "repaired"
    message = resp.parse().choices[0].message
    assert message.content == CUT  # the surrogate arrives as it left the upstream
    assert json.loads(message.tool_calls[0].function.arguments) == {"city": "Oslo", "days": 2}
    proxy.counted(1)
    [record] = _trace_lines(tmp_path / "run")
    assert record["outcome"] == "repaired" and record["final"]["content"] == CUT
    assert json.loads(record["output"])["content"] == CUT


def test_a_streamed_repair_holding_a_lone_surrogate_is_answered_and_traced(
    serve: Any, tmp_path: Path
) -> None:
    tool_delta = {"tool_calls": [{"index": 0, **BAD}]}
    proxy = serve(
        Scene(chunks=stream_of([{"content": CUT}, tool_delta], "tool_calls")), traces=tmp_path / "run"
    )
    content, args = "", ""
    stream = _client(proxy).chat.completions.create(
        **ASK, stream=True, extra_headers={"x-toolmend-sample-id": "s1"}
    )
    for chunk in stream:
        for ch in chunk.choices:
            content += ch.delta.content or ""
            for t in ch.delta.tool_calls or []:
                args += t.function.arguments or ""
    assert content == CUT and json.loads(args) == {"city": "Oslo", "days": 2}
    proxy.counted(1)
    [record] = _trace_lines(tmp_path / "run")
    assert record["outcome"] == "repaired" and record["original"]["content"] == CUT


def test_a_shaped_error_not_a_bare_500_when_a_refused_reply_holds_a_lone_surrogate(
    serve: Any, tmp_path: Path
) -> None:
    # --strict refuses the repair with a 422; the exchange (the surrogate in it) is still traced.
    bad = call("get_weather", '{"city": "Oslo\\ud83d", "days": "2"}', "c1")
    proxy = serve(Scene(body=completion(CUT, [bad])), strict=True, traces=tmp_path / "run")
    with pytest.raises(openai.UnprocessableEntityError) as info:
        _client(proxy).chat.completions.create(**ASK)
    assert info.value.body["code"] == "invalid_tool_call"
    proxy.counted(1)
    [record] = _trace_lines(tmp_path / "run")
    assert record["status"] == 422 and record["original"]["content"] == CUT
    assert json.loads(record["original"]["tool_calls"][0]["function"]["arguments"])["city"] == "Oslo\ud83d"


# -- U+2028 in traces that score and replay read back -----------------------------------------------


def _app() -> typer.Typer:
    from toolmend.cli import _bench as bench
    from toolmend.cli import _score as score

    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        pass

    bench.register(app)
    score.register(app)
    return app


@pytest.fixture
def traced_bfcl(serve: Any, tmp_path: Path, data_dir: Path) -> tuple[Path, str]:
    """The proxy's traces of one BFCL sample answered correctly, the exchange holding U+2028 and
    U+2029 in the client's message."""
    load_builtin_benchmarks()
    sample = BENCHMARKS.get("bfcl")().load(data_dir / "bfcl", categories=["simple_python"])[0]
    gold = render_python(sample.target)
    proxy = serve(Scene(body=completion(gold)), traces=tmp_path / "run")
    ask = {"model": "m", "messages": [{"role": "user", "content": "para\u2028graph\u2029end"}]}
    _client(proxy).chat.completions.create(**ask, extra_headers={"x-toolmend-sample-id": sample.id})
    _trace_lines(tmp_path / "run")
    traces = tmp_path / "run" / "traces.jsonl"
    assert "\u2028" in traces.read_text(encoding="utf-8")  # written raw, as JSON allows
    return traces, sample.id


def test_score_reads_traces_holding_u2028(traced_bfcl: tuple[Path, str], data_dir: Path) -> None:
    traces, sid = traced_bfcl
    preds = read_predictions(traces)
    assert preds.problems == [] and list(preds.outputs) == [sid]
    res = CliRunner().invoke(_app(), [
        "score", "bfcl", "-p", str(traces), "--data", str(data_dir / "bfcl"),
        "-o", 'categories=["simple_python"]', "--json",
    ])  # fmt: skip
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["scored"] == 1 and out["problems"] == [] and out["unknown"] == {}


def test_replay_reads_traces_holding_u2028(traced_bfcl: tuple[Path, str], data_dir: Path, tmp_path: Path,
                                           private_cache_dir: Path) -> None:  # fmt: skip
    traces, _ = traced_bfcl
    res = CliRunner().invoke(_app(), [
        "bench", "bfcl", "--model", f"replay/{traces}", "--data", str(data_dir / "bfcl"),
        "--categories", "simple_python", "--limit", "1", "--runs-dir", str(tmp_path / "runs"), "--json",
    ])  # fmt: skip
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["new_samples"] == 1 and out["n_errors"] == 0, out
