"""API-Bank level-1 loader and benchmark over the real shared dialogues."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolmend._errors import DatasetError
from toolmend._schema import Sample
from toolmend.benchmarks import BENCHMARKS
from toolmend.benchmarks._apibank import ApiBank, load_api_bank


@pytest.fixture(scope="module")
def samples(data_dir: Path) -> list[Sample]:
    return ApiBank().load(data_dir / "api-bank")


def test_one_sample_per_api_line(samples: list[Sample]) -> None:
    assert len(samples) == 389
    assert len({s.id for s in samples}) == len(samples)
    assert len({c.name for s in samples for c in s.target}) == 49
    levels = {s.metadata["level"] for s in samples}
    assert levels == {1, 2}


def test_history_holds_earlier_calls_and_results(samples: list[Sample]) -> None:
    second = next(s for s in samples if s.id == "AddAlarm-level-1-1#1")
    assert second.target[0].name == "AddAlarm"
    roles = [m.role for m in second.messages]
    assert roles[0] == "user" and roles.count("tool") == 1
    at = roles.index("tool")
    assert second.messages[at - 1].tool_calls[0].name == "GetUserToken"
    assert json.loads(second.messages[at].content)["output"] == {"token": "z9x8c7v6b5n4m3q2w1"}
    assert {t.name for t in second.tools} == {"GetUserToken", "AddAlarm"}
    assert second.tools[0].required  # every API-Bank input parameter is required


def test_first_only(data_dir: Path) -> None:
    first = load_api_bank(data_dir / "api-bank", first_only=True)
    assert all(s.metadata["step"] == 0 for s in first) and len(first) < 389


def test_gold_fed_back_scores_100_json_and_call_syntax(samples: list[Sample]) -> None:
    bench = BENCHMARKS.get("api-bank")()

    def as_json(s: Sample) -> str:
        return json.dumps([{"name": c.name, "arguments": c.arguments} for c in s.target])

    def as_python(s: Sample) -> str:
        return (
            "["
            + ", ".join(
                f"{c.name}({', '.join(f'{k}={v!r}' for k, v in c.arguments.items())})" for c in s.target
            )
            + "]"
        )

    for mode in ("compat", "improved"):
        for render in (as_json, as_python):
            agg = bench.aggregate([bench.score(s, render(s), mode) for s in samples], mode)
            assert all(agg[k] == 1.0 for k in ("f1_name", "f1_name_param", "accuracy", "overlap")), agg


def test_bad_dialogue_line(tmp_path: Path, data_dir: Path) -> None:
    (tmp_path / "api_descriptions.json").write_text((data_dir / "api-bank/api_descriptions.json").read_text())
    (tmp_path / "X-level-1-1.jsonl").write_text(
        '{"role": "User", "text": "hi"}\n{"role": "Robot", "text": "?"}\n'
    )
    with pytest.raises(DatasetError, match=r"X-level-1-1.jsonl, line 2, field 'role'"):
        load_api_bank(tmp_path)
    (tmp_path / "X-level-1-1.jsonl").write_text('{"role": "API", "api_name": "Nope", "param_dict": {}}\n')
    with pytest.raises(DatasetError, match=r"line 1, field 'api_name': API 'Nope' has no description"):
        load_api_bank(tmp_path)
