"""The parsers on real benchmark data from ../shared/data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolmend._schema import Ref, ToolCall
from toolmend.formats import (
    calls_from_nestools,
    parse_calls,
    parse_nestools_calls,
    write_calls,
    write_python_calls,
)
from toolmend.formats._nestools import PLACEHOLDER


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _placeholders(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if PLACEHOLDER.fullmatch(value) else []
    if isinstance(value, list):
        return [p for v in value for p in _placeholders(v)]
    if isinstance(value, dict):
        return [p for v in value.values() for p in _placeholders(v)]
    return []


def _refs(value: Any) -> list[str]:
    if isinstance(value, Ref):
        return [value.target]
    if isinstance(value, list):
        return [t for v in value for t in _refs(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _refs(v)]
    return []


def test_every_nestools_gold_chain(data_dir: Path) -> None:
    records = _jsonl(data_dir / "nestools" / "test_data.jsonl")
    assert len(records) == 1000
    n_refs = 0
    for rec in records:
        r = calls_from_nestools(rec["call"])
        assert r.findings == [], (rec["test_id"], r.findings)
        assert [c.name for c in r.calls] == [c["api_name"] for c in rec["call"]]
        bound: set[str] = set()
        for call, raw in zip(r.calls, rec["call"], strict=True):
            assert call.outputs == raw["responses"]
            expected = [p for v in raw["parameters"].values() for p in _placeholders(v)]
            got = [t for v in call.arguments.values() for t in _refs(v)]
            assert got == expected
            # No placeholder survives as a plain string, and every ref points to an earlier output.
            assert not any(isinstance(v, str) and PLACEHOLDER.fullmatch(v) for v in call.arguments.values())
            assert set(got) <= bound, rec["test_id"]
            bound.update(call.outputs)
            n_refs += len(got)
        # The gold chain written back in the gold style reads back identically, also as Python repr.
        text = write_calls(r.calls, "nestools", responses="list")
        assert parse_nestools_calls(text).calls == r.calls
        assert parse_calls(repr(rec["call"])).calls == r.calls
    assert n_refs >= 1746  # 1739 bare placeholders + those inside the 7 lists (notes §2.2)


BFCL = ["simple_python", "multiple", "parallel", "parallel_multiple", "live_simple"]


def _first_choice(answer: dict[str, dict[str, list[Any]]]) -> ToolCall:
    [(name, params)] = answer.items()
    args = {k: v[0] for k, v in params.items() if v and v[0] != ""}
    return ToolCall(name=name, arguments=args)


@pytest.mark.parametrize("category", BFCL)
def test_bfcl_possible_answers_as_python_call_strings(data_dir: Path, category: str) -> None:
    rows = _jsonl(data_dir / "bfcl" / "possible_answer" / f"BFCL_v4_{category}.json")
    assert rows
    for row in rows:
        calls = [_first_choice(a) for a in row["ground_truth"]]
        text = write_python_calls(calls)
        r = parse_calls(text)
        assert r.format == "python" and r.ok and r.findings == [], (row["id"], text, r.findings)
        assert r.calls == calls, row["id"]
        # The same answer as BFCL's prompt format without brackets and with spaces stripped at the ends.
        assert parse_calls(f"  {write_python_calls(calls, brackets=False)}\n").calls == calls


def test_tool_reflection_bench_ground_truths_and_history(data_dir: Path) -> None:
    rows = _jsonl(data_dir / "tool-reflection-bench" / "test_qwen_sample.jsonl")
    assert len(rows) == 110
    quoted_final = 0
    for i, row in enumerate(rows):
        gt = parse_calls(row["ground_truth"])
        assert gt.format == "tags" and gt.ok, (i, gt.findings)
        assert gt.calls and gt.reflect
        # In this sample every <final> sits inside <reflect>, which is opaque text.
        assert gt.final is None
        quoted_final += "<final>" in (gt.reflect or "")
        for msg in row["messages"]:
            if msg["role"] == "assistant":
                turn = parse_calls(msg["content"])
                assert turn.format == "tags" and turn.ok and turn.calls, (i, turn.findings)
    assert quoted_final == 5  # the README's count of ground truths that contain a <final> block
