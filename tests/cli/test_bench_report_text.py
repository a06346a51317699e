"""`toolmend bench` writes its report whatever text the model sent: a lone UTF-16 surrogate (an
emoji cut at a token boundary) in the replies must reach report.md and report.html, not stop the
run at the report with exit 2."""

from __future__ import annotations

import json
import re
from pathlib import Path

import fake_openai_server as fake
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


def test_a_bench_whose_replies_hold_a_lone_surrogate_writes_its_report(
    tmp_path: Path, data_dir: Path, private_cache_dir: Path
) -> None:
    cut = "I cannot help \ud83d"
    server = fake.FakeOpenAIServer(lambda body: fake.Reply(text=cut)).start()
    try:
        res = CliRunner().invoke(_app(), [
            "bench", "bfcl", "--model", "openai/tiny", "--base-url", server.base_url,
            "--data", str(data_dir / "bfcl"), "--categories", "simple_python", "--limit", "3",
            "--runs-dir", str(tmp_path / "runs"), "--json",
        ])  # fmt: skip
    finally:
        server.stop()
    assert res.exit_code == 0, res.output
    (run,) = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]
    markdown = (run / "report.md").read_text(encoding="utf-8")  # valid UTF-8, or this raises
    html = (run / "report.html").read_text(encoding="utf-8")
    assert "I cannot help \\ud83d" in markdown  # shown as its escape, as the terminal shows it
    block = re.search(r'<script type="application/json" id="tm-data">(.*?)</script>', html, re.S)
    assert block is not None
    assert cut in json.dumps(json.loads(block.group(1)), ensure_ascii=False)  # kept losslessly
