"""Evolved critique suites: label checks on every sample, drift rejected, determinism, compatibility,
balanced external golds, and model-driven rewrites with a counted fallback."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path
from typing import Any

import pytest
from fake_openai_server import FakeOpenAIServer, Reply, last_user_text  # type: ignore[import-not-found]

from toolmend._schema import Tool, ToolCall
from toolmend.benchmarks.critic import build_suite
from toolmend.benchmarks.critic._build import SuiteInfo, _replay
from toolmend.benchmarks.critic._evolve import Hardener, check_rewrite, noisy_query
from toolmend.benchmarks.critic._traces import load_traces
from toolmend.benchmarks.critic._verify import Planned, check_sample, gold_values, query_keeps_gold
from toolmend.benchmarks.critictool import CriticToolBenchmark
from toolmend.check import Checker, critictool_category
from toolmend.env import FAULT_KINDS
from toolmend.formats._critictool import parse_tool_list
from toolmend.formats._tools import load_tools
from toolmend.models import get_model
from toolmend.world import generate_tasks

LIMIT = 80


def _exact(a: str, b: str) -> float:
    return 1.0 if a == b else 0.0


@pytest.fixture(scope="module")
def suites(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[int, str], SuiteInfo]:
    out = {}
    for seed in (0, 1):
        root = tmp_path_factory.mktemp(f"suite{seed}")
        for variant in ("base", "evolved"):
            out[seed, variant] = build_suite("world", seed=seed, out=root, limit=LIMIT, variant=variant)
    return out


def _call(action: dict[str, Any]) -> ToolCall:
    return ToolCall(name=action["name"], arguments=action["args"])


def _recheck(record: dict[str, Any], part: str) -> str | None:
    """The label checks again, from the written record alone (what a critic is shown)."""
    messages = record["query_prompt"]
    tools = load_tools(parse_tool_list(messages[0]["content"]), dialect="critictool")
    checker, names = Checker(tools), {t.name for t in tools}
    gold = record["ground_truth"]
    if part == "external":
        failed, body = json.loads(messages[-2]["content"]), json.loads(messages[-1]["content"])
        if (failed["name"], failed["args"]) != (gold[0]["name"], gold[0]["args"]):
            return "retry is not the failed call"
        if checker.check_call(_call(failed)):
            return "failed call invalid"
        if body["error"]["type"] not in FAULT_KINDS:
            return "no fault"
        gold = gold[1]
    elif record["error_type"]:
        wrong = _call(json.loads(messages[-2]["content"]))
        label, right = record["error_type"], _call(gold)
        seen = {critictool_category(f.code) for f in checker.check_call(wrong)} - {None}
        if wrong == right:
            return "not an error"
        if label == "tool_select_error" and (seen or wrong.name not in names or wrong.name == right.name):
            return "selection is not silent"
        if label == "tool_hallucination_error" and wrong.name in names:
            return "hallucinated tool is offered"
        quiet = not seen and wrong.name == right.name and set(wrong.arguments) == set(right.arguments)
        value_in_context = label == "parameters_value_error" and quiet
        if (
            label in ("parameters_key_error", "parameters_value_error")
            and label not in seen
            and not value_in_context
        ):
            return f"{label} not seen ({seen})"
    if gold["name"] != "FinishAction" and checker.check_call(_call(gold)):
        return "gold fails the checker"
    return None


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("variant", ["base", "evolved"])
def test_every_written_sample_passes_the_label_checks(
    suites: dict[tuple[int, str], SuiteInfo], seed: int, variant: str
) -> None:
    info = suites[seed, variant]
    prefix = "evol" if variant == "evolved" else "base"
    checked = 0
    for part in ("internal", "external"):
        records = json.loads((info.root / f"{part}_error/{prefix}_data_wo_cot.json").read_text())
        for rid, record in records.items():
            assert _recheck(record, part) is None, (rid, _recheck(record, part))
            checked += 1
    assert checked == info.total
    assert info.planned == info.total + sum(info.dropped.values())


def test_evolved_suite_is_really_evolved(suites: dict[tuple[int, str], SuiteInfo]) -> None:
    info = suites[0, "evolved"]
    assert set(info.evolution) == {"long_context", "extra_tools", "noisy_query", "harder_tools", "mixed"}
    base = json.loads((suites[0, "base"].root / "internal_error/base_data_wo_cot.json").read_text())
    evolved = json.loads((info.root / "internal_error/evol_data_wo_cot.json").read_text())
    changed = {s: 0 for s in ("long_context", "extra_tools", "noisy_query", "harder_tools")}
    for rid, record in evolved.items():
        before, after = base[rid]["query_prompt"], record["query_prompt"]
        for strategy in record["toolmend"]["evolution"]:
            if strategy == "long_context":
                changed[strategy] += len(after) > len(before)
            elif strategy == "noisy_query":
                changed[strategy] += after[-len(before) + 1]["content"] != before[1]["content"]
            else:
                changed[strategy] += after[0]["content"] != before[0]["content"]
    assert all(n > 5 for n in changed.values()), changed


def test_same_seed_same_bytes_for_the_evolved_variant(tmp_path: Path) -> None:
    a = build_suite("world", seed=3, out=tmp_path / "a", limit=25, variant="evolved")
    b = build_suite("world", seed=3, out=tmp_path / "b", limit=25, variant="evolved")
    c = build_suite("world", seed=4, out=tmp_path / "c", limit=25, variant="evolved")
    for fa, fb, fc in zip(a.files, b.files, c.files, strict=True):
        assert fa.name.startswith("evol_data")
        assert fa.read_bytes() == fb.read_bytes()
        assert fa.read_bytes() != fc.read_bytes()


def test_evolved_suite_loads_and_gold_scores_100(suites: dict[tuple[int, str], SuiteInfo]) -> None:
    bench = CriticToolBenchmark(similarity=_exact)
    samples = bench.load(suites[1, "evolved"].root, variant="evol")
    assert len(samples) == suites[1, "evolved"].total + sum(suites[1, "evolved"].external.values())
    metrics = bench.aggregate([bench.score(s, bench.gold(s)) for s in samples])
    assert metrics["overall"] == pytest.approx(100.0)
    cot = bench.load(suites[1, "evolved"].root, variant="evol", cot=True)
    assert bench.aggregate([bench.score(s, bench.gold(s)) for s in cot])["thought"] == pytest.approx(100.0)


def test_external_golds_name_the_next_subtask_whenever_there_is_one(
    suites: dict[tuple[int, str], SuiteInfo],
) -> None:
    info = suites[0, "base"]
    records = json.loads((info.root / "external_error/base_data_wo_cot.json").read_text())
    finish = [r for r in records.values() if r["ground_truth"][1]["name"] == "FinishAction"]
    assert info.finish_share == pytest.approx(len(finish) / len(records), abs=1e-4)
    assert 0.2 < info.finish_share < 0.6  # before balancing, about 3 in 4 were FinishAction
    traces = {t.id: t for t in load_traces("world", seed=0)}
    for record in finish:
        # Every later step of this trajectory needs the failed step's output.
        meta = record["toolmend"]
        replay = _replay(traces[meta["trace"]], {t.name: t for t in traces[meta["trace"]].tools})
        assert all(meta["step"] in replay.deps[j] for j in range(meta["step"] + 1, len(replay.calls)))


# -- label checks on hand-made samples ------------------------------------------------------


@pytest.fixture(scope="module")
def weather() -> tuple[Any, list[ToolCall]]:
    trace = next(t for t in load_traces("world", seed=0) if t.calls[0].name == "weather_current")
    return trace, _replay(trace, {t.name: t for t in trace.tools}).calls


def test_a_mislabelled_sample_is_rejected(weather: tuple[Any, list[ToolCall]]) -> None:
    trace, calls = weather
    dropped = calls[0].model_copy(update={"arguments": {}})  # a required key left out

    def check(label: str, wrong: ToolCall) -> str | None:
        return check_sample(Planned("error", 0, label, wrong=wrong), calls, trace.tools, trace.make_env)

    assert check("parameters_key_error", dropped) is None
    assert check("parameters_value_error", dropped) == "label_mismatch"
    assert check("tool_hallucination_error", dropped) == "label_mismatch"
    assert check("tool_select_error", dropped) == "selection_not_silent"
    assert check("parameters_value_error", calls[0]) == "not_an_error"
    renamed = calls[0].model_copy(update={"name": "weather_currently"})
    assert check("tool_hallucination_error", renamed) is None
    assert check("tool_select_error", renamed) == "selection_not_silent"


def test_label_drift_after_an_evolution_is_caught(weather: tuple[Any, list[ToolCall]]) -> None:
    trace, calls = weather
    wrong = calls[0].model_copy(update={"name": "weather_now"})
    plan = Planned("error", 0, "tool_hallucination_error", wrong=wrong)
    assert check_sample(plan, calls, trace.tools, trace.make_env) is None
    # An extra tool that happens to carry the hallucinated name makes the call valid: not its label.
    extra = Tool(name="weather_now", parameters=trace.tools[0].parameters)
    from dataclasses import replace

    from toolmend.env import Environment

    drifted = replace(trace, tools=[*trace.tools, extra])
    tools = drifted.tools
    assert check_sample(plan, calls, tools, lambda: Environment(tools=tools)) == "label_mismatch"


def test_harder_tools_translate_both_ways_and_gold_still_executes() -> None:
    hard = Hardener(seed=0)
    trace = next(t for t in load_traces("world", seed=0) if len(t.calls) >= 2)
    calls = _replay(trace, {t.name: t for t in trace.tools}).calls
    tools = [hard.tool(t) for t in trace.tools]
    for call in calls:
        evolved = hard.to_evolved(call)
        assert hard.to_base(evolved.name, evolved.arguments) == call.arguments
        assert not Checker(tools).check_call(evolved)
    assert any(hard.to_evolved(c).arguments != c.arguments for c in calls)


def test_rule_noisy_queries_keep_every_gold_value() -> None:
    for task in generate_tasks(seed=0)[:120]:
        values = gold_values(task.query, task.calls)
        for seed in range(3):
            noisy = noisy_query(task.query, task.calls, random.Random(seed))
            assert noisy != task.query
            assert query_keeps_gold(task.query, noisy, task.calls), (task.query, noisy, values)


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("", "empty"),
        ('{"query": "weather"}', "not_a_request"),
        ("ok", "length"),
        (
            "What's the weather like right now in Oslo and in Singapore? Give me celsius please",
            "drops_gold_value",
        ),
    ],
)
def test_a_bad_rewrite_is_refused_with_its_reason(reply: str, reason: str) -> None:
    task = next(t for t in generate_tasks(seed=0) if "Madrid" in t.query)
    assert check_rewrite(task.query, reply, task.calls).reason == reason
    assert check_rewrite(task.query, f"hey, so um, {task.query} thx", task.calls).text is not None


# -- model-driven evolution -------------------------------------------------------------------


def _rewrite(messages: list[Any]) -> str:
    query = messages[-1].content.split("\n", 1)[0].removeprefix("Message: ")
    return f"Hi, sorry to bother you again. {query} Cheers"


@pytest.mark.parametrize(
    ("script", "source"),
    [(_rewrite, "model"), (lambda messages: '{"nope": true}', "fallback"), (lambda m: "", "fallback")],
)
def test_model_driven_noisy_queries_and_counted_fallback(tmp_path: Path, script: Any, source: str) -> None:
    model = get_model("scripted", script=script, cache=False)
    info = build_suite("world", seed=0, out=tmp_path, limit=20, variant="evolved", model=model,
                       evolutions=["noisy_query"])  # fmt: skip
    assert info.query_sources == {source: 20}
    assert sum(info.fallbacks.values()) == (20 if source == "fallback" else 0)
    records = json.loads((tmp_path / "internal_error/evol_data_wo_cot.json").read_text())
    queries = [r["query_prompt"][1]["content"] for r in records.values()]
    assert all(q.startswith("Hi, sorry") for q in queries) == (source == "model")


def test_model_driven_rewrites_over_http_with_a_failing_server(tmp_path: Path) -> None:
    calls = {"n": 0}

    def handler(body: dict[str, Any]) -> Reply:
        calls["n"] += 1
        if calls["n"] % 2:
            return Reply(status=400, text="bad request")  # refused: not retried, the rule takes over
        text = last_user_text(body).split("\n", 1)[0].removeprefix("Message: ")
        return Reply(text=f"so basically: {text} thanks!!")

    server = FakeOpenAIServer(handler=handler).start()
    try:
        model = get_model("openai/fake", base_url=server.base_url, api_key="x", cache=False, max_retries=0)
        info = build_suite("world", seed=0, out=tmp_path, limit=12, variant="evolved", model=model,
                           evolutions=["noisy_query"])  # fmt: skip
    finally:
        server.stop()
    assert info.query_sources.get("model", 0) > 0 and info.query_sources.get("fallback", 0) > 0
    assert sum(info.fallbacks.values()) == info.query_sources["fallback"]
    assert all(reason.startswith("model_error") for reason in info.fallbacks)


def test_a_model_with_the_base_variant_or_an_unknown_variant_is_refused(tmp_path: Path) -> None:
    from toolmend._errors import ConfigError

    with pytest.raises(ConfigError, match="variant"):
        build_suite("world", out=tmp_path, limit=2, variant="harder")
    with pytest.raises(ConfigError, match="evolved"):
        build_suite("world", out=tmp_path, limit=2, model="scripted")
    with pytest.raises(ConfigError, match="unknown evolution"):
        build_suite("world", out=tmp_path, limit=2, variant="evolved", evolutions=["shuffle"])


def test_the_checklist_critic_scores_lower_on_the_evolved_variant(
    suites: dict[tuple[int, str], SuiteInfo],
) -> None:
    from toolmend.benchmarks.critictool._checklist import critique

    async def generate(messages: Any) -> str:
        return critique(messages)

    async def overall(seed: int, variant: str) -> dict[str, float]:
        bench = CriticToolBenchmark(similarity=_exact)
        samples = bench.load(suites[seed, variant].root, variant="evol" if variant == "evolved" else "base")
        replies = [await bench.solve(s, generate) for s in samples]
        return bench.aggregate([bench.score(s, r) for s, r in zip(samples, replies, strict=True)])

    for seed in (0, 1):
        base, evolved = asyncio.run(overall(seed, "base")), asyncio.run(overall(seed, "evolved"))
        assert evolved["overall"] < base["overall"], seed
        assert evolved["args"] < base["args"]  # renamed, nested and close-enum parameters
