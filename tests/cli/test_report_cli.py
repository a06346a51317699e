"""`toolmend report` over real bench runs: one run, a two-model comparison, bad arguments."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from toolmend.bench import run_bench
from toolmend.benchmarks import BENCHMARKS, load_builtin_benchmarks
from toolmend.cli import report


def _app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        pass

    report.register(app)
    return app


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> list[Path]:
    root = tmp_path_factory.mktemp("runs")
    load_builtin_benchmarks()
    samples = BENCHMARKS.get("bfcl")().load(data_dir / "bfcl", categories=["simple_python", "irrelevance"])
    picked = samples[:10] + samples[-10:]
    preds = root / "pred.jsonl"
    with preds.open("w") as f:
        for i, s in enumerate(picked):
            out = "[calculate_triangle_area(base='<b>ten</b>')]" if i % 3 == 0 else "I can't help."
            f.write(json.dumps({"id": s.id, "output": out}) + "\n")
    common = {
        "data": data_dir / "bfcl",
        "categories": ["simple_python", "irrelevance"],
        "runs_dir": root,
        "progress": False,
        "cache": False,
    }
    ids = {s.id for s in picked}
    gold = run_bench("bfcl", "scripted", load_options={}, **common)  # type: ignore[arg-type]
    replay = run_bench("bfcl", f"replay/{preds}", **common)  # type: ignore[arg-type]
    # The replay run only has outputs for the picked ids; the rest are infrastructure errors.
    assert replay.summary.n_scored == len(ids)
    return [gold.run_dir, replay.run_dir]


def test_single_run_report_goes_into_the_run_dir(two_runs: list[Path]) -> None:
    res = CliRunner().invoke(_app(), ["report", str(two_runs[1])])
    assert res.exit_code == 0, res.output
    md = (two_runs[1] / "report.md").read_text()
    assert "## By category" in md and "| irrelevance |" in md and "| simple_python |" in md
    assert "## By error type" in md and "ast_decoder:decoder_failed" in md
    assert "samples failed with infrastructure errors" in md
    html = (two_runs[1] / "report.html").read_text()
    assert "&lt;b&gt;ten&lt;/b&gt;" in html and "<b>ten</b>" not in html
    assert not re.search(r'(?:src|href)="(?!#)', html)  # only links within the page
    assert html.count('<figure role="img"') >= 3 and "<svg" in html


def test_comparison_report_puts_models_side_by_side(tmp_path: Path, two_runs: list[Path]) -> None:
    out = tmp_path / "cmp"
    res = CliRunner().invoke(_app(), ["report", *map(str, two_runs), "--out", str(out), "--worst", "3"])
    assert res.exit_code == 0, res.output
    md = (out / "report.md").read_text()
    header = next(line for line in md.splitlines() if line.startswith("| metric |"))
    assert "scripted" in header and "replay/" in header
    row = next(line for line in md.splitlines() if line.startswith("| overall_sample_weighted |"))
    assert row.split("|")[2].strip() == "100.0"
    assert md.count("\n### ") <= 6  # at most 3 worst samples, each in both runs


def test_bad_arguments(tmp_path: Path, two_runs: list[Path]) -> None:
    res = CliRunner().invoke(_app(), ["report", *map(str, two_runs)])
    assert res.exit_code == 2 and "--out" in res.output
    res = CliRunner().invoke(_app(), ["report", str(tmp_path / "missing")])
    assert res.exit_code == 2 and "not a run directory" in res.output
