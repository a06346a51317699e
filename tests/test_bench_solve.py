"""The runner's seam: benchmarks declare how they run and solve their samples through the
``generate`` the runner gives them; strategies wrap that ``generate``; settings are typed and
stored; a resumed run keeps its settings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from toolmend.bench import BenchSettings, resolve_strategies, run_bench
from toolmend.benchmarks import STRATEGIES, Generate, SolveState
from toolmend.benchmarks.critic import build_suite
from toolmend.errors import ConfigError
from toolmend.models import GenerateRequest, ScriptedModel
from toolmend.models.cache import cache_key
from toolmend.runs import RunDir
from toolmend.schema import Message


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLMEND_CACHE_DIR", str(tmp_path / "cache"))


class Recorder:
    """Logs every request it passes on (a test strategy: it changes nothing)."""

    def __init__(self, name: str = "record") -> None:
        self.name = name

    def wrap(self, generate: Generate, state: SolveState) -> Generate:
        async def recorded(messages: list[Message], *, epoch: int | None = None) -> str:
            state.events.append({"strategy": self.name, "sample": state.sample.id, "turns": len(messages)})
            return await generate(messages, epoch=epoch)

        return recorded


class ReaskOnce:
    """Asks once more when the first reply has no call, telling the model so (a test strategy)."""

    name = "reask"

    def wrap(self, generate: Generate, state: SolveState) -> Generate:
        async def reask(messages: list[Message], *, epoch: int | None = None) -> str:
            reply = await generate(messages, epoch=epoch)
            if "(" in reply:
                return reply
            state.events.append({"strategy": self.name, "reasked": True, "benchmark": state.benchmark.name})
            again = [
                *messages,
                Message(role="assistant", content=reply),
                Message(role="user", content="CALL A TOOL."),
            ]
            return await generate(again)

        return reask


def _stubborn_then_gold(gold: dict[str, str]) -> ScriptedModel:
    """No call at first; the gold call when told to call a tool."""

    def answer(messages: list[Message]) -> str:
        if messages[-1].content == "CALL A TOOL.":
            return gold[messages[1].content]
        return "I am not sure."

    return ScriptedModel(answer)


def _bfcl_gold(data_dir: Path, n: int) -> dict[str, str]:
    from toolmend.benchmarks import BENCHMARKS

    bench = BENCHMARKS.get("bfcl")()
    samples = bench.load(data_dir / "bfcl", categories=["simple_python"])[:n]
    return {s.messages[-1].content: str(bench.gold(s)) for s in samples}


def test_a_strategy_wraps_generate_and_its_events_are_recorded(tmp_path: Path, data_dir: Path) -> None:
    gold = _bfcl_gold(data_dir, 3)
    common: dict[str, Any] = {"data": data_dir / "bfcl", "categories": ["simple_python"], "limit": 3}
    plain = run_bench("bfcl", _stubborn_then_gold(gold), runs_dir=tmp_path, progress=False, **common)
    assert plain.summary.metrics["overall_sample_weighted"] == 0.0

    result = run_bench(
        "bfcl", _stubborn_then_gold(gold), runs_dir=tmp_path, progress=False, strategy=[Recorder(), ReaskOnce()],
        **common,
    )  # fmt: skip
    assert result.summary.metrics["overall_sample_weighted"] == 1.0
    assert result.summary.requests == 6  # every request, the re-asks included, is counted
    run = RunDir(result.run_dir)
    assert run.path.name.endswith("-record_reask")
    assert run.manifest().strategy == "record+reask"
    assert BenchSettings.from_manifest(run).strategy == "record+reask"
    for record in run.read_records():
        # "reask" wraps "record": its two requests both pass through the recorder.
        assert [e["strategy"] for e in record.events] == ["record", "reask", "record"]
        assert record.events[1] == {"strategy": "reask", "reasked": True, "benchmark": "bfcl"}
        assert len(record.outputs) == 2 and record.scores == {"accuracy": 1.0}


def test_strategy_names_resolve_through_the_registry_in_order() -> None:
    for name in ("test-first", "test-second"):
        if name not in STRATEGIES:
            STRATEGIES.add(name, lambda n=name: Recorder(n))  # type: ignore[misc]
    name, chain = resolve_strategies("test-first+test-second")
    assert name == "test-first+test-second" and [s.name for s in chain] == ["test-first", "test-second"]
    assert resolve_strategies("none") == ("none", []) and resolve_strategies(None) == ("none", [])
    with pytest.raises(ConfigError, match="unknown strategy 'test-frist'.*Did you mean 'test-first'"):
        resolve_strategies("test-frist")
    with pytest.raises(ConfigError, match="cannot be combined"):
        resolve_strategies("none+test-first")


def test_the_strategy_is_part_of_the_cache_key() -> None:
    model = ScriptedModel(["x"])
    request = GenerateRequest(messages=[Message(role="user", content="hi")])
    plain = model.cache_key(request)
    # Without a strategy the key is the one earlier versions wrote (existing caches stay valid).
    identity = model.cache_identity()
    assert plain == cache_key(identity, request.model_dump(mode="json", exclude={"sample_id", "cache_scope"}))
    scoped = model.cache_key(request.model_copy(update={"cache_scope": "strategy=reask"}))
    assert scoped != plain


def test_resume_refuses_a_changed_setting_and_keeps_the_stored_ones(tmp_path: Path, data_dir: Path) -> None:
    first = run_bench(
        "bfcl", "scripted", data=data_dir / "bfcl", categories=["simple_python"], limit=2,
        runs_dir=tmp_path, progress=False,
    )  # fmt: skip
    with pytest.raises(ConfigError, match=r"limit=5 \(the run has 2\)"):
        run_bench("bfcl", resume=first.run_dir, limit=5, progress=False)
    with pytest.raises(ConfigError, match=r"mode='improved'"):
        run_bench("bfcl", resume=first.run_dir, mode="improved", progress=False)
    # The same values again, or none, resume.
    again = run_bench("bfcl", resume=first.run_dir, limit=2, categories=["simple_python"], progress=False)
    assert again.run_dir == first.run_dir and again.summary.new_samples == 0


def test_settings_are_typed_and_versioned(tmp_path: Path, data_dir: Path) -> None:
    first = run_bench(
        "bfcl", "scripted", data=data_dir / "bfcl", categories=["simple_python"], limit=1,
        runs_dir=tmp_path, progress=False,
    )  # fmt: skip
    run = RunDir(first.run_dir)
    stored = run.manifest()
    assert BenchSettings.model_validate(stored.config["bench"]) == first.settings
    assert stored.headline == "accuracy" and stored.detail_keys == ["category", "error_type", "outcome"]
    for bad, message in (({"limt": 3}, "limt"), ({"schema_version": 99}, "settings version 99")):
        run.write_manifest(stored.model_copy(update={"config": {"bench": {**stored.config["bench"], **bad}}}))
        with pytest.raises(ConfigError, match=message):
            run_bench("bfcl", resume=run.path, progress=False)


def test_the_api_refuses_what_the_cli_refuses(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--retry-errors needs --resume"):
        run_bench("bfcl", "scripted", retry_errors=True, runs_dir=tmp_path, progress=False)
    with pytest.raises(ConfigError, match="--tool-mode must be prompt or native"):
        run_bench("bfcl", "scripted", tool_mode="function", runs_dir=tmp_path, progress=False)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="--mode must be compat or improved"):
        run_bench("bfcl", "scripted", mode="strict", runs_dir=tmp_path, progress=False)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="bfcl does not take several generations"):
        run_bench("bfcl", "scripted", samples=2, runs_dir=tmp_path, progress=False)
    for bad, message in (({"limit": 0}, "--limit"), ({"max_connections": 0}, "--max-connections"),
                         ({"max_retries": -1}, "--max-retries"), ({"samples": 0}, "--samples")):  # fmt: skip
        with pytest.raises(ConfigError, match=message):
            run_bench("bfcl", "scripted", runs_dir=tmp_path, progress=False, **bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="unknown benchmark 'bfc'"):
        run_bench("bfc", "scripted", runs_dir=tmp_path, progress=False)


@pytest.mark.parametrize(
    ("benchmark", "data", "options", "headline"),
    [
        ("bfcl", "bfcl", {"categories": ["simple_python", "irrelevance"]}, "accuracy"),
        ("nestools", "nestools", {"load_options": {"distractors": 0}}, "tree_pass"),
        # compat reproduces the official scorer, which cannot give list/object arguments credit
        ("reflection-bench", "tool-reflection-bench", {"mode": "improved"}, "correct"),
    ],
)
def test_run_bench_solves_each_main_benchmark_with_its_gold(
    tmp_path: Path, data_dir: Path, benchmark: str, data: str, options: dict[str, Any], headline: str
) -> None:
    result = run_bench(
        benchmark, "scripted", data=data_dir / data, limit=8, runs_dir=tmp_path, progress=False, **options
    )
    records = RunDir(result.run_dir).read_records()
    assert len(records) == 8 and all(r.scores[headline] == 1.0 for r in records)


def test_run_bench_runs_critictools_interactive_loop(tmp_path: Path) -> None:
    suite = build_suite("world", seed=4, out=tmp_path / "suite", limit=16).root
    result = run_bench("critictool", "scripted", data=suite, runs_dir=tmp_path / "runs", progress=False)
    records = RunDir(result.run_dir).read_records()
    external = [r for r in records if r.details["part"] == "external"]
    assert external and all(r.requests >= 2 for r in external)  # retry loop: one request per turn
    assert result.summary.metrics["retry"] == 100.0 and result.summary.metrics["detect"] == 100.0


def test_bench_critictool_with_the_checklist_model_from_a_fresh_shell(tmp_path: Path) -> None:
    suite = build_suite("world", seed=5, out=tmp_path / "suite", limit=12).root
    cmd = [
        sys.executable, "-m", "toolmend", "bench", "critictool", "--data", str(suite), "--model", "checklist",
        "--runs-dir", str(tmp_path / "runs"), "--json", "--no-report",
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, env={"PATH": "", **_env()})
    assert proc.returncode == 0, proc.stderr
    payload = json.loads(proc.stdout)
    assert payload["model"] == "checklist" and payload["n_scored"] == payload["n_samples"] > 0


def _env() -> dict[str, str]:
    import os

    return {
        k: v
        for k, v in os.environ.items()
        if k in ("PYTHONPATH", "TOOLMEND_SHARED", "HOME", "TOOLMEND_CACHE_DIR")
    }
