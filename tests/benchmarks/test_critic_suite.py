"""The critique suite builder: official layout, loader/scorer round trip, labels, determinism."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolmend._errors import ConfigError
from toolmend._schema import Sample, Tool, ToolCall
from toolmend.benchmarks.critic import build_suite
from toolmend.benchmarks.critic._build import SuiteInfo
from toolmend.benchmarks.critic._record import system_prompt, tool_entry
from toolmend.benchmarks.critictool import CriticToolBenchmark
from toolmend.benchmarks.critictool._scoring import gold_actions
from toolmend.check import Checker
from toolmend.formats._critictool import CATEGORIES, parse_tool_list
from toolmend.formats._tools import load_tools
from toolmend.world import WORLD_TOOLS


def _exact(a: str, b: str) -> float:
    return 1.0 if a == b else 0.0


@pytest.fixture(scope="module")
def world_suite(tmp_path_factory: pytest.TempPathFactory) -> SuiteInfo:
    return build_suite("world", seed=0, out=tmp_path_factory.mktemp("suite"))


@pytest.fixture(scope="module")
def samples(world_suite: SuiteInfo) -> list[Sample]:
    return CriticToolBenchmark(similarity=_exact).load(world_suite.root)


def test_layout_and_counts(world_suite: SuiteInfo) -> None:
    names = sorted(str(p.relative_to(world_suite.root)) for p in world_suite.files)
    assert names == [
        "external_error/base_data_w_cot.json",
        "external_error/base_data_wo_cot.json",
        "internal_error/base_data_w_cot.json",
        "internal_error/base_data_wo_cot.json",
    ]
    assert set(world_suite.internal) == {*CATEGORIES, "error_free"}
    assert set(world_suite.external) == {
        "timeout", "rate_limit", "permission_denied", "service_unavailable", "connection_reset",
    }  # fmt: skip
    data = json.loads((world_suite.root / "internal_error/base_data_wo_cot.json").read_text())
    assert len(data) == sum(world_suite.internal.values())
    for record in data.values():
        system = record["query_prompt"][0]["content"]
        assert "Remember: only generate ONE step each time." in system
        assert record["query_prompt"][-1]["role"] == "function"


def test_loads_and_gold_scores_100(samples: list[Sample]) -> None:
    bench = CriticToolBenchmark(similarity=_exact)
    assert {s.metadata["part"] for s in samples} == {"internal", "external"}
    scores = [bench.score(s, bench.gold(s)) for s in samples]
    metrics = bench.aggregate(scores)
    for key in (
        "detect",
        "category",
        "tool",
        "args",
        "retry",
        "break",
        "skip_finish_tool",
        "skip_finish_args",
    ):
        assert metrics[key] == pytest.approx(100.0), key
    assert metrics["overall"] == pytest.approx(100.0)


def test_cot_files_carry_thoughts(world_suite: SuiteInfo) -> None:
    bench = CriticToolBenchmark(similarity=_exact)
    cot = bench.load(world_suite.root, cot=True)
    assert all(gold_actions(s)[0].get("thought") for s in cot)
    metrics = bench.aggregate([bench.score(s, bench.gold(s)) for s in cot])
    assert metrics["thought"] == pytest.approx(100.0)


async def test_always_repeating_model_retries_but_never_breaks(samples: list[Sample]) -> None:
    bench = CriticToolBenchmark(similarity=_exact)
    external = [s for s in samples if s.metadata["part"] == "external"]

    def stubborn(sample: Sample):  # type: ignore[no-untyped-def]
        failed = gold_actions(sample)[0]

        async def generate(messages: object) -> str:
            return json.dumps({"name": failed["name"], "args": failed["args"]})

        return generate

    scores = [bench.score(s, await bench.solve(s, stubborn(s))) for s in external]
    metrics = bench.aggregate(scores)
    assert metrics["retry"] == 100.0
    assert metrics["break"] == 0.0


def test_every_injection_is_labelled_and_schema_errors_are_flagged(world_suite: SuiteInfo) -> None:
    data = json.loads((world_suite.root / "internal_error/base_data_wo_cot.json").read_text())
    flagged = 0
    for rid, record in data.items():
        meta = record["toolmend"]
        if not record["error_type"]:
            continue
        label = {"tool_selection": "tool_select_error", "tool_hallucination": "tool_hallucination_error",
                 "parameter_key": "parameters_key_error", "parameter_value": "parameters_value_error"}  # fmt: skip
        assert record["error_type"] == label[meta["operator"]], rid
        if not meta["detectable"]:
            continue
        # What the critic sees: the tool list read back from the prompt, the call from the history.
        tools = load_tools(parse_tool_list(record["query_prompt"][0]["content"]), dialect="critictool")
        wrong = json.loads(record["query_prompt"][-2]["content"])
        codes = {
            f.code for f in Checker(tools).check_call(ToolCall(name=wrong["name"], arguments=wrong["args"]))
        }
        assert codes & set(meta["expected_codes"]), (rid, codes, meta)
        flagged += 1
    assert flagged > 100


def test_same_seed_same_bytes_different_seed_differs(tmp_path: Path) -> None:
    a = build_suite("world", seed=3, out=tmp_path / "a", limit=20)
    b = build_suite("world", seed=3, out=tmp_path / "b", limit=20)
    c = build_suite("world", seed=4, out=tmp_path / "c", limit=20)
    for fa, fb, fc in zip(a.files, b.files, c.files, strict=True):
        assert fa.read_bytes() == fb.read_bytes()
        assert fa.read_bytes() != fc.read_bytes()


def test_tool_entry_types_round_trip_for_the_scorer() -> None:
    tools = WORLD_TOOLS.tools
    back = load_tools(parse_tool_list(system_prompt(tools) + ""), dialect="critictool")
    assert [t.name for t in back] == [t.name for t in tools]
    for before, after in zip(tools, back, strict=True):
        assert set(before.properties) == set(after.properties)
        assert set(before.required) == set(after.required)
        for key, schema in before.properties.items():
            assert after.properties[key].get("type") == schema.get("type"), (before.name, key)
    entry = tool_entry(Tool(name="f", parameters={"type": "object", "properties": {"o": {"type": "object"}}}))
    assert entry["optional_parameters"][0]["type"] == "dict"


@pytest.mark.parametrize("source", ["nestools", "bfcl"])
def test_other_sources_build_and_round_trip(source: str, data_dir: Path, tmp_path: Path) -> None:
    info = build_suite(source, seed=0, out=tmp_path, limit=12, data=data_dir / source)
    assert sum(info.internal.values()) >= 10
    bench = CriticToolBenchmark(similarity=_exact)
    loaded = bench.load(tmp_path)
    metrics = bench.aggregate([bench.score(s, bench.gold(s)) for s in loaded])
    assert metrics["detect"] == 100.0 and metrics["args"] == 100.0


def test_domain_tools_offer_each_world_trajectory_a_few_tools(tmp_path: Path) -> None:
    info = build_suite("world", seed=0, out=tmp_path, limit=12, tools="domain", distractors=2)
    assert info.tools == "domain" and sum(info.internal.values()) >= 10
    data = json.loads((tmp_path / "internal_error/base_data_wo_cot.json").read_text())
    for record in data.values():
        offered = {t["name"] for t in parse_tool_list(record["query_prompt"][0]["content"])}
        # A wrong-tool step may call a tool from outside the offered list; every gold step may not.
        assert 3 <= len(offered) < len(WORLD_TOOLS.tools)
    bench = CriticToolBenchmark(similarity=_exact)
    loaded = bench.load(tmp_path)
    metrics = bench.aggregate([bench.score(s, bench.gold(s)) for s in loaded])
    assert metrics["detect"] == 100.0 and metrics["args"] == 100.0 and metrics["overall"] == 100.0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"tools": "some"}, "tools must be all or domain"),
        ({"tools": "domain", "distractors": -1}, "distractors must be at least 0"),
        ({"source": "bfcl", "tools": "domain"}, "bfcl samples offer their own"),
    ],
)
def test_domain_tools_bad_options_are_config_errors(
    kwargs: dict[str, object], message: str, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError, match=message):
        build_suite(**{"source": "world", "out": tmp_path, "limit": 2, **kwargs})  # type: ignore[arg-type]
