"""A resumed run is the run it continues: the model options (``-M``) are part of its identity,
kept in the manifest (secrets redacted) and reused; a malformed earlier record stops the resume
with one line naming it, never a traceback or a wrong count."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from toolmend import ConfigError
from toolmend.cli._app import app
from toolmend.runs import RunDir


@pytest.fixture(autouse=True)
def _plain(private_cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "1")


def _bench(*args: object) -> Any:
    return CliRunner().invoke(app, ["bench", *(str(a) for a in args)])


def _json(res: Any) -> dict[str, Any]:
    assert res.exit_code == 0, res.output
    out: dict[str, Any] = json.loads(res.stdout)
    return out


def _cut(run: Path, keep: int) -> None:
    """Leave ``run`` as a kill -9 after ``keep`` samples leaves it: those records and no results."""
    samples = run / "samples.jsonl"
    lines = samples.read_bytes().splitlines(keepends=True)
    assert len(lines) > keep
    samples.write_bytes(b"".join(lines[:keep]))
    (run / "results.json").unlink()


NOISY = ["world", "--model", "noisy/scripted", "-M", "noise=0.3", "--limit", "24", "--no-report", "--json"]


def test_a_resumed_noisy_run_keeps_its_noise(tmp_path: Path) -> None:
    whole = _json(_bench(*NOISY, "--runs-dir", tmp_path / "whole"))
    assert whole["metrics"]["success"] < 1.0, "the noise must cost something for this test to mean anything"
    first = _json(_bench(*NOISY, "--runs-dir", tmp_path / "cut"))
    run = Path(first["run_dir"])
    stored = RunDir(run).manifest().config["bench"]
    assert stored["model_options"] == {"noise": 0.3}
    _cut(run, 8)

    resumed = _json(_bench("world", "--resume", run, "--json"))  # -M is not given again
    assert resumed["new_samples"] == 24 - 8 and resumed["n_samples"] == 24
    assert resumed["metrics"] == whole["metrics"]
    assert resumed["settings"]["model_options"] == {"noise": 0.3}


def test_another_model_option_on_resume_is_refused_in_one_line(tmp_path: Path) -> None:
    first = _json(_bench(*NOISY, "--runs-dir", tmp_path))
    run = Path(first["run_dir"])
    _cut(run, 4)
    before = (run / "samples.jsonl").read_bytes()
    res = _bench("world", "--resume", run, "-M", "noise=0.5")
    assert res.exit_code == 2
    line = res.output.strip()
    assert "\n" not in line and "Traceback" not in line
    assert line.startswith("error: --resume reuses the run's own settings")
    assert "-M noise=0.5 (the run has 0.3)" in line
    assert (run / "samples.jsonl").read_bytes() == before
    # The same value again is no change.
    assert _json(_bench("world", "--resume", run, "-M", "noise=0.3", "--json"))["n_samples"] == 24


@pytest.mark.parametrize(
    ("line", "where"),
    [
        (b'{"id": ["s0"], "scores": {"accuracy": 1.0}}\n', "line 2, field 'id'"),
        (b'{"id": "\xff\xfe", "scores": {"accuracy": 1.0}}\n', "line 2"),
        (b'{"id": "simple_python_0", "scores": {"accuracy": NaN}}\n', "line 2, field 'scores.accuracy'"),
    ],
    ids=["list-id", "non-utf8-id", "nan-score"],
)
def test_a_malformed_earlier_record_is_one_line_naming_it(
    tmp_path: Path, data_dir: Path, line: bytes, where: str
) -> None:
    common = [
        "--model",
        "scripted",
        "--data",
        data_dir / "bfcl",
        "--categories",
        "simple_python",
        "--limit",
        "6",
    ]
    first = _json(_bench("bfcl", *common, "--runs-dir", tmp_path, "--no-report", "--json"))
    run = Path(first["run_dir"])
    _cut(run, 1)
    with (run / "samples.jsonl").open("ab") as f:
        f.write(line)
    res = _bench("bfcl", "--resume", run, "--json")
    assert res.exit_code == 2, res.output
    message = res.output.strip()
    assert "\n" not in message and "Traceback" not in message
    assert message.startswith("error: ") and f"samples.jsonl, {where}" in message
    assert RunDir(run).results() is None  # nothing half-counted was written


def test_results_never_hold_nan(tmp_path: Path, data_dir: Path) -> None:
    first = _json(
        _bench("bfcl", "--model", "scripted", "--data", data_dir / "bfcl", "--categories", "simple_python",
               "--limit", "3", "--runs-dir", tmp_path, "--no-report", "--json")
    )  # fmt: skip
    results = RunDir(Path(first["run_dir"])).results()
    assert results is not None
    assert all(math.isfinite(v) for v in results["metrics"].values())


def test_a_secret_model_option_is_stored_redacted_and_given_again_on_resume(
    tmp_path: Path, data_dir: Path
) -> None:
    from fake_openai_server import FakeOpenAIServer, Reply

    from toolmend._bench import run_bench

    secret = "sk-live-0123456789abcdef"
    server = FakeOpenAIServer(lambda body: Reply(text="[]")).start()
    try:
        opts: dict[str, Any] = {"data": data_dir / "bfcl", "categories": ["irrelevance"], "limit": 4}
        first = run_bench(
            "bfcl", "openai/tiny", base_url=server.base_url, runs_dir=tmp_path, cache=False,
            model_options={"api_key": secret, "timeout": 30}, **opts,
        )  # fmt: skip
        assert secret not in (first.run_dir / "manifest.json").read_text()
        stored = RunDir(first.run_dir).manifest().config["bench"]["model_options"]
        assert stored == {"api_key": "***", "timeout": 30}
        _cut(first.run_dir, 2)
        # The secret is given again (it is not in the run to reuse); the rest comes from the run,
        # the server's URL too (the connection of the session that started it).
        resumed = run_bench(
            "bfcl", resume=first.run_dir, cache=False, model_options={"api_key": "sk-other-key-000"}
        )
        assert resumed.summary.n_samples == 4 and resumed.summary.new_samples == 2
        with pytest.raises(ConfigError, match=r"timeout=5 \(the run has 30\)"):
            run_bench("bfcl", resume=first.run_dir, model_options={"api_key": secret, "timeout": 5})
    finally:
        server.stop()
