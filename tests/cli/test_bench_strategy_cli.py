"""`toolmend bench --strategy`: bad input is one line and exit 2; options reach the strategy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from toolmend.cli import _bench as bench


def _app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        pass

    bench.register(app)
    return app


@pytest.fixture(autouse=True)
def _private_cache(private_cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "1")


BASE = ["bench", "bfcl", "-m", "scripted", "--categories", "simple_python", "--limit", "2"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--strategy", "gaurd"], "unknown strategy 'gaurd'"),
        (["--strategy", "guard+none"], "cannot be combined"),
        (["--strategy", "guard+guard"], "given twice"),
        (["--strategy", "self-refine", "--max-refine", "0"], "--max-refine must be at least 1, got 0"),
        (["--strategy", "guard", "--max-refine", "2"], "no chosen strategy takes max_refine"),
        (["--max-refine", "2"], "need a --strategy"),
    ],
)
def test_bad_strategy_input_exits_2_with_one_line(tmp_path: Path, extra: list[str], message: str) -> None:
    res = CliRunner().invoke(_app(), [*BASE, "--runs-dir", str(tmp_path), *extra])
    assert res.exit_code == 2, res.output
    assert message in res.output and "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1


def test_strategy_options_are_in_the_manifest(tmp_path: Path) -> None:
    args = [
        *BASE,
        "--runs-dir",
        str(tmp_path),
        "--strategy",
        "self-refine",
        "--max-refine",
        "2",
        "-S",
        "feedback=model",
    ]
    res = CliRunner().invoke(_app(), args)
    assert res.exit_code == 0, res.output
    (run,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["strategy"] == "self-refine[feedback=model,max_refine=2]"
    assert manifest["config"]["bench"]["strategy_options"] == {"feedback": "model", "max_refine": 2}
