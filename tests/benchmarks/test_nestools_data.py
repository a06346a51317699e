"""NesTools loader on the real files, and its errors on broken ones."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from toolmend._errors import DatasetError
from toolmend._schema import Ref
from toolmend.benchmarks.nestools import load_nestools
from toolmend.benchmarks.nestools._data import gold_chain, official_depth, to_official_output


@pytest.fixture(scope="module")
def samples(data_dir: Path) -> list:
    return load_nestools(data_dir / "nestools")


def test_real_data_loads_with_the_published_statistics(samples: list) -> None:
    assert len(samples) == 1000
    assert Counter(len(s.target) for s in samples) == {2: 84, 3: 830, 4: 53, 5: 32, 6: 1}
    assert Counter(s.metadata["depth"] for s in samples) == {1: 170, 2: 458, 3: 354, 4: 17, 5: 1}
    assert sum(len(c.arguments) for s in samples for c in s.target) == 7286
    assert len({i for s in samples for i in s.metadata["api_ids"]}) == 3034
    # tests 57 and 195 call one tool twice
    twice = [s.id for s in samples if len(s.target) == len(s.tools) + 1]
    assert twice == ["57", "195"]


def test_first_sample_is_converted_faithfully(samples: list) -> None:
    s = samples[0]
    assert s.id == "1" and s.metadata["api_ids"] == [9031, 10894, 1163]
    assert [t.metadata["api_id"] for t in s.tools] == [9031, 10894, 1163]
    assert s.messages[0].role == "user" and s.messages[0].content.startswith("Scan the ISBN")
    first, second, third = s.target
    assert first.outputs == ["API_call_0", "API_call_1"]
    assert first.output_fields == ["book_details", "availability"]
    assert second.arguments == {"book_info": Ref(target="API_call_0")}
    assert third.arguments["exact_location"] == Ref(target="API_call_2")
    chain = gold_chain(s)
    assert chain[1] == {
        "api_name": "locate_book",
        "api_id": 10894,
        "parameters": {"book_info": "API_call_0"},
        "responses": ["API_call_2"],
    }
    written = json.loads(to_official_output(s))
    assert written[0]["responses"] == {"book_details": "API_call_0", "availability": "API_call_1"}


def test_gold_round_trips_through_refs(data_dir: Path, samples: list) -> None:
    raw = [json.loads(line) for line in (data_dir / "nestools" / "test_data.jsonl").open()]
    for record, sample in zip(raw, samples, strict=True):
        assert [c["parameters"] for c in record["call"]] == [c["parameters"] for c in gold_chain(sample)]
    nested_lists = [
        v
        for s in samples
        for c in s.target
        for v in c.arguments.values()
        if isinstance(v, list) and any(isinstance(x, Ref) for x in v)
    ]
    assert len(nested_lists) == 7


def test_official_depth_quirks() -> None:
    # own outputs count, and API_call_1 "occurs" inside API_call_10
    assert official_depth([{"parameters": {"a": "API_call_0"}, "responses": ["API_call_0"]}]) == 2
    calls = [{"parameters": {}, "responses": [f"API_call_{i}" for i in range(2)]}]
    calls.append({"parameters": {"x": "API_call_10"}, "responses": []})
    assert official_depth(calls) == 2


def _write(tmp: Path, data: list[str], ids: list[str]) -> Path:
    (tmp / "test_data.jsonl").write_text("\n".join(data) + "\n")
    (tmp / "test_api_ids.jsonl").write_text("\n".join(ids) + "\n")
    return tmp


GOOD = json.dumps(
    {
        "test_id": 1,
        "api": [
            {
                "api_name": "f",
                "api_description": "d",
                "parameters": {"a": {"type": "str"}},
                "required": ["a"],
                "responses": {},
            }
        ],
        "task": "t",
        "call": [{"api_name": "f", "parameters": {"a": "x"}, "responses": []}],
    }
)


def test_broken_files_name_file_line_and_field(tmp_path: Path) -> None:
    ok_ids = json.dumps({"test_id": 1, "api_ids": [5]})
    assert load_nestools(_write(tmp_path, [GOOD], [ok_ids]))[0].metadata["api_ids"] == [5]
    with pytest.raises(DatasetError, match=r"test_data.jsonl, line 2: not valid JSON"):
        load_nestools(_write(tmp_path, [GOOD, "{oops"], [ok_ids]))
    with pytest.raises(DatasetError, match=r"line 1, field 'api': test 1: 2 api_ids for 1 tools"):
        load_nestools(_write(tmp_path, [GOOD], [json.dumps({"test_id": 1, "api_ids": [5, 6]})]))
    with pytest.raises(DatasetError, match="has no line in test_api_ids.jsonl"):
        load_nestools(_write(tmp_path, [GOOD], [json.dumps({"test_id": 2, "api_ids": [5]})]))
    with pytest.raises(DatasetError, match=r"field 'api_ids': expected every api id to be an integer"):
        load_nestools(_write(tmp_path, [GOOD], [json.dumps({"test_id": 1, "api_ids": ["5"]})]))
    bad_call = GOOD.replace('"call": [{"api_name": "f"', '"call": [{"api_name": "g"')
    with pytest.raises(DatasetError, match=r"field 'call\[0\]': api_name 'g' is not one of"):
        load_nestools(_write(tmp_path, [bad_call], [ok_ids]))
    no_task = GOOD.replace('"task": "t"', '"task": 3')
    with pytest.raises(DatasetError, match=r"field 'task': expected the task text, got int"):
        load_nestools(_write(tmp_path, [no_task], [ok_ids]))
    with pytest.raises(DatasetError, match="cannot read"):
        load_nestools(tmp_path / "missing")
