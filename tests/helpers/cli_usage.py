"""The check every server command's bad-usage test makes: the command, given ``args`` (a name in
``files`` or starting with ``missing`` is a path under the test's folder; ``files`` are written
there first), exits 2 with one ``error:`` line that holds ``words`` and no secret::

    from cli_usage import assert_bad_usage

    assert_bad_usage("serve", tmp_path, ["--upstream", "ftp://x"], {}, "expected an http(s) URL")
"""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from toolmend.cli._app import app


def assert_bad_usage(
    command: str, tmp_path: Path, args: list[str], files: dict[str, str], words: str
) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    args = [str(tmp_path / a) if a in files or a.startswith("missing") else a for a in args]
    result = CliRunner().invoke(app, [command, *args])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and words in lines[0], result.output
    assert "topsecret" not in result.output
