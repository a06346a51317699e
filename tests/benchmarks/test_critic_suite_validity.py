"""Built critique suites cannot leak gold: not into prompts (CoT or not), not into a critic's replies."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from toolmend.bench import run_bench
from toolmend.benchmarks.critic import build_suite
from toolmend.benchmarks.critic.build import SuiteInfo
from toolmend.runs.frame import load_run


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> SuiteInfo:
    return build_suite("world", seed=0, out=tmp_path_factory.mktemp("suite"), limit=80)


def _strings(value: Any) -> set[str]:
    """Every scalar of ``value`` as it would be written in a JSON prompt."""
    if isinstance(value, dict):
        return {s for v in value.values() for s in _strings(v)}
    if isinstance(value, list):
        return {s for v in value for s in _strings(v)}
    return {value if isinstance(value, str) else json.dumps(value)}


def _distinguishing(gold: dict[str, Any], wrong: dict[str, Any]) -> set[str]:
    """What tells the gold call apart from the corrupted one: its tool name, if another, and the
    values of the arguments on which they differ (short ones say too little to count)."""
    out = {gold["name"]} | _strings(gold["args"])
    return {s for s in out - {wrong["name"]} - _strings(wrong["args"]) if len(s) >= 4}


def _contains(text: str, value: str) -> bool:
    return re.search(r"(?<![\w.])" + re.escape(value) + r"(?![\w])", text) is not None


@pytest.mark.parametrize("cot", [False, True])
def test_no_prompt_shows_what_only_the_gold_call_has(suite: SuiteInfo, cot: bool) -> None:
    name = "base_data_w_cot.json" if cot else "base_data_wo_cot.json"
    records = json.loads((suite.root / "internal_error" / name).read_text())
    checked = 0
    for rid, record in records.items():
        if not record["error_type"]:
            continue
        messages = record["query_prompt"]
        # What the critic is told outside the calls: the request and the tools' responses.
        task = "\n".join(m["content"] for m in messages[1:] if m["role"] != "assistant")
        wrong = json.loads(messages[-2]["content"])  # the corrupted call, as the critic sees it
        written = "\n".join(m["content"] for m in messages[2:] if m["role"] == "assistant")
        for value in _distinguishing(record["ground_truth"], wrong):
            if _contains(task, value):
                continue
            assert not _contains(written, value), (rid, value, wrong)
        checked += 1
    assert checked > 40


def test_the_leak_check_catches_a_gold_thought(suite: SuiteInfo) -> None:
    """The check above fails on the old builder's output: the gold step's thought on the bad call."""
    records = json.loads((suite.root / "internal_error" / "base_data_w_cot.json").read_text())
    record = next(r for r in records.values() if r["error_type"] == "tool_select_error")
    gold = record["ground_truth"]
    wrong = json.loads(record["query_prompt"][-2]["content"])
    leaked = json.dumps({"thought": gold["thought"], "name": wrong["name"], "args": wrong["args"]})
    assert gold["name"] in _distinguishing(gold, wrong)
    assert _contains(leaked, gold["name"])


def _decoy(root: Path, out: Path) -> Path:
    """A copy of the suite whose gold answers, labels and build notes are wrong."""
    shutil.copytree(root, out)
    for path in out.rglob("*_data_*_cot.json"):
        records = json.loads(path.read_text())
        for record in records.values():
            decoy = {"name": "decoy_tool", "args": {"decoy": 1}, "thought": "decoy"}
            if "error_type" in record:
                record["ground_truth"], record["error_type"] = decoy, "tool_select_error"
            else:
                # The failed call stays: it is in the prompt already, and the benchmark's retry
                # loop (not the critic) compares replies with it to decide whether to go on.
                record["ground_truth"] = [record["ground_truth"][0], decoy]
            record["toolmend"] = {}
        path.write_text(json.dumps(records))
    return out


def test_checklist_critic_replies_do_not_depend_on_gold(suite: SuiteInfo, tmp_path: Path) -> None:
    decoy = _decoy(suite.root, tmp_path / "decoy")
    replies = []
    for data in (suite.root, decoy):
        result = run_bench(
            "critictool", "checklist", data=data, runs_dir=tmp_path / "runs", cache=False,
            progress=False,
        )  # fmt: skip
        run = load_run(result.run_dir)
        replies.append({r.id: r.outputs for r in run.records})
    real, fake = replies
    assert len(real) > 100 and real == fake
