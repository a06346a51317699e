"""Every command, fed each class of bad input, answers exit 2 and one ``error:`` line, never a traceback.

Classes: missing, directory, empty, binary, malformed, wrong shape, unwritable output (a path under a file: root writes through permissions), unknown
option key, negative numbers. (Cache files are covered by the cache command's own tests.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from toolmend.cli import app

pytestmark = pytest.mark.slow  # long tests in few items: handed to a worker first (tests/conftest.py)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("bad")
    made = {
        "missing": root / "missing.json",
        "dir": root / "a-folder",
        "empty": root / "empty.json",
        "binary": root / "binary.json",
        "malformed": root / "malformed.json",
        "shape": root / "shape.json",
        "tools": root / "tools.json",
        "calls": root / "calls.txt",
        "a_file": root / "a-file.txt",
        "empty_dir": root / "empty-folder",
    }
    made["dir"].mkdir()
    made["empty_dir"].mkdir()
    made["empty"].write_text("")
    made["binary"].write_bytes(b"\xff\xfe\x00\x81 not text")
    made["malformed"].write_text('[{"name": "f", ')
    made["shape"].write_text("42")
    made["tools"].write_text(
        '[{"name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "string"}}}}]'
    )
    made["calls"].write_text('[{"name": "f", "arguments": {"a": "x"}}]')
    made["a_file"].write_text("x")
    return made


def _cases(f: dict[str, Path]) -> list[tuple[str, list[Any]]]:
    tools, calls = f["tools"], f["calls"]
    bfcl = ["bench", "bfcl", "--model", "scripted", "--limit", "1", "--no-cache", "--no-report"]
    cases: list[tuple[str, list[Any]]] = []
    for kind in ("missing", "dir", "empty", "binary", "malformed", "shape"):
        cases.append((f"check --tools {kind}", ["check", "--tools", f[kind], "--calls", calls]))
        if kind in ("missing", "dir", "binary"):  # any text is a model output; unreadable ones are bad input
            cases.append((f"check --calls {kind}", ["check", "--tools", tools, "--calls", f[kind]]))
        cases.append((f"score --predictions {kind}", ["score", "bfcl", "--predictions", f[kind]]))
        if kind in ("missing", "dir", "binary"):
            cases.append((f"bench --prompt-template {kind}", [*bfcl, "--prompt-template", f[kind]]))
    cases += [
        ("bench --data empty folder", [*bfcl, "--data", f["empty_dir"]]),
        ("bench --runs-dir a file", [*bfcl, "--runs-dir", f["a_file"]]),
        ("bench --runs-dir under a file", [*bfcl, "--runs-dir", f["a_file"] / "runs"]),
        ("bench unknown -o key", [*bfcl, "-o", "colour=red"]),
        ("bench unknown -M key", [*bfcl, "-M", "colour=red"]),
        ("bench -o categories unknown", [*bfcl, "-o", "categories=nope"]),
        ("bench --limit negative", [*bfcl[:-4], "--limit", "-1"]),
        ("bench --resume missing", ["bench", "bfcl", "--resume", f["missing"]]),
        ("report empty folder", ["report", f["empty_dir"]]),
        ("report missing", ["report", f["missing"]]),
        ("build --limit negative", ["build", "critic", "--limit", "-1", "--out", f["dir"] / "suite"]),
        ("build --out a file", ["build", "critic", "--limit", "2", "--out", f["a_file"]]),
        ("build --out under a file", ["build", "critic", "--limit", "2", "--out", f["a_file"] / "suite"]),
        ("score unknown benchmark", ["score", "nope", "--predictions", calls]),
        ("score unknown -o key", ["score", "bfcl", "--predictions", calls, "-o", "colour=red"]),
        *_usage_cases(f),
    ]
    return cases


def _usage_cases(f: dict[str, Path]) -> list[tuple[str, list[Any]]]:
    """Errors click itself finds while parsing the command line."""
    tools, calls = f["tools"], f["calls"]
    return [
        ("build --limit negative, no --out", ["build", "critic", "--limit", "-1"]),
        ("check unknown option", ["check", "--tools", tools, "--calls", calls, "--colour", "red"]),
        ("check option without its value", ["check", "--calls", calls, "--tools"]),
        ("score missing argument", ["score"]),
        ("bench --limit not an int", ["bench", "bfcl", "--model", "scripted", "--limit", "x"]),
        ("unknown command", ["nope"]),
        ("unknown root option", ["--colour"]),
        ("cache unknown subcommand", ["cache", "nope"]),
        ("build unknown suite", ["build", "nope"]),
    ]


def test_every_command_answers_bad_input_with_exit_2_and_one_line(
    files: dict[str, Path], private_cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "1")
    monkeypatch.chdir(tmp_path)
    failures = []
    seen: list[tuple[str, int, Any]] = []
    for name, args in _cases(files):
        result = CliRunner().invoke(app, [str(a) for a in args])
        output = result.output
        errors = [ln for ln in output.splitlines() if ln.startswith("error:")]
        ok = result.exit_code == 2 and "Traceback" not in output and len(errors) == 1
        if not ok or (result.exception is not None and not isinstance(result.exception, SystemExit)):
            failures.append((name, result.exit_code, output[-300:], repr(result.exception)))
        seen.append((name, result.exit_code, errors[0] if errors else output.strip().splitlines()[-1:]))
    print(*seen, sep="\n")
    assert len(seen) >= 30 and failures == []


def test_click_usage_errors_are_one_line_on_stderr(files: dict[str, Path]) -> None:
    """No usage box: the error line alone, on stderr, naming where help is."""
    for name, args in _usage_cases(files):
        result = CliRunner().invoke(app, [str(a) for a in args])
        assert result.exit_code == 2, name
        assert result.stdout == "", name
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), (name, result.stderr)
        assert "Usage:" not in result.stderr and "╭" not in result.stderr, name
    assert "(see 'toolmend build critic -h')" in CliRunner().invoke(app, ["build", "critic"]).stderr
    # Help still works, short and long, and a command without its arguments still shows it.
    for args in (["-h"], ["check", "-h"], ["build", "critic", "--help"]):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0 and "Usage:" in result.stdout, args
    assert "Usage:" in CliRunner().invoke(app, ["build"]).output
