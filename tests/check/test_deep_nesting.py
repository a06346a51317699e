"""Values and specs nested hundreds or thousands deep end as a finding or a one-line error,
never a RecursionError: through the Python API and through ``toolmend check``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from toolmend import SpecError, ToolCall
from toolmend.check import Checker, check, repair
from toolmend.cli import app
from toolmend.formats import load_tools, parse_calls

TOOLS = [{"name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "array"}}}}]
OPEN = [{"name": "f", "parameters": {"type": "object"}}]


def _nested(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


def _nested_text(levels: int) -> str:
    return "[" * levels + "1" + "]" * levels


def _schema(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "integer"}
    for _ in range(levels):
        schema = {"type": "array", "items": schema}
    return schema


@pytest.mark.parametrize("levels", [150, 5000])
def test_a_call_nested_too_deep_is_refused_with_its_limit(levels: int) -> None:
    args = {"a": _nested(levels)}
    with pytest.raises(ValidationError, match=f"nested deeper than {ToolCall.MAX_DEPTH} levels"):
        ToolCall(name="f", arguments=args)
    for tools in (TOOLS, OPEN):
        with pytest.raises(ValidationError, match="nested deeper"):
            check([{"name": "f", "arguments": args}], tools)


def test_a_call_at_the_limit_is_checked_copied_and_written() -> None:
    args = {"a": _nested(ToolCall.MAX_DEPTH - 1)}  # the arguments object is level 1
    call = ToolCall(name="f", arguments=args)
    for tools in (TOOLS, OPEN):
        checker = Checker(tools)
        assert checker.check([call, call], expected_count=2) == [] and checker.check_call(call) == []
        assert repair([call], checker).clean
    assert ToolCall.model_validate_json(call.model_dump_json()) == call
    recursive = {"type": "object", "properties": {"t": {"$ref": "#/$defs/T"}},
                 "$defs": {"T": {"type": "array", "items": {"anyOf": [{"type": "integer"}, {"$ref": "#/$defs/T"}]}}}}  # fmt: skip
    found = check([ToolCall(name="g", arguments={"t": args["a"]})], [{"name": "g", "parameters": recursive}])
    assert [(f.code, f.data.get("keyword")) for f in found] == [("invalid_value", "depth")]


@pytest.mark.parametrize("levels", [150, 300])
def test_model_output_nested_too_deep_is_a_finding(levels: int) -> None:
    outputs = {
        "json": f'{{"name": "f", "arguments": {{"a": {_nested_text(levels)}}}}}',
        "openai": json.dumps(
            {
                "tool_calls": [
                    {
                        "id": "c",
                        "type": "function",
                        "function": {"name": "f", "arguments": f'{{"a": {_nested_text(levels)}}}'},
                    }
                ]
            }
        ),  # fmt: skip
        "python": f"f(a={_nested_text(min(levels, 190))})",  # Python's parser stops at 200 brackets
        "nestools": f'[{{"api_name": "f", "parameters": {{"a": {_nested_text(levels)}}}}}]',
    }
    for fmt, text in outputs.items():
        result = parse_calls(text, fmt)  # type: ignore[arg-type]
        assert [c.arguments for c in result.calls] == [{}], fmt
        messages = [f.message for f in result.findings if f.code == "invalid_format"]
        assert any("nested deeper than" in m for m in messages), (fmt, messages)
        assert not any(f.data.get("internal_error") for f in result.findings), fmt
    result = parse_calls(f'{{"name": "f", "arguments": {{"a": {_nested_text(5000)}}}}}', "json")
    assert result.calls == [] and [f.code for f in result.findings] == ["invalid_format"]


@pytest.mark.parametrize("levels", [60, 300, 5000])
def test_a_spec_nested_too_deep_is_a_spec_error(levels: int) -> None:
    spec = {"name": "f", "parameters": {"type": "object", "properties": {"a": _schema(levels)}}}
    with pytest.raises(SpecError, match="nested deeper than"):
        check([ToolCall(name="f", arguments={"a": [1]})], [spec])


def test_toolmend_check_cli_on_deep_calls_and_deep_tools(tmp_path: Path) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(TOOLS))
    shallow = tmp_path / "calls.json"
    shallow.write_text('[{"name": "f", "arguments": {"a": [1]}}]')
    runner = CliRunner()
    for levels in (150, 300, 5000):
        calls = tmp_path / f"calls{levels}.json"
        calls.write_text(f'[{{"name": "f", "arguments": {{"a": {_nested_text(levels)}}}}}]')
        result = runner.invoke(app, ["check", "--tools", str(tools), "--calls", str(calls), "--json"])
        assert result.exit_code == 1, result.output
        report = json.loads(result.stdout)
        assert [f["code"] for f in report["findings"]] == ["invalid_format"]
        deep_tools = tmp_path / f"tools{levels}.json"
        deep_tools.write_text(
            '[{"name": "f", "parameters": {"type": "object", "properties": {"a": '
            + '{"type": "array", "items": ' * levels
            + '{"type": "integer"}'
            + "}" * levels
            + "}}}]"
        )
        result = runner.invoke(app, ["check", "--tools", str(deep_tools), "--calls", str(shallow)])
        assert result.exit_code == 2, result.output
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and str(deep_tools) in lines[0]
        assert "Traceback" not in result.output
    with pytest.raises(Exception, match="nested too deeply") as info:
        load_tools(tmp_path / "tools5000.json")
    assert not isinstance(info.value, RecursionError)
