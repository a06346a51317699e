"""``toolmend mcp-guard`` on the command line: bad usage is one line and exit 2 (the relays
themselves are tested in tests/mcp_guard, the stdio one through this command)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_usage import assert_bad_usage


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
    assert_bad_usage("mcp-guard", tmp_path, args, files, words)
