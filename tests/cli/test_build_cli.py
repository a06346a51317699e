"""``toolmend build critic`` on a small world suite."""

from __future__ import annotations

from pathlib import Path

import typer
from typer.testing import CliRunner

from toolmend.benchmarks.critictool import load_critictool
from toolmend.cli.build import register


def _app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def main() -> None:
        """Root."""

    register(app)
    return app


def test_build_critic_prints_counts_and_writes_loadable_files(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        _app(),
        ["build", "critic", "--source", "world", "--seed", "2", "--out", str(tmp_path), "--limit", "12"],
    )
    assert result.exit_code == 0, result.output
    assert "parameters_key_error" in result.output and "error_free" in result.output
    assert "wrote 4 files" in result.output
    assert load_critictool(tmp_path)


def test_build_critic_rejects_an_unknown_source(tmp_path: Path) -> None:
    result = CliRunner().invoke(_app(), ["build", "critic", "--source", "mars", "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "world, nestools or bfcl" in result.output
