"""``toolmend bench critic`` goes through the one runner: the suite is built for the seed, the
checklist critic is its default model, and the CriticTool benchmark scores it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolmend._schema import Message
from toolmend.benchmarks import STRATEGIES, Generate, SolveState
from toolmend.cli._app import app
from toolmend.runs import RunDir

pytestmark = pytest.mark.slow  # long tests in few items: handed to a worker first (tests/conftest.py)


@pytest.fixture(autouse=True)
def _private_cache(private_cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "1")


def test_bench_critic_builds_the_suite_and_runs_the_checklist(
    tmp_path: Path, private_cache_dir: Path
) -> None:
    args = ["bench", "critic", "--seed", "3", "--limit", "40", "--runs-dir", str(tmp_path), "--json"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    payload = json.loads(res.stdout)
    assert payload["benchmark"] == "critic" and payload["model"] == "checklist"
    assert payload["n_samples"] == payload["n_scored"] == 40
    assert (private_cache_dir / "suites" / "critic" / "seed-3").is_dir()
    run = RunDir(payload["run_dir"])
    manifest = run.manifest()
    assert manifest.headline == "tool" and "external_mode" in manifest.detail_keys
    assert (run.path / "report.md").is_file()  # the CLI writes the report after the run
    assert 0 < payload["metrics"]["detect"] <= 100


def test_help_lists_suites_backends_and_works_with_h() -> None:
    for flag in ("--help", "-h"):
        res = CliRunner().invoke(app, [flag], env={"COLUMNS": "200"})
        assert res.exit_code == 0, res.output
        for name in ("critic", "checklist", "openai", "bfcl", "Strategies"):
            assert name in res.output
    res = CliRunner().invoke(app, ["bench", "-h"])
    assert res.exit_code == 0 and "--strategy" in res.output


class _Tag:
    """A test strategy: records each request it passes on."""

    name = "test-cli-tag"

    def wrap(self, generate: Generate, state: SolveState) -> Generate:
        async def tagged(messages: list[Message], *, epoch: int | None = None) -> str:
            state.events.append({"strategy": self.name})
            return await generate(messages, epoch=epoch)

        return tagged


def test_bench_strategy_option_resolves_a_registered_strategy(tmp_path: Path, data_dir: Path) -> None:
    if _Tag.name not in STRATEGIES:
        STRATEGIES.add(_Tag.name, _Tag)
    args = ["bench", "bfcl", "--model", "scripted", "--data", str(data_dir / "bfcl"), "--categories",
            "simple_python", "--limit", "2", "--strategy", _Tag.name, "--runs-dir", str(tmp_path), "--json"]  # fmt: skip
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    payload = json.loads(res.stdout)
    assert payload["settings"]["strategy"] == _Tag.name and payload["run_dir"].endswith(_Tag.name)
    records = RunDir(payload["run_dir"]).read_records()
    assert [r.events for r in records] == [[{"strategy": _Tag.name}]] * 2
    unknown = CliRunner().invoke(app, ["bench", "bfcl", "--model", "scripted", "--strategy", "nope"])
    assert unknown.exit_code == 2 and "unknown strategy 'nope'" in unknown.output
