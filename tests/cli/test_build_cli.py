"""``toolmend build critic`` on a small world suite."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import fake_openai_server  # type: ignore[import-not-found]
import pytest
import typer
from typer.testing import CliRunner

from toolmend.benchmarks.critictool import load_critictool
from toolmend.cli._build import register


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


def test_build_critic_with_domain_tools_says_so(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        _app(), ["build", "critic", "--out", str(tmp_path), "--limit", "6", "--tools", "domain"]
    )
    assert result.exit_code == 0, result.output
    assert "critique suite: world, domain tools, base, seed 0" in result.output
    assert json.loads((tmp_path / "suite_base.json").read_text())["tools"] == "domain"


def test_build_critic_rejects_an_unknown_source(tmp_path: Path) -> None:
    result = CliRunner().invoke(_app(), ["build", "critic", "--source", "mars", "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "world, nestools or bfcl" in result.output


def test_build_critic_evolved_with_report(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        _app(),
        ["build", "critic", "--seed", "1", "--out", str(tmp_path), "--limit", "12", "--variant", "evolved",
         "--report"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "critique suite: world, evolved, seed 1" in result.output
    assert "critique suite: world, base, seed 1" in result.output
    assert "FinishAction share of external golds" in result.output
    assert "checklist critic: overall" in result.output
    quality = json.loads((tmp_path / "quality.json").read_text())
    assert set(quality["variants"]) == {"evolved", "base"}
    assert all(0 <= v["critic"]["overall"] <= 100 for v in quality["variants"].values())
    assert load_critictool(tmp_path, variants=["evol"]) and load_critictool(tmp_path)


def test_build_critic_evolved_with_a_garbage_model_falls_back(tmp_path: Path, openai_server: Any) -> None:
    openai_server.handler = lambda body: fake_openai_server.Reply(text="[[[ ]]]")
    result = CliRunner().invoke(
        _app(),
        ["build", "critic", "--out", str(tmp_path), "--limit", "6", "--variant", "evolved",
         "--evolution", "noisy_query", "--model", "openai/junk", "--base-url", openai_server.base_url],
        env={"OPENAI_API_KEY": "x", "TOOLMEND_CACHE_DIR": str(tmp_path / "cache")},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "model fallback" in result.output and "not_a_request" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--variant", "harder"], "--variant must be base or evolved"),
        (["--source", "nestools", "--data", "/nonexistent/nestools"], "no such file or folder"),
        (["--model", "scripted"], "add --variant evolved"),
        (["--variant", "evolved", "--evolution", "shuffle"], "unknown evolution 'shuffle'"),
        (["--variant", "evolved", "--model", "nosuch/x"], "nosuch"),
        (["--tools", "some"], "tools must be all or domain"),
        (["--source", "bfcl", "--tools", "domain"], "bfcl samples offer their own"),
    ],
)
def test_build_critic_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(_app(), ["build", "critic", "--out", str(tmp_path), "--limit", "4", *args])
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output


def test_build_critic_unreadable_source_data_is_a_clear_error(tmp_path: Path) -> None:
    broken = tmp_path / "nestools"
    broken.mkdir()
    (broken / "test_data.jsonl").write_text("{not json\n")
    result = CliRunner().invoke(
        _app(),
        ["build", "critic", "--source", "nestools", "--data", str(broken), "--out", str(tmp_path / "o")],
    )
    assert result.exit_code == 2, result.output
    assert "error:" in result.output and "Traceback" not in result.output
