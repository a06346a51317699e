"""The traces:DIR source: traces written by a real `toolmend serve` in front of a scripted
upstream (both on 127.0.0.1), read back as sft / kto / refine rows, every label re-checked."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scripted_upstream import AppThread, Scene, ScriptedUpstream, call, completion
from typer.testing import CliRunner

from toolmend._errors import ConfigError, DatasetError
from toolmend.cli._app import app
from toolmend.formats import parse_calls
from toolmend.serve import ServeConfig, create_app
from toolmend.train import build_rows, prepare
from toolmend.train._data import KEEP_IT

openai = pytest.importorskip("openai")


WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
    "city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}}  # fmt: skip
ASK = [{"role": "user", "content": "Weather in Oslo for 2 days?"}]
HISTORY = [
    {"role": "user", "content": "Weather in Bergen?"},
    {"role": "assistant", "content": None, "tool_calls": [call("get_weather", {"city": "Bergen"}, "h1")]},
    {"role": "tool", "tool_call_id": "h1", "content": '{"temp": 9}'},
    {"role": "user", "content": "And in Oslo?"},
]


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    out = tmp_path_factory.mktemp("proxy") / "run"
    upstream = ScriptedUpstream(
        Scene(
            body=completion(None, [call("get_weather", '{"city": "Oslo", "days": "2"}', "c1")])
        ),  # repaired
        Scene(body=completion(None, [call("get_weather", '{"city": "Oslo"}', "c2")])),  # accepted
        Scene(body=completion(None, [call("get_weather", "{}", "c3")])),  # re-asked ...
        Scene(body=completion(None, [call("get_weather", '{"city": "Oslo"}', "c4")])),  # ... recovered
    ).start()
    proxy = AppThread(create_app(ServeConfig(upstream=upstream.base_url, traces=out))).start()
    client = openai.OpenAI(base_url=proxy.url + "/v1", api_key="k", max_retries=0)
    for sample, messages in (("s1", ASK), ("s2", HISTORY), ("s3", ASK)):
        client.chat.completions.create(
            model="m", messages=messages, tools=[WEATHER], extra_headers={"x-toolmend-sample-id": sample}
        )
    proxy.stop()
    upstream.stop()
    yield out


def _calls(row: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(c.name, c.arguments) for c in parse_calls(row["completion"][0]["content"]).calls]


def test_the_trace_file_is_the_proxys(traces: Path) -> None:
    outcomes = [json.loads(line)["outcome"] for line in (traces / "traces.jsonl").read_text().splitlines()]
    assert outcomes == ["repaired", "accepted", "recovered"]


def test_sft_targets_are_accepted_and_repaired_answers(traces: Path) -> None:
    rows, report = build_rows("sft", source=f"traces:{traces}")
    assert report.traces == 3 and report.dropped == {}
    by_id = {r["trace_id"]: r for r in rows}
    assert _calls(by_id["s1"]) == [("get_weather", {"city": "Oslo", "days": 2})]  # the guard's repair
    assert _calls(by_id["s2"]) == _calls(by_id["s3"]) == [("get_weather", {"city": "Oslo"})]
    assert [by_id[s]["operator"] for s in ("s1", "s2", "s3")] == [
        "guard:repaired",
        "guard:accepted",
        "guard:recovered",
    ]
    assert json.loads(by_id["s1"]["gold_calls"]) == [
        {"name": "get_weather", "arguments": {"city": "Oslo", "days": 2}}
    ]
    # History turns are written in the reply format, like every other source.
    prompt = by_id["s2"]["prompt"]
    assert [m["role"] for m in prompt] == ["user", "assistant", "tool", "user"]
    assert parse_calls(prompt[1]["content"]).calls[0].arguments == {"city": "Bergen"}
    assert json.loads(by_id["s2"]["tools"])[0]["function"]["name"] == "get_weather"


def test_kto_labels_originals_undesirable_with_their_code(traces: Path) -> None:
    rows, report = build_rows("kto", source=f"traces:{traces}")
    labels = sorted((r["trace_id"], r["label"], r["code"], r["verified_by"]) for r in rows)
    assert labels == [
        ("s1", False, "invalid_type", "checker"),
        ("s1", True, "correct", "gold"),
        ("s2", True, "correct", "gold"),
        ("s3", False, "missing_required", "checker"),
        ("s3", True, "correct", "gold"),
    ]
    bad = next(r for r in rows if r["trace_id"] == "s1" and not r["label"])
    assert _calls(bad) == [("get_weather", {"city": "Oslo", "days": "2"})]  # the model's own original
    assert report.codes == {"correct": 3, "invalid_type": 1, "missing_required": 1}
    assert report.verified_by == {"checker": 2}


def test_refine_goes_from_the_original_and_feedback_to_the_repair(traces: Path) -> None:
    rows, _ = build_rows("refine", source=f"traces:{traces}")
    by_id = {r["trace_id"]: r for r in rows}
    s1 = by_id["s1"]
    first, feedback = s1["prompt"][-2:]
    assert parse_calls(first["content"]).calls[0].arguments == {"city": "Oslo", "days": "2"}
    assert "days" in feedback["content"] and feedback["role"] == "user"
    assert _calls(s1) == [("get_weather", {"city": "Oslo", "days": 2})]
    assert "city" in by_id["s3"]["prompt"][-1]["content"]  # missing_required, said in the feedback
    assert by_id["s2"]["completion"][0]["content"].startswith(KEEP_IT)  # accepted: keep it


def test_rows_load_into_the_sft_trainer(traces: Path, tiny_model: Path, tmp_path: Path) -> None:
    from datasets import Dataset

    rows, _ = build_rows("refine", source=f"traces:{traces}")
    prepared = prepare("sft", model=tiny_model, data=Dataset.from_list(rows), out=tmp_path,
                       config={"max_steps": 1, "per_device_train_batch_size": 1})  # fmt: skip
    assert len(prepared.trainer.train_dataset) == len(rows) == 3


def test_bad_sources_are_one_clear_error(traces: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="builds sft, kto, refine data; reflect needs"):
        build_rows("reflect", source=f"traces:{traces}")
    with pytest.raises(ConfigError, match="no trace file"):
        build_rows("sft", source=f"traces:{tmp_path / 'none'}")
    broken = tmp_path / "broken"
    shutil.copytree(traces, broken)
    with (broken / "traces.jsonl").open("a") as f:
        f.write('{"id": "x", "request": {}, "outcome": "accepted"}\n')
    with pytest.raises(DatasetError, match=r"traces.jsonl, line 4, field 'examples'"):
        build_rows("kto", source=f"traces:{broken}")
    result = CliRunner().invoke(
        app, ["build", "sft", "--source", f"traces:{broken}", "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 2 and "line 4" in result.output


def test_cli_builds_kto_from_traces(traces: Path, tmp_path: Path) -> None:
    out = tmp_path / "kto.jsonl"
    result = CliRunner().invoke(app, ["build", "kto", "--source", f"traces:{traces}", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert len(out.read_text().splitlines()) == 5
