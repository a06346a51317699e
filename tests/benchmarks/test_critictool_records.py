"""Loading the official CriticTool layout into Samples (fixture records written to the schema)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolmend._errors import ConfigError, DatasetError
from toolmend.benchmarks import BENCHMARKS
from toolmend.benchmarks.critictool import CriticToolBenchmark, load_critictool
from toolmend.benchmarks.critictool._records import data_file, load_critictool_file
from toolmend.formats._critictool import parse_tool_list

FIXTURES = Path(__file__).parent / "fixtures" / "critictool"


def test_registered_by_name() -> None:
    assert BENCHMARKS.get("critictool") is CriticToolBenchmark


def test_internal_base_file() -> None:
    samples = load_critictool_file(data_file(FIXTURES, "internal", "base", cot=False))
    assert len(samples) == 8
    first = samples[0]
    assert first.id == "base-internal-int_select_01"
    meta = first.metadata
    assert (meta["part"], meta["error_type"], meta["cot"], meta["variant"]) == (
        "internal",
        "tool_select_error",
        False,
        "base",
    )
    assert meta["raw"]["error_type"] == "tool_select_error"
    assert [m.role for m in first.messages] == ["system", "user", "assistant", "tool"]
    assert first.messages[-1].name == "Weather.current"
    assert first.target[0].name == "Weather.forecast"
    assert first.target[0].arguments == {"city": "Lisbon", "days": 3}
    free = [s for s in samples if s.metadata["error_type"] is None]
    assert len(free) == 3


def test_tools_are_parsed_from_the_system_prompt() -> None:
    sample = load_critictool_file(data_file(FIXTURES, "internal", "base", cot=False))[0]
    names = [t.name for t in sample.tools]
    assert names[:2] == ["Mail.send", "Mail.list_inbox"]
    forecast = sample.tool("Weather.forecast")
    assert forecast is not None and forecast.required == ["city", "days"]
    # The dialect's own type name survives for the compat scorer's type table.
    assert forecast.properties["days"] == {
        "type": "number",
        "x-original-type": "NUMBER",
        "description": "number of days",
    }


def test_python_literal_tool_list_and_stringified_history_args() -> None:
    samples = load_critictool_file(data_file(FIXTURES, "internal", "evol", cot=False))
    assert samples[0].id == "evol-internal-intev_key_01"
    assert len(samples[0].tools) == 6
    # The history call's args were a stringified dict: the tool message still gets its name.
    assert samples[0].messages[-1].name == "Mail.send"


def test_external_records_become_one_sample_per_mode() -> None:
    samples = load_critictool_file(data_file(FIXTURES, "external", "base", cot=False))
    assert [s.id for s in samples[:2]] == ["base-skip-ext_next_01", "base-finish-ext_next_01"]
    finish = next(s for s in samples if s.id == "base-skip-ext_finish_01")
    assert finish.target[1].name == "FinishAction"
    assert finish.target[1].arguments == {"answer": finish.metadata["gold"][1]["args"]}
    assert (
        len(load_critictool_file(data_file(FIXTURES, "external", "base", cot=False), external_modes=["skip"]))
        == 3
    )


def test_cot_files_keep_thoughts() -> None:
    samples = load_critictool(FIXTURES, cot=True)
    assert all(s.metadata["cot"] for s in samples)
    assert samples[0].metadata["gold"][0]["thought"] == "Get the two-day forecast for Quito."


def test_benchmark_load_options() -> None:
    bench = CriticToolBenchmark()
    assert len(bench.load(FIXTURES)) == 8 + 3 * 2
    assert len(bench.load(FIXTURES, variant="all")) == 8 + 3 * 2 + 2 + 1 * 2
    assert len(bench.load(FIXTURES, split="internal", variant="evol")) == 2
    single = FIXTURES / "external_error" / "base_data_w_cot.json"
    assert all(s.metadata["cot"] for s in bench.load(single))
    with pytest.raises(ConfigError, match="split"):
        bench.load(FIXTURES, split="train")
    with pytest.raises(ConfigError, match="shuffle"):
        bench.load(FIXTURES, shuffle=True)


def test_missing_file_names_the_expected_path(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"internal_error/base_data_wo_cot\.json.*huggingface-cli"):
        load_critictool(tmp_path)


def test_parse_tool_list() -> None:
    assert parse_tool_list("x\n[{'name': 'A'}]\nTo use a tool ...") == [{"name": "A"}]
    for bad in ["no list here\nTo use a tool", "[1, 2", "[oops]\nTo use a tool", "{'a': 1}\nTo use a tool"]:
        with pytest.raises(ValueError):
            parse_tool_list(bad)


def _write(tmp_path: Path, data: object, part: str = "internal") -> Path:
    path = tmp_path / f"{part}_error" / "base_data_wo_cot.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return path


def _record() -> dict[str, object]:
    fixture = json.loads((FIXTURES / "internal_error" / "base_data_wo_cot.json").read_text(encoding="utf-8"))
    return dict(fixture["int_value_01"])


def test_bad_json_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "internal_error" / "base_data_wo_cot.json"
    path.parent.mkdir()
    path.write_text('{"a": {\n"query_prompt": [,]}}', encoding="utf-8")
    with pytest.raises(DatasetError) as info:
        load_critictool_file(path)
    assert info.value.path == str(path) and info.value.line == 2


def test_top_level_must_be_an_object(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="one JSON object"):
        load_critictool_file(_write(tmp_path, [_record()]))


def test_bad_role_points_at_record_line_and_field(tmp_path: Path) -> None:
    good, bad = _record(), _record()
    bad["query_prompt"] = [*bad["query_prompt"][:1], {"role": "narrator", "content": "hi"}]  # type: ignore[index]
    path = _write(tmp_path, {"ok_1": good, "bad_2": bad})
    with pytest.raises(DatasetError) as info:
        load_critictool_file(path)
    err = info.value
    assert err.field == "bad_2.query_prompt[1].role"
    assert err.line is not None and path.read_text().splitlines()[err.line - 1].strip().startswith('"bad_2"')
    assert "narrator" in str(err)


def test_missing_tool_list(tmp_path: Path) -> None:
    rec = _record()
    rec["query_prompt"] = [{"role": "system", "content": "no tools"}, {"role": "user", "content": "hi"}]
    with pytest.raises(DatasetError, match="To use a tool") as info:
        load_critictool_file(_write(tmp_path, {"r": rec}))
    assert info.value.field == "r.query_prompt[0].content"


def test_external_ground_truth_must_be_two_actions(tmp_path: Path) -> None:
    rec = _record()
    rec["ground_truth"] = [rec["ground_truth"]]
    with pytest.raises(DatasetError, match="failed action, next action") as info:
        load_critictool_file(_write(tmp_path, {"r": rec}, part="external"))
    assert info.value.field == "r.ground_truth"


def test_action_without_name(tmp_path: Path) -> None:
    rec = _record()
    rec["ground_truth"] = {"args": {}}
    with pytest.raises(DatasetError, match="string 'name'"):
        load_critictool_file(_write(tmp_path, {"r": rec}))


def test_prompt_tools_converts_each_tool_list_once() -> None:
    from toolmend.formats._critictool import prompt_tools

    system = 'Tools:\n[{"name": "A.b", "required_parameters": [{"name": "x", "type": "NUMBER"}]}]\nTo use a tool, go.'
    first, second = prompt_tools(system), prompt_tools("Other words. " + system[7:])
    assert [t.name for t in first] == ["A.b"] and first[0].required == ["x"]
    assert first is not second and first[0] is second[0]  # a new list over the memoised tools
    with pytest.raises(ValueError, match="no tool list"):
        prompt_tools("no tools here")
    with pytest.raises(DatasetError):
        prompt_tools('x [{"description": "a tool without a name"}]\nTo use a tool')


def test_loaded_samples_share_converted_tools() -> None:
    samples = load_critictool_file(data_file(FIXTURES, "internal", "base", cot=False))
    same_prompt = [s for s in samples if s.messages[0].content == samples[0].messages[0].content]
    assert len(same_prompt) > 1
    assert same_prompt[0].tools == same_prompt[1].tools and same_prompt[0].tools is not same_prompt[1].tools
