"""``toolmend cache stats|clear`` (src/toolmend/cli/cache.py)."""

from __future__ import annotations

from pathlib import Path

import typer
from typer.testing import CliRunner

from toolmend.cli._cache import register
from toolmend.models import Completion, ResponseCache


def _app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        """root"""

    register(app)
    return app


def test_stats_and_clear(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    cache.put("k1", Completion(text="a"), model="openai/a")
    cache.put("k2", Completion(text="b"), model="openai/b")
    cache.put("k3", Completion(text="c"), model="openai/b")
    runner = CliRunner()
    out = runner.invoke(_app(), ["cache", "stats", "--cache-dir", str(tmp_path)])
    assert out.exit_code == 0, out.output
    assert "entries: 3" in out.output and "openai/b" in out.output
    out = runner.invoke(_app(), ["cache", "clear", "--cache-dir", str(tmp_path), "--model", "openai/b", "-y"])
    assert out.exit_code == 0 and "deleted 2 entries" in out.output
    out = runner.invoke(_app(), ["cache", "clear", "--cache-dir", str(tmp_path)], input="n\n")
    assert out.exit_code == 1
    assert ResponseCache(tmp_path).stats().entries == 1
    out = runner.invoke(_app(), ["cache", "clear", "--cache-dir", str(tmp_path)], input="y\n")
    assert out.exit_code == 0 and ResponseCache(tmp_path).stats().entries == 0


def test_stats_uses_the_environment_default(_private_cache_dir: Path) -> None:
    out = CliRunner().invoke(_app(), ["cache", "stats"])
    assert out.exit_code == 0 and str(_private_cache_dir) in out.output.replace("\n", "")
    assert "entries: 0" in out.output
