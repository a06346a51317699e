"""`toolmend check`: exit codes, JSON shape, repair, and messages for unreadable input."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from typer.testing import CliRunner

from toolmend.cli._check import register

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
runner = CliRunner()


def _app() -> typer.Typer:
    app = typer.Typer()
    register(app)

    @app.callback()
    def _root() -> None:
        """Keep `check` a named sub-command."""

    return app


def _run(*args: str) -> tuple[int, str]:
    result = runner.invoke(_app(), ["check", *args])
    return result.exit_code, result.output


def test_example_has_findings_and_exits_1() -> None:
    code, out = _run(
        "--tools", str(EXAMPLES / "tools.json"), "--calls", str(EXAMPLES / "calls.txt"), "--json"
    )
    assert code == 1
    report = json.loads(out)
    assert set(report) == {"format", "calls", "findings", "repaired"}
    assert report["format"] == "python" and report["repaired"] == []
    assert {(f["code"], f["call"], f["path"]) for f in report["findings"]} == {
        ("wrong_tool_name", 0, ""),
        ("redundant_parameter", 1, "Origin"),
        ("missing_required", 1, "origin"),
        ("invalid_type", 1, "max_price"),
    }
    assert all(set(f) == {"code", "call", "path", "message", "suggestion"} for f in report["findings"])


def test_repair_fixes_the_example_and_exits_0() -> None:
    code, out = _run(
        "--tools", str(EXAMPLES / "tools.json"), "--calls", str(EXAMPLES / "calls.txt"), "--repair", "--json"
    )
    report = json.loads(out)
    assert code == 0, report["findings"]
    assert report["calls"] == [
        {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius", "days": 3}},
        {
            "name": "search_flights",
            "arguments": {"origin": "CDG", "destination": "JFK", "date": "2025-07-01", "max_price": 450},
        },
    ]
    assert {(r["action"], r["code"]) for r in report["repaired"]} == {
        ("rename_tool", "wrong_tool_name"),
        ("enum_case", "invalid_value"),
        ("coerce", "invalid_type"),
        ("rename_key", "redundant_parameter"),
    }


def test_clean_output_exits_0_with_human_text(tmp_path: Path) -> None:
    calls = tmp_path / "out.txt"
    calls.write_text('<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>')
    code, out = _run("--tools", str(EXAMPLES / "tools.json"), "--calls", str(calls))
    assert code == 0
    assert "1 call(s) read as tags" in out and "clean" in out


def test_human_output_shows_codes_and_hints() -> None:
    code, out = _run("--tools", str(EXAMPLES / "tools.json"), "--calls", str(EXAMPLES / "calls.txt"))
    assert code == 1
    assert "wrong_tool_name call 0" in out and "hint: Did you mean 'get_weather'?" in out
    assert "4 finding(s)" in out


def test_parser_findings_are_merged(tmp_path: Path) -> None:
    calls = tmp_path / "out.txt"
    calls.write_text('Sure, here you go: [get_weather("Oslo")]')
    code, out = _run("--tools", str(EXAMPLES / "tools.json"), "--calls", str(calls), "--json")
    codes = [f["code"] for f in json.loads(out)["findings"]]
    assert code == 1
    assert "redundant_information" in codes and "positional_argument" in codes and "missing_required" in codes


def test_expected_count(tmp_path: Path) -> None:
    calls = tmp_path / "out.txt"
    calls.write_text('[get_weather(city="Oslo")]')
    code, out = _run(
        "--tools", str(EXAMPLES / "tools.json"), "--calls", str(calls), "--expected-count", "2", "--json"
    )
    assert code == 1 and [f["code"] for f in json.loads(out)["findings"]] == ["wrong_tool_count"]


def test_unreadable_inputs_exit_2_naming_the_file(tmp_path: Path) -> None:
    code, out = _run("--tools", str(tmp_path / "nope.json"), "--calls", str(EXAMPLES / "calls.txt"))
    assert code == 2 and "nope.json" in out and "cannot read" in out
    broken = tmp_path / "tools.json"
    broken.write_text("[{]")
    code, out = _run("--tools", str(broken), "--calls", str(EXAMPLES / "calls.txt"))
    assert code == 2 and "tools.json, line 1: not valid JSON" in out
    code, out = _run("--tools", str(EXAMPLES / "tools.json"), "--calls", str(tmp_path / "missing.txt"))
    assert code == 2 and "missing.txt" in out


def test_bad_usage_exits_2() -> None:
    code, out = _run(
        "--tools", str(EXAMPLES / "tools.json"), "--calls", str(EXAMPLES / "calls.txt"), "--format", "xml"
    )
    assert code == 2 and "--format must be one of" in out
    code, _ = _run("--calls", str(EXAMPLES / "calls.txt"))
    assert code == 2


def test_context_adds_the_values_the_request_never_gave(tmp_path: Path) -> None:
    args = ("--tools", str(EXAMPLES / "tools.json"), "--calls", str(EXAMPLES / "calls.txt"), "--repair")
    code, out = _run(*args, "--context", str(EXAMPLES / "request.txt"), "--json")
    found = json.loads(out)["findings"]
    assert code == 1 and [(f["code"], f["call"], f["path"]) for f in found] == [
        ("invalid_value", 1, "destination")
    ]
    assert found[0]["message"] == "'destination' is 'JFK', which appears nowhere in the conversation"
    messages = tmp_path / "messages.json"
    messages.write_text(json.dumps([{"role": "user", "content": "Paris, 3 days; CDG to JFK on 2025-07-01"}]))
    code, out = _run(*args, "--context", str(messages))
    assert code == 0 and out.rstrip().endswith("clean")
    messages.write_text('[{"role": "user", "content": 3}]')
    code, out = _run(*args, "--context", str(messages))
    assert code == 2 and "messages.json: message 0: expected an object with a text 'content'" in out
    messages.write_text("[{]")
    code, out = _run(*args, "--context", str(messages))
    assert code == 2 and "messages.json:1: not a JSON list of messages" in out
    code, out = _run(*args, "--context", str(tmp_path / "none.txt"))
    assert code == 2 and "none.txt: cannot read the conversation" in out
