"""Which source builds which kind: NesTools for sft / refine / reflect (its gold verified, its
corruptions verified by the parser or checklist only, since its tools cannot run), and one clear
error for a combination that cannot be built."""

from __future__ import annotations

import json

import pytest

from toolmend._errors import ConfigError
from toolmend._schema import ToolCall
from toolmend.check import Checker
from toolmend.formats import load_tools, parse_calls
from toolmend.train import KINDS, SOURCE_KINDS, build_rows
from toolmend.train._data import KEEP_IT


def _gold(row: dict) -> list[ToolCall]:
    return [ToolCall.model_validate(c) for c in json.loads(row["gold_calls"])]


def test_nestools_sft_targets_are_the_verified_gold() -> None:
    rows, report = build_rows("sft", source="nestools", limit=6)
    # One row per turn: each trace's first reply, then one per later turn of dependent calls.
    assert report.rows == len(rows) == sum(report.turns.values())
    assert report.turns["0"] == 6 - report.dropped.get("gold_failed", 0) > 0 and len(report.turns) > 1
    for row in rows:
        calls = parse_calls(row["completion"][0]["content"]).calls
        assert [c.model_dump(exclude={"id", "outputs", "output_fields"}) for c in calls] == [
            c.model_dump(exclude={"id", "outputs", "output_fields"}) for c in _gold(row)
        ]
        assert not Checker(load_tools(json.loads(row["tools"]))).check(calls, expected_count=len(calls))
        assert row["source"] == "nestools" and row["trace_id"].startswith("nestools-")


def test_nestools_refine_rows_are_verified_without_execution() -> None:
    rows, report = build_rows("refine", source="nestools", limit=6)
    keep = [r for r in rows if r["code"] == "correct"]
    fixes = [r for r in rows if r["code"] != "correct"]
    assert keep and fixes
    assert all(r["completion"][0]["content"].startswith(KEEP_IT) for r in keep)
    # NesTools tools have no implementation: only the parser or the checklist can verify a label.
    assert set(report.verified_by) <= {"parser", "checker"}
    assert {r["verified_by"] for r in fixes} <= {"parser", "checker"}
    for row in fixes:
        assert parse_calls(row["completion"][0]["content"]).calls  # the refined turn is the gold
        # The feedback is what self-refine sees at inference, which has no gold call count.
        found = "A check of your calls found:" in row["prompt"][-1]["content"]
        assert row["prompt"][-1]["role"] == "user" and (found or row["code"] == "wrong_tool_count")


def test_nestools_reflect_rows() -> None:
    rows, _ = build_rows("reflect", source="nestools", limit=4)
    assert rows and all(r["completion"][0]["content"].startswith("<reflect>") for r in rows)


def test_the_support_matrix_is_what_build_rows_does() -> None:
    assert SOURCE_KINDS["nestools"] == SOURCE_KINDS["world"] == KINDS
    assert SOURCE_KINDS["traces:DIR"] == ("sft", "kto", "refine")
    for kind in set(KINDS) - set(SOURCE_KINDS["traces:DIR"]):
        with pytest.raises(ConfigError, match=f"{kind} needs gold trajectories"):
            build_rows(kind, source="traces:/nowhere")
