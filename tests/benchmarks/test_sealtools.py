"""Seal-Tools loader and benchmark over the real shared test sets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolmend._errors import ConfigError, DatasetError
from toolmend._schema import Ref, Sample
from toolmend.benchmarks import BENCHMARKS
from toolmend.benchmarks._sealtools import SealTools, load_seal_tools


def _reply(sample: Sample) -> str:
    calls = [
        {
            "name": c.name,
            "arguments": {k: str(v) if isinstance(v, Ref) else v for k, v in c.arguments.items()},
        }
        for c in sample.target
    ]
    return json.dumps(calls)


@pytest.fixture(scope="module")
def samples(data_dir: Path) -> list[Sample]:
    return SealTools().load(data_dir / "seal-tools")


def test_loads_every_record_with_its_tools(samples: list[Sample]) -> None:
    assert len(samples) == 700 + 654
    assert len({s.id for s in samples}) == len(samples)  # `toolmend score` keys predictions by id
    first = samples[0]
    assert first.id == "test_in_domain-easy-0" and first.messages[0].content.startswith("Retrieve")
    assert [t.name for t in first.tools] == ["getPostmodernTheory"]
    net = samples[1]
    assert net.target[0].arguments == {"revenue": 0.2907590418481535, "expenses": "40.7"}
    assert net.tools[0].properties["revenue"]["x-original-type"] in ("float", "int", "str")
    nested = [s for s in samples if any(isinstance(v, Ref) for c in s.target for v in c.arguments.values())]
    assert 30 <= len(nested) <= 80
    assert all(c.outputs for s in nested for c in s.target)


def test_single_tool_subset_is_hitecs_294(data_dir: Path) -> None:
    single = load_seal_tools(data_dir / "seal-tools", subset="single")
    assert len(single) == 294 and all(len(s.target) == 1 for s in single)
    assert len(load_seal_tools(data_dir / "seal-tools", split="out_domain")) == 654
    with pytest.raises(ConfigError):
        load_seal_tools(data_dir / "seal-tools", split="dev")  # type: ignore[arg-type]


def test_gold_fed_back_scores_100_in_both_modes(samples: list[Sample]) -> None:
    bench = BENCHMARKS.get("seal-tools")()
    for mode in ("compat", "improved"):
        agg = bench.aggregate([bench.score(s, _reply(s), mode) for s in samples], mode)
        assert all(agg[k] == 1.0 for k in ("f1_name", "f1_name_param", "accuracy", "overlap", "format")), agg


def test_wrong_reply_scores(samples: list[Sample]) -> None:
    bench = SealTools()
    s = samples[1]
    half = json.dumps(
        [{"name": "calculateNetIncome", "arguments": {"revenue": 0.2907590418481535, "expenses": 1}}]
    )
    v = bench.score(s, half).values
    assert (v["f1_name"], v["f1_name_param"], v["accuracy"]) == (1.0, 0.5, 0.0)
    assert v["overlap"] == pytest.approx(1 / 3)
    bad = bench.score(s, "I would call calculateNetIncome").values
    assert (bad["format"], bad["f1_name"], bad["overlap"]) == (0.0, 0.0, 0.0)
    assert "calculateNetIncome" in bench.prompt(s)[0].content


def test_bad_record_names_file_and_line(tmp_path: Path, data_dir: Path) -> None:
    (tmp_path / "tool.jsonl").write_text(
        (data_dir / "seal-tools/tool.jsonl").read_text().splitlines()[0] + "\n"
    )
    (tmp_path / "test_in_domain.jsonl").write_text('{"id": "x", "query": "q", "calling": [{"api": 3}]}\n')
    with pytest.raises(DatasetError, match=r"test_in_domain.jsonl, line 1, field 'calling\[0\]'"):
        load_seal_tools(tmp_path, split="in_domain")
    (tmp_path / "test_in_domain.jsonl").write_text(
        '{"id": "x", "query": "q", "calling": [{"api": "nope"}]}\n'
    )
    with pytest.raises(DatasetError, match="not in tool.jsonl: nope"):
        load_seal_tools(tmp_path, split="in_domain")
