"""Multi-turn gold becomes per-turn rows: the prompt holds the earlier turns and their tool
results, the completion the turn's calls with the values those results gave; no placeholder is
ever written."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolmend._schema import Ref, ToolCall
from toolmend.benchmarks.critic._traces import load_traces
from toolmend.check import Checker
from toolmend.cli._app import app
from toolmend.env import extract_path
from toolmend.formats import parse_calls, write_calls
from toolmend.synth.inject import Injection
from toolmend.train import build_rows, verify_injection
from toolmend.train._data import _fingerprint
from toolmend.world import Task, World, generate_tasks

PLACEHOLDER = re.compile(r"\$ref|API_call_\d")

# Enough world tasks to reach the first ones of depth 2 and 3 (seed 0 lists them from index 15).
LIMITS = {"world": 24, "nestools": 8, "bfcl": 6}


def _two_turn_task() -> tuple[int, Task]:
    for i, task in enumerate(generate_tasks(0)):
        if (
            task.depth == 2
            and len(task.calls) == 2
            and any(isinstance(v, Ref) for v in task.calls[1].arguments.values())
        ):
            return i, task
    raise AssertionError("seed 0 has no two-call task of depth 2")


def _texts(row: dict) -> str:
    return json.dumps(row["prompt"]) + json.dumps(row["completion"])


@pytest.mark.parametrize("source", sorted(LIMITS))
@pytest.mark.parametrize("kind", ["sft", "kto", "refine", "reflect"])
def test_no_prompt_or_completion_holds_a_placeholder(source: str, kind: str) -> None:
    rows, report = build_rows(
        kind, source=source, seed=0, limit=LIMITS[source], max_tools=4 if source == "world" else None
    )
    assert rows
    for row in rows:
        assert not PLACEHOLDER.search(_texts(row)), row
        if kind != "kto":
            assert not PLACEHOLDER.search(json.dumps([c["arguments"] for c in json.loads(row["gold_calls"])]))
    if source != "bfcl":  # BFCL's gold has no dependent calls: one turn each
        assert set(report.turns) >= {"0", "1"} or kind == "reflect", report.turns
        assert any(m["role"] == "tool" for r in rows for m in r["prompt"])
    assert sum(report.turns.values()) == len(rows)


def test_critique_and_trace_rows_hold_no_placeholder(tmp_path: Path) -> None:
    rows, _ = build_rows("critique", source="world", seed=0, limit=6)
    assert rows and not any(PLACEHOLDER.search(_texts(r)) for r in rows)
    weather = {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}  # fmt: skip
    history = [
        {"role": "user", "content": "Weather in Bergen?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "h1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Bergen"}'}}]},
        {"role": "tool", "tool_call_id": "h1", "content": '{"temp": 9}'},
        {"role": "user", "content": "And in Oslo?"},
    ]  # fmt: skip
    answer = {"role": "assistant", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}]}  # fmt: skip
    record = {"id": "t1", "request": {"messages": history, "tools": [weather]}, "outcome": "accepted",
              "examples": [{"label": "desirable", "message": answer}]}  # fmt: skip
    (tmp_path / "traces.jsonl").write_text(json.dumps(record) + "\n")
    for kind in ("sft", "kto", "refine"):
        rows, _ = build_rows(kind, source=f"traces:{tmp_path}")
        assert rows and not any(PLACEHOLDER.search(_texts(r)) for r in rows)


def test_a_two_turn_world_task_is_two_sft_rows_with_the_first_results() -> None:
    index, task = _two_turn_task()
    rows = [
        r for r in build_rows("sft", source="world", seed=0, limit=index + 1)[0] if r["trace_id"] == task.id
    ]
    assert len(rows) == 2
    first, second = rows
    assert first["prompt"] == [{"role": "user", "content": task.query}]
    assert parse_calls(first["completion"][0]["content"]).calls == [
        ToolCall(name=task.calls[0].name, arguments=task.calls[0].arguments)
    ]
    # What the first call returns in a fresh world of the task's seed, and the value it binds.
    response = World.create(task.seed).environment().execute(task.calls[0])
    assert response.ok
    assert second["prompt"][:2] == [first["prompt"][0], first["completion"][0]]
    assert second["prompt"][2:] == [{"role": "tool", "content": response.content}]
    ref_key, ref = next((k, v) for k, v in task.calls[1].arguments.items() if isinstance(v, Ref))
    bound = task.calls[0].outputs.index(ref.target.split(".", 1)[0])
    value = extract_path(response.data, task.calls[0].output_fields[bound])
    (call,) = parse_calls(second["completion"][0]["content"]).calls
    assert call.name == task.calls[1].name and call.arguments[ref_key] == value
    assert json.loads(second["gold_calls"])[0]["arguments"][ref_key] == value


def test_kto_and_refine_corrupt_the_later_turns_too() -> None:
    index, task = _two_turn_task()
    for kind in ("kto", "refine"):
        rows, report = build_rows(kind, source="world", seed=0, limit=index + 1)
        later = [
            r for r in rows if r["trace_id"] == task.id and any(m["role"] == "tool" for m in r["prompt"])
        ]
        assert any(r["code"] != "correct" for r in later), kind
        assert sum(report.verified_by.values()) == sum(r["code"] != "correct" for r in rows)
        for row in later:
            # The second turn's prompt: query, the first turn's calls, their result.
            assert [m["role"] for m in row["prompt"][:3]] == ["user", "assistant", "tool"]


def test_a_later_turn_corruption_is_verified_after_the_earlier_gold_turns() -> None:
    index, task = _two_turn_task()
    trace = load_traces("world", seed=0)[index]
    checker = Checker(trace.tools)
    env = trace.make_env()
    env.run(trace.calls[:1])
    turn = [env.resolved(trace.calls[1])]
    assert turn[0] is not None and turn[0] != trace.calls[1]
    prefix = list(trace.calls[:1])
    gold_state = _fingerprint(trace, [*prefix, *turn])[1]
    silent = Injection(operator="x", family="hitec", label="x", sub_label="x", step=0, seed=0,
                       original=turn, corrupted=turn, calls=turn, description="")  # fmt: skip
    # The gold turn itself, run after the first turn, changes nothing: not an error.
    assert verify_injection(silent, trace, checker, gold_state, prefix) is None
    # Without the first turn the same calls end elsewhere: the prefix is part of the verification.
    assert verify_injection(silent, trace, checker, gold_state) == "world"


def test_single_turn_traces_keep_one_row_with_the_query_alone() -> None:
    rows, report = build_rows("sft", source="world", seed=0, limit=4, max_tools=3)
    traces = load_traces("world", seed=0)[:4]
    assert report.turns == {"0": 4} and len(rows) == 4
    for row, trace in zip(rows, traces, strict=True):
        assert row["prompt"] == [{"role": "user", "content": trace.query}]
        assert row["completion"][0]["content"] == write_calls(trace.calls, "tags")


def test_cli_report_counts_rows_per_turn(tmp_path: Path) -> None:
    index, _ = _two_turn_task()
    out = tmp_path / "sft.jsonl"
    result = CliRunner().invoke(app, ["build", "sft", "--limit", str(index + 1), "--out", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "sft.jsonl.report.json").read_text())
    turns = report["turns"]
    assert turns["0"] == index + 1 and turns["1"] > 0 and sum(turns.values()) == report["rows"]
    assert "│ turn " in result.output


def test_turn_rows_load_into_sft_and_only_the_turn_is_supervised(tiny_model: Path, tmp_path: Path) -> None:
    from toolmend.train import prepare

    index, task = _two_turn_task()
    built = build_rows("sft", source="world", seed=0, limit=index + 1, max_tools=2)[0]
    rows = [r for r in built if r["trace_id"] == task.id]
    data = tmp_path / "sft.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = {"max_steps": 1, "per_device_train_batch_size": 2}
    prepared = prepare("sft", model=tiny_model, data=data, out=tmp_path / "out", config=config)
    tokenizer = prepared.trainer.processing_class
    dataset = prepared.trainer.train_dataset
    assert len(dataset) == 2
    second = dataset[1]
    # The earlier turn and its tool result are context; only this turn's calls are learned.
    supervised = tokenizer.decode([t for t in second["labels"] if t != -100])
    assert supervised == rows[1]["completion"][0]["content"] + "<|im_end|>"
    assert "<|im_start|>tool" in tokenizer.decode(second["input_ids"])
