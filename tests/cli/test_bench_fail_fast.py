"""A wrong server configuration stops `toolmend bench` at once with exit 2, naming URL and cause;
transient errors keep being retried and are counted by cause."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import fake_openai_server as fake
import pytest
import typer
from typer.testing import CliRunner

from toolmend.cli import bench

BFCL = ("--categories", "simple_python", "--limit", "6", "--no-cache")


def _invoke(*args: Any) -> Any:
    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        pass

    bench.register(app)
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture(autouse=True)
def _plain(private_cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "1")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(base_url: str, data_dir: Path, tmp_path: Path, *extra: str) -> Any:
    return _invoke(
        "bench", "bfcl", "--model", "openai/fake-model", "--base-url", base_url,
        "--data", data_dir / "bfcl", *BFCL, "--runs-dir", tmp_path / "runs", *extra,
    )  # fmt: skip


def _one_error_line(result: Any) -> str:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [ln for ln in result.output.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1, result.output
    return lines[0]


def test_closed_port_stops_the_run(data_dir: Path, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    # With the default retry policy a transient reading would retry for half a minute per sample
    # and then exit 0 with every sample failed; exit 2 shows it was classified as configuration.
    line = _one_error_line(_run(url, data_dir, tmp_path))
    assert f"{url}/chat/completions" in line and "cannot connect" in line and "refused" in line


def test_invalid_url_stops_the_run(data_dir: Path, tmp_path: Path) -> None:
    line = _one_error_line(_run("http://[not a host/v1", data_dir, tmp_path))
    assert "http://[not a host/v1" in line


@pytest.mark.parametrize(
    ("reply", "cause"),
    [
        (fake.Reply(status=404, body=b'{"error": {"message": "no route"}}'), "HTTP 404"),
        (
            fake.Reply(
                status=200, headers={"Content-Type": "text/html"}, body=b"<!doctype html><p>dashboard</p>"
            ),
            "web page instead of JSON",
        ),  # fmt: skip
    ],
)
def test_404_or_html_stops_the_run(data_dir: Path, tmp_path: Path, reply: fake.Reply, cause: str) -> None:
    server = fake.FakeOpenAIServer(lambda body: reply).start()
    try:
        line = _one_error_line(_run(server.base_url, data_dir, tmp_path))
        assert f"{server.base_url}/chat/completions" in line and cause in line
        assert server.requests <= 6  # one request per sample in flight at most, never a retry
    finally:
        server.stop()


def test_transient_errors_retry_and_are_counted_by_cause(data_dir: Path, tmp_path: Path) -> None:
    server = fake.FakeOpenAIServer(lambda body: fake.Reply(status=503)).start()
    try:
        res = _run(server.base_url, data_dir, tmp_path, "--max-retries", "1")
        assert res.exit_code == 1, res.output  # nothing scored, but no configuration error
        assert "infrastructure errors by cause: HTTP 503 ×6" in res.output
        assert server.requests == 12  # each request was tried twice
    finally:
        server.stop()


def test_model_configuration_errors_come_before_any_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TM_NO_SUCH_KEY", raising=False)
    line = _one_error_line(_invoke("bench", "bfcl", "--model", "openai/", "--runs-dir", tmp_path))
    assert "needs a model name" in line
    line = _one_error_line(
        _invoke(
            "bench", "bfcl", "--model", "openai/m", "--api-key-env", "TM_NO_SUCH_KEY", "--runs-dir", tmp_path
        )
    )
    assert "TM_NO_SUCH_KEY" in line and "not set" in line
    folder = tmp_path / "not-a-model"
    folder.mkdir()
    line = _one_error_line(_invoke("bench", "bfcl", "--model", f"hf/{folder}", "--runs-dir", tmp_path))
    assert "not a model folder" in line


def test_scripted_oracle_says_where_compat_scoring_cannot_give_100(tmp_path: Path) -> None:
    res = _invoke(
        "bench",
        "reflection-bench",
        "--model",
        "scripted",
        "--limit",
        "2",
        "--runs-dir",
        tmp_path,
        "--no-report",
    )
    assert res.exit_code == 0, res.output
    assert "does not give them 100%" in res.output
    res = _invoke(
        "bench", "bfcl", "--model", "scripted", "--limit", "2", "--runs-dir", tmp_path, "--no-report"
    )
    assert res.exit_code == 0 and "does not give them 100%" not in res.output
