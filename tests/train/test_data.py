"""The dataset builders: TRL's formats, every injected error re-verified, drops counted, provenance."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolmend._errors import ConfigError
from toolmend._schema import ToolCall
from toolmend.benchmarks.critic._traces import load_traces
from toolmend.check import Checker
from toolmend.cli._app import app
from toolmend.formats import load_tools, parse_calls
from toolmend.guard._reask import refine_reask
from toolmend.strategies._reply import read_reply
from toolmend.synth.inject import Injection
from toolmend.train import build_dataset, build_rows, verify_injection
from toolmend.train._data import KEEP_IT, _fingerprint, feedback_text

PROVENANCE = {"source", "seed", "trace_id", "operator", "sub_label", "code", "verified_by", "checker_version"}


def _findings(row: dict) -> set[str]:
    text = row["completion"][0]["content"]
    parsed = parse_calls(text)
    tools = load_tools(json.loads(row["tools"]))
    gold = json.loads(row["gold_calls"]) if "gold_calls" in row else None
    count = len(gold) if gold is not None else None
    codes = {f.code for f in parsed.findings}
    return codes | {f.code for f in Checker(tools).check(parsed.calls, expected_count=count)}


@pytest.fixture(scope="module")
def kto() -> tuple[list[dict], object]:
    return build_rows("kto", source="world", seed=0, limit=8, max_tools=4)


def test_kto_negatives_fail_with_their_code_and_gold_passes(kto) -> None:
    rows, report = kto
    negatives = [r for r in rows if not r["label"]]
    positives = [r for r in rows if r["label"]]
    assert len(negatives) == len(positives) > 0
    for row in positives:
        parsed = parse_calls(row["completion"][0]["content"])
        assert not parsed.findings
        assert not Checker(load_tools(json.loads(row["tools"]))).check(parsed.calls)
    for row in negatives:
        if row["code"] == "wrong_tool_count" or row["verified_by"] == "world":
            continue  # needs the gold count / the world; counted through the report below
        assert row["code"] in _findings(row), row
    assert sum(v for k, v in report.codes.items() if k != "correct") == len(negatives)
    assert sum(report.verified_by.values()) == len(negatives)
    assert {"hitec_wrong_tool_name", "hitec_missing_required", "hitec_invalid_format"} <= set(
        report.operators
    )


def test_kto_is_shuffled_after_unpairing(kto) -> None:
    labels = [r["label"] for r in kto[0]]
    # Paired order would alternate True/False (or put one class first); shuffled, runs break up.
    assert labels != sorted(labels) and labels != sorted(labels, reverse=True)
    assert labels != [i % 2 == 0 for i in range(len(labels))]


def test_rows_carry_provenance_and_a_tools_column() -> None:
    rows, report = build_rows("sft", source="world", seed=3, limit=3, max_tools=3)
    assert report.rows == 3 and report.codes == {"correct": 3}
    for row in rows:
        assert set(row) >= PROVENANCE and row["seed"] == 3 and row["checker_version"].startswith("toolmend-")
        tools = json.loads(row["tools"])
        assert len(tools) == 3 and all(t["type"] == "function" for t in tools)
        assert row["prompt"][0]["role"] == "user" and row["completion"][0]["role"] == "assistant"
    assert build_rows("sft", source="world", seed=3, limit=3, max_tools=3)[0] == rows  # deterministic


def test_refine_keeps_correct_attempts_with_keep_it() -> None:
    rows, _ = build_rows("refine", source="world", seed=0, limit=4, max_tools=3)
    kept = [r for r in rows if r["code"] == "correct"]
    fixed = [r for r in rows if r["code"] != "correct"]
    assert len(kept) == 4 and fixed
    for row in kept:
        assert row["completion"][0]["content"] == KEEP_IT  # no re-typed calls to get wrong
        assert "no problem" in row["prompt"][2]["content"]
    for row in fixed:
        first, feedback = row["prompt"][1]["content"], row["prompt"][2]["content"]
        assert first != row["completion"][0]["content"]
        assert row["prompt"][1]["role"] == "assistant" and row["prompt"][2]["role"] == "user"
        assert "A check of your calls found:" in feedback or row["code"] in {
            "tool_select_error",
            "parameters_value_error",
        }


def test_refine_feedback_is_the_self_refine_strategys_reask() -> None:
    # A refine-trained model must be re-asked at inference in the words it was trained on.
    rows, _ = build_rows("refine", source="world", seed=0, limit=4, max_tools=3)
    for row in rows:
        first, feedback = row["prompt"][-2]["content"], row["prompt"][-1]["content"]
        checker = Checker(load_tools(json.loads(row["tools"])))
        assert feedback == refine_reask(read_reply(first, "tags"), checker)


def test_grounded_refine_feedback_names_wrong_values_and_never_the_golds() -> None:
    rows, report = build_rows("refine", source="world", seed=0, limit=60, max_tools=6, ground=True)
    plain, _ = build_rows("refine", source="world", seed=0, limit=60, max_tools=6)
    assert report.ground and len(rows) == len(plain)
    named = [r for r in rows if "appears nowhere in the conversation" in r["prompt"][-1]["content"]]
    assert named and all(r["completion"][0]["content"] != KEEP_IT for r in named)
    # A gold value the check cannot find (an end time computed from "one hour") is not named.
    tools = [{"name": "event", "parameters": {"type": "object", "properties": {
        "start": {"type": "string"}, "end": {"type": "string"}}}}]  # fmt: skip
    ask = "A one-hour meeting at 10:00, please."
    gold = '<tool_call>\n{"name": "event", "arguments": {"start": "10:00", "end": "11:00"}}\n</tool_call>'
    bad = gold.replace('"10:00"', '"09:00"')
    text = feedback_text(bad, Checker(load_tools(tools)), context=ask, gold=gold)
    assert "'start' is '09:00'" in text and "11:00" not in text
    with pytest.raises(ConfigError, match="ground applies to refine data"):
        build_rows("kto", source="world", seed=0, limit=2, ground=True)


def test_reflect_rows_hold_a_reflection_and_the_gold_for_the_reward() -> None:
    rows, report = build_rows("reflect", source="world", seed=0, limit=4, max_tools=3)
    assert rows and {"missing_call", "redundant_call", "argument_error"} <= set(report.operators)
    for row in rows:
        answer = row["completion"][0]["content"]
        assert answer == row["ground_truth"] and answer.startswith("<reflect>")
        assert parse_calls(answer).calls == [
            ToolCall.model_validate(c) for c in json.loads(row["gold_calls"])
        ]


def test_an_unverifiable_injection_is_rejected() -> None:
    t = load_traces("world", seed=0)[0]
    checker = Checker(t.tools)
    gold = list(t.calls)
    # The "corruption" is the gold itself, claimed to be a missing parameter: nothing can show it.
    fake = Injection(operator="x", family="hitec", label="missing_required", sub_label="x", step=0, seed=0,
                     original=gold[:1], corrupted=gold[:1], calls=gold, description="",
                     expected_codes=["missing_required"])  # fmt: skip
    assert verify_injection(fake, t, checker, None) is None
    # An error the schema cannot see is kept only when the world shows it; the gold never does.
    silent = fake.model_copy(update={"expected_codes": [], "detectable": False})
    gold_state = _fingerprint(t, gold)[1]
    assert verify_injection(silent, t, checker, gold_state) is None
    moved = ToolCall(name="weather_current", arguments={"city": "Nowhere-Town"})
    wrong = silent.model_copy(update={"calls": [moved]})
    assert verify_injection(wrong, t, checker, gold_state) == "world"


@pytest.mark.parametrize("source", ["bfcl", "nestools"])
def test_real_benchmark_sources_build_verified_kto(source: str) -> None:
    rows, report = build_rows("kto", source=source, seed=0, limit=6)
    assert report.traces == 6 and rows
    assert sum(report.verified_by.values()) == sum(1 for r in rows if not r["label"])
    assert all(r["source"] == source for r in rows)


def test_critique_rows_come_from_the_suite_builder() -> None:
    ds, report = build_dataset("critique", source="world", seed=0, limit=6)
    assert len(ds) == report.rows > 0 and "tools" in ds.column_names
    assert set(report.codes) - {"error_free"}


def test_traces_source_and_unknown_kind_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="traces"):
        build_rows("sft", source="traces:/tmp")
    with pytest.raises(ConfigError, match="expected one of"):
        build_rows("dpo")


def test_cli_writes_jsonl_and_report(tmp_path: Path) -> None:
    out = tmp_path / "kto.jsonl"
    result = CliRunner().invoke(app, ["build", "kto", "--limit", "2", "--max-tools", "3", "--out", str(out)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    report = json.loads((tmp_path / "kto.jsonl.report.json").read_text())
    assert len(rows) == report["rows"] and "verified by" in result.output
    bad = CliRunner().invoke(app, ["build", "sft", "--source", "nope", "--out", str(out)])
    assert bad.exit_code == 2 and "unknown trajectory source" in bad.output
    grounded = CliRunner().invoke(app, ["build", "refine", "--limit", "2", "--ground", "--out", str(out)])
    assert grounded.exit_code == 0 and json.loads((tmp_path / "kto.jsonl.report.json").read_text())["ground"]
    bad = CliRunner().invoke(app, ["build", "kto", "--limit", "2", "--ground", "--out", str(out)])
    assert bad.exit_code == 2 and "ground applies to refine data" in bad.output
