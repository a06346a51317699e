"""run_bench end to end on the real BFCL and Tool-Reflection-Bench data, with fake backends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolmend._bench import SUITES, Suite, run_bench
from toolmend._errors import ConfigError, ModelError
from toolmend._schema import Message, Sample, ToolCall
from toolmend.benchmarks import BENCHMARKS, load_builtin_benchmarks, read_predictions, score_predictions
from toolmend.benchmarks.bfcl._decode import render_python
from toolmend.models import Completion, ScriptedModel
from toolmend.runs import RunDir

N = 24


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLMEND_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def bfcl_samples(data_dir: Path) -> list[Sample]:
    load_builtin_benchmarks()
    return BENCHMARKS.get("bfcl")().load(data_dir / "bfcl", categories=["simple_python"])[:N]


def _mixed_predictions(samples: list[Sample], path: Path) -> Path:
    """Gold for two samples in three, a broken reply for the rest."""
    lines = []
    for i, s in enumerate(samples):
        out = (
            render_python(s.target) if i % 3 else "I would call calculate(x=" if i % 2 else "[wrong_fn(a=1)]"
        )
        lines.append(json.dumps({"id": s.id, "output": out}))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_replay_run_equals_score_on_the_same_outputs(
    tmp_path: Path, data_dir: Path, bfcl_samples: list[Sample]
) -> None:
    preds = _mixed_predictions(bfcl_samples, tmp_path / "pred.jsonl")
    result = run_bench(
        "bfcl",
        f"replay/{preds}",
        data=data_dir / "bfcl",
        categories=["simple_python"],
        limit=N,
        runs_dir=tmp_path / "runs",
        progress=False,
    )
    bench = BENCHMARKS.get("bfcl")()
    want = score_predictions(bench, bfcl_samples, read_predictions(preds))
    results = RunDir(result.run_dir).results()
    assert results is not None
    assert results["metrics"] == want.metrics
    assert results["n_samples"] == results["n_scored"] == N and results["n_errors"] == 0
    assert 0 < want.metrics["overall_sample_weighted"] < 1
    records = {r.id: r for r in RunDir(result.run_dir).read_records()}
    for s in want.scores:
        assert records[s.id].scores == s.values
        assert records[s.id].details["error_type"] == s.details["error_type"]
    manifest = RunDir(result.run_dir).manifest()
    assert manifest.benchmark == "bfcl" and manifest.dataset is not None
    assert manifest.config["bench"]["categories"] == ["simple_python"]


def test_gold_oracle_scores_everything(tmp_path: Path, data_dir: Path) -> None:
    result = run_bench(
        "bfcl",
        "scripted",
        data=data_dir / "bfcl",
        categories=["simple_python", "irrelevance"],
        runs_dir=tmp_path,
        progress=False,
    )
    assert result.summary.n_samples == 400 + 240
    assert result.summary.metrics["overall_sample_weighted"] == 1.0
    assert result.retry_hint() is None


def test_infrastructure_errors_stay_out_of_metrics_and_retry_errors_reruns_them(
    tmp_path: Path, data_dir: Path, bfcl_samples: list[Sample]
) -> None:
    gold = {s.messages[-1].content: render_python(s.target) for s in bfcl_samples}
    broken = {bfcl_samples[1].messages[-1].content, bfcl_samples[5].messages[-1].content}

    def flaky(messages: list[Message]) -> str:
        if messages[-1].content in broken:
            raise ModelError("server said 503", retryable=False, status=503)
        return gold[messages[-1].content]

    common = {"data": data_dir / "bfcl", "categories": ["simple_python"], "limit": N, "progress": False}
    first = run_bench("bfcl", ScriptedModel(flaky), runs_dir=tmp_path, **common)  # type: ignore[arg-type]
    assert first.summary.n_errors == 2 and first.summary.n_scored == N - 2
    assert first.summary.metrics["overall_sample_weighted"] == 1.0  # errors are not model mistakes
    assert first.retry_hint() == (
        f"2 samples failed with infrastructure errors; rerun with --resume {first.run_dir} --retry-errors"
    )
    # Resuming without --retry-errors leaves them alone.
    again = run_bench("bfcl", ScriptedModel(flaky), resume=first.run_dir, progress=False)
    assert again.summary.new_samples == 0 and again.summary.n_errors == 2
    broken.clear()
    fixed = run_bench("bfcl", ScriptedModel(flaky), resume=first.run_dir, retry_errors=True, progress=False)
    assert fixed.summary.new_samples == 2 and fixed.summary.n_errors == 0
    assert fixed.summary.n_samples == N
    ids = [json.loads(x)["id"] for x in (first.run_dir / "samples.jsonl").read_text().splitlines()]
    assert sorted(ids) == sorted(s.id for s in bfcl_samples)


def test_repair_at_n_uses_one_epoch_per_generation(tmp_path: Path, data_dir: Path) -> None:
    load_builtin_benchmarks()
    samples = BENCHMARKS.get("reflection-bench")().load(data_dir / "tool-reflection-bench")[:6]
    preds = tmp_path / "pred.jsonl"
    with preds.open("w") as f:
        for i, s in enumerate(samples):
            truth = s.metadata["ground_truth"]
            # Sample i is right only in generation i % 3.
            outs = ["no idea", "still no idea", "nope"]
            outs[i % 3] = truth
            f.write(json.dumps({"id": s.id, "outputs": outs}) + "\n")
    result = run_bench(
        "reflection-bench",
        f"replay/{preds}",
        data=data_dir / "tool-reflection-bench",
        limit=6,
        samples=3,
        mode="improved",
        runs_dir=tmp_path / "runs",
        progress=False,
    )
    m = result.summary.metrics
    assert m["repair@3"] == 1.0 and m["accuracy"] == pytest.approx(2 / 6)
    assert result.summary.requests == 18
    settings = RunDir(result.run_dir).manifest().config["bench"]
    assert settings["samples"] == 3 and settings["temperature"] == 0.7


def test_native_tool_calls_are_written_back_for_the_scorer(
    tmp_path: Path, data_dir: Path, bfcl_samples: list[Sample]
) -> None:
    by_question = {s.messages[-1].content: s.target for s in bfcl_samples}
    seen_tools: list[int] = []

    class NativeModel(ScriptedModel):
        async def _generate(self, request):  # type: ignore[no-untyped-def]
            seen_tools.append(len(request.tools))
            calls = by_question[request.messages[-1].content]
            return Completion(
                text="", tool_calls=[ToolCall(name=c.name, arguments=c.arguments) for c in calls]
            )

    result = run_bench(
        "bfcl",
        NativeModel(lambda m: ""),
        data=data_dir / "bfcl",
        categories=["simple_python"],
        limit=8,
        tool_mode="native",
        runs_dir=tmp_path,
        progress=False,
    )
    assert result.summary.metrics["overall_sample_weighted"] == 1.0
    assert seen_tools and all(n >= 1 for n in seen_tools)
    record = RunDir(result.run_dir).read_records()[0]
    assert record.calls and record.calls[0].name == bfcl_samples[0].target[0].name


def test_native_mode_sends_no_call_format_prompt(tmp_path: Path, data_dir: Path) -> None:
    seen: dict[str, list[list[str]]] = {"native": [], "prompt": []}
    for mode in seen:

        class Recording(ScriptedModel):
            async def _generate(self, request, mode=mode):  # type: ignore[no-untyped-def]
                seen[mode].append([m.role for m in request.messages])
                if mode == "native":
                    assert request.tools and "Python-style list" not in request.messages[0].content
                return Completion(text="")

        run_bench(
            "bfcl", Recording(lambda m: ""), data=data_dir / "bfcl", categories=["simple_python"], limit=2,
            tool_mode=mode, runs_dir=tmp_path / mode, progress=False,
        )  # fmt: skip
    assert seen["native"] == [["user"], ["user"]]
    assert seen["prompt"] == [["system", "user"], ["system", "user"]]


def test_suite_builds_data_for_the_seed_and_supplies_the_model(tmp_path: Path, data_dir: Path) -> None:
    built: list[tuple[int, Path]] = []

    def build(seed: int, out: Path) -> Path:
        built.append((seed, out))
        out.mkdir(parents=True, exist_ok=True)
        src = (data_dir / "tool-reflection-bench" / "test_qwen_sample.jsonl").read_text().splitlines()
        (out / "suite.jsonl").write_text("\n".join(src[seed : seed + 4]) + "\n")
        return out / "suite.jsonl"

    if "test-suite" not in SUITES:
        SUITES.add("test-suite", Suite(benchmark="reflection-bench", build=build, default_model="scripted"))
    result = run_bench(
        "test-suite", seed=3, mode="improved", cache_dir=tmp_path / "c", runs_dir=tmp_path, progress=False
    )
    assert built == [(3, tmp_path / "c" / "suites" / "test-suite" / "seed-3")]
    assert result.model == "scripted" and result.benchmark == "test-suite"
    assert result.summary.n_samples == 4 and result.summary.metrics["accuracy"] == 1.0


def test_resume_refuses_another_model_or_benchmark(tmp_path: Path, data_dir: Path) -> None:
    first = run_bench(
        "bfcl", "scripted", data=data_dir / "bfcl", categories=["simple_python"], limit=2,
        runs_dir=tmp_path, progress=False,
    )  # fmt: skip
    with pytest.raises(ConfigError, match=r"model='openai/gpt-x' \(the run has 'scripted'\)"):
        run_bench("bfcl", "openai/gpt-x", resume=first.run_dir, progress=False)
    with pytest.raises(ConfigError, match="is a bfcl run"):
        run_bench("nestools", "scripted", resume=first.run_dir, progress=False)


def test_bad_settings_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown --option key\(s\) for reflection-bench: categories"):
        run_bench("reflection-bench", "scripted", categories=["x"], runs_dir=tmp_path, progress=False)
    with pytest.raises(ConfigError, match="--model is required"):
        run_bench("bfcl", runs_dir=tmp_path, progress=False)
    with pytest.raises(ConfigError, match="not found"):
        run_bench("bfcl", "scripted", data=tmp_path / "nope", runs_dir=tmp_path, progress=False)


def test_the_gold_reply_scores_full_marks(data_dir: Path, bfcl_samples: list[Sample]) -> None:
    bench = BENCHMARKS.get("bfcl")()
    assert bench.score(bfcl_samples[0], bench.gold(bfcl_samples[0])).values == {"accuracy": 1.0}
