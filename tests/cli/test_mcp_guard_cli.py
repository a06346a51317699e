"""``toolmend mcp-guard`` on the command line: bad usage is one line and exit 2 (the relays
themselves are tested in tests/mcp_guard, the stdio one through this command)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolmend.cli._app import app


@pytest.mark.parametrize(
    ("args", "files", "words"),
    [
        ([], {}, "give a server command after '--'"),
        (["--upstream", "http://x/mcp", "--", "python", "server.py"], {}, "not both"),
        (["--upstream", "localhost:8000"], {}, "expected an http(s) URL"),
        (["--upstream", "ftp://user:topsecret@x/mcp"], {}, "'ftp://x/mcp': expected an http(s) URL"),
        (["--upstream", "http://x/mcp", "--port", "0"], {}, "--port"),
        (["--upstream", "http://x/mcp", "--bogus"], {}, "No such option: --bogus"),
        (
            ["--policy", "p.toml", "--", "python", "s.py"],
            {"p.toml": "max_repeated_failures = -2\n"},
            "max_repeated_failures must be at least 0",
        ),
        (["--policy", "missing.toml", "--", "python", "s.py"], {}, "cannot read the policy file"),
        (["--", "toolmend-no-such-server-binary"], {}, "'toolmend-no-such-server-binary' not found"),
    ],
)
def test_bad_usage_is_one_line_and_exit_2(
    tmp_path: Path, args: list[str], files: dict[str, str], words: str
) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    args = [str(tmp_path / a) if a in files or a.startswith("missing") else a for a in args]
    result = CliRunner().invoke(app, ["mcp-guard", *args])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and words in lines[0], result.output
    assert "topsecret" not in result.output
