"""BFCL's multi-turn categories on the official data: episodes, the checker's verdicts (recorded
from bfcl-eval's own evaluator), the held-out-function turn, strategies and native tool calls."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

pytest.importorskip("bfcl_eval.eval_checker.multi_turn_eval.func_source_code.gorilla_file_system")

from toolmend._bench import run_bench  # noqa: E402
from toolmend._errors import ConfigError  # noqa: E402
from toolmend._schema import Message, Sample, Tool, ToolCall  # noqa: E402
from toolmend.benchmarks.bfcl import BFCLBenchmark  # noqa: E402
from toolmend.benchmarks.bfcl import _multi_turn as mt  # noqa: E402
from toolmend.benchmarks.bfcl._decode import decode  # noqa: E402
from toolmend.models import Completion, ScriptedModel  # noqa: E402
from toolmend.runs import RunDir  # noqa: E402

FIXTURE = Path(__file__).parent / "fixtures" / "bfcl_multi_turn_official.json"
PER_CATEGORY = 3


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLMEND_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def bench() -> BFCLBenchmark:
    return BFCLBenchmark()


@pytest.fixture(scope="module")
def samples(bench: BFCLBenchmark) -> dict[str, Sample]:
    loaded = bench.load(categories=list(mt.MULTI_TURN_CATEGORIES))
    assert len(loaded) == 800
    return {s.id: s for s in loaded}


def _few(samples: dict[str, Sample]) -> list[Sample]:
    out: list[Sample] = []
    for category in mt.MULTI_TURN_CATEGORIES:
        out.extend([s for s in samples.values() if s.metadata["category"] == category][:PER_CATEGORY])
    return out


def _episode(bench: BFCLBenchmark, sample: Sample, answer: object) -> tuple[list[str], list[list[Message]]]:
    seen: list[list[Message]] = []

    async def generate(messages: list[Message], *, epoch: int | None = None) -> str:
        seen.append(messages)
        return answer(messages)  # type: ignore[operator]

    replies = asyncio.run(mt.run_episode(sample, bench.prompt(sample), generate))
    return replies, seen


def _gold_model(bench: BFCLBenchmark, sample: Sample):  # type: ignore[no-untyped-def]
    gold = bench.gold(sample)
    assert isinstance(gold, list)
    return lambda messages: gold[min(bench.gold_index(sample, messages) or 0, len(gold) - 1)]


@pytest.mark.parametrize("mode", ["compat", "improved"])
def test_gold_episodes_pass_in_every_category(
    bench: BFCLBenchmark, samples: dict[str, Sample], mode: str
) -> None:
    for sample in _few(samples):
        replies, _ = _episode(bench, sample, _gold_model(bench, sample))
        assert replies == bench.gold(sample)
        score = bench.score(sample, replies, mode)  # type: ignore[arg-type]
        n = len(sample.metadata["ground_truth"])
        assert score.values == {"accuracy": 1.0}, (sample.id, score.details)
        assert score.details["turn_outcomes"] == [
            "passed" if t else "no_call_expected" for t in sample.metadata["ground_truth"]
        ]
        assert [score.details[f"turn_{i}"] for i in range(n)] == score.details["turn_outcomes"]
        assert score.details["failed_turn"] == "none"


def test_held_out_function_arrives_in_its_turn(bench: BFCLBenchmark, samples: dict[str, Sample]) -> None:
    sample = samples["multi_turn_miss_func_0"]
    ((turn, names),) = sample.metadata["held_out"].items()
    assert (turn, names) == ("3", ["sort"])
    assert sample.metadata["ground_truth"][2] == []  # the turn that asks for it before it exists
    system = bench.prompt(sample)[0].content
    assert '"name": "sort"' not in system and '"name": "grep"' in system
    replies, seen = _episode(bench, sample, _gold_model(bench, sample))
    held = [m for m in seen[-1] if m.role == "user" and '"name": "sort"' in m.content]
    assert len(held) == 1 and held[0].content.startswith("More functions are available")
    # the call to the held-out function is made after its docs arrived, and executed
    position = next(i for i, m in enumerate(seen[-1]) if m.tool_calls and m.tool_calls[0].name == "sort")
    assert seen[-1].index(held[0]) < position
    assert seen[-1][position + 1].role == "tool" and "Error" not in seen[-1][position + 1].content
    # native mode offers the API the first turn's functions only
    (native,) = bench.for_native_tools([sample])
    assert "sort" not in {t.name for t in native.tools} and "sort" in {t.name for t in sample.tools}
    # calling the held-out function in the turn that expects no call is executed (as in BFCL) and
    # changes the state the next turn is checked against
    early = list(replies)
    early[4] = "[sort(file_name='final_report.pdf')]"
    score = bench.score(sample, early, "compat")
    assert score.values["accuracy"] == 0.0


def test_every_error_type_on_hand_made_episodes(bench: BFCLBenchmark, samples: dict[str, Sample]) -> None:
    sample = samples["multi_turn_base_1"]
    gold = bench.gold(sample)
    assert isinstance(gold, list) and gold[:2] == ["[ls(a=True)]", "Done."]

    def verdict(replies: list[str]) -> tuple[str, str]:
        d = bench.score(sample, replies, "compat").details
        return d["error_type"], d["failed_turn"]

    assert verdict(gold) == ("", "none")
    # no call where calls are expected
    assert verdict(["I will look."] + gold[2:]) == ("multi_turn:empty_turn_model_response", "0")
    # a read-only call left out: the state matches, its result is missing
    assert verdict(["[pwd()]"] + gold[1:]) == ("multi_turn:execution_response_mismatch", "0")
    # a write with a different value: the state differs
    changed = gold[2].replace("'", "'x", 1)
    assert changed != gold[2]
    assert verdict(gold[:2] + [changed] + gold[3:])[0] == "multi_turn:instance_state_mismatch"
    # replies that run out, and the step limit
    d = bench.score(sample, gold[:3], "compat").details
    assert d["error_type"] == "multi_turn:force_terminated" and d["turn_outcomes"][-1] == "missing"
    looping = gold[:2] + ["[pwd()]"] * (mt.STEP_LIMIT + 1) + gold[2:]
    assert verdict(looping) == ("multi_turn:force_terminated", "2")
    # the calls of a turn spread over two steps still pass
    assert gold[2] == "[cd(folder='workspace'), mv(source='log.txt', destination='archive')]"
    split = ["[cd(folder='workspace')]", "[mv(source='log.txt', destination='archive')]"]
    assert verdict(gold[:2] + split + gold[3:]) == ("", "none")


def test_turns_are_split_as_bfcl_splits_them() -> None:
    turns, quit_ = mt.split_turns(["[ls()]", "[pwd()]", "ok", "[]", "[f(x={})]"], 4)
    assert not quit_
    assert [[calls is not None for _, calls in t] for t in turns] == [[True, True, False], [False], [False]]
    turns, quit_ = mt.split_turns(["[ls()]"] * 30, 2)
    assert quit_ and len(turns) == 1 and len(turns[0]) == mt.STEP_LIMIT + 1


def test_recorded_official_verdicts(bench: BFCLBenchmark, samples: dict[str, Sample]) -> None:
    """bfcl-eval 2026.3.23's evaluator (``_evaluate_single_multi_turn_entry``) on these replies,
    recorded; compat must give every verdict."""
    records = json.loads(FIXTURE.read_text(encoding="utf-8"))["records"]
    kinds = {r["error_type"] for r in records}
    assert {"", "multi_turn:empty_turn_model_response", "multi_turn:force_terminated",
            "multi_turn:instance_state_mismatch", "multi_turn:execution_response_mismatch"} <= kinds  # fmt: skip
    assert {r["id"].rsplit("_", 1)[0] for r in records} == set(mt.MULTI_TURN_CATEGORIES)
    for r in records:
        score = bench.score(samples[r["id"]], r["replies"], "compat")
        assert (score.values["accuracy"] == 1.0, score.details["error_type"]) == (
            r["valid"],
            r["error_type"],
        ), r


def test_improved_keeps_string_arguments_as_written(samples: dict[str, Sample]) -> None:
    sample = samples["multi_turn_base_0"]
    call = "echo(content='run ls(x) now', file_name='n.txt')"
    written = {}
    for mode in ("compat", "improved"):
        instances = mt._Instances(sample, "model_eval")
        assert instances.run("touch(file_name='n.txt')", mode) == "None"  # type: ignore[arg-type]
        assert instances.run(call, mode) == "None"  # type: ignore[arg-type]
        fs = instances.by_class["GorillaFileSystem"]
        written[mode] = fs._current_dir.contents["n.txt"].content
    assert written["improved"] == "run ls(x) now"
    assert written["compat"].startswith("run model_eval_multi_turn_base_0_GorillaFileSystem_instance.ls(")


def test_object_arguments_are_written_as_objects_in_improved() -> None:
    reply = "[touch(file_name={'a': {'b': 1}, 'c': {'d': 2}})]"
    compat = mt.executable_calls(reply, "compat")
    improved = mt.executable_calls(reply, "improved")
    assert compat is not None and improved is not None
    assert compat[1] == ["touch(file_name=a(b=1))"]
    assert improved[1] == ["touch(file_name={'a': {'b': 1}, 'c': {'d': 2}})"]
    # an empty object ends the turn in both modes (BFCL cannot write it)
    assert mt.executable_calls("[touch(file_name={})]", "improved") is None


def test_not_evaluated_names_fail_as_eval_would(samples: dict[str, Sample]) -> None:
    instances = mt._Instances(samples["multi_turn_base_0"], "model_eval")
    assert instances.run("open(file='x')") == "Error during execution: name 'open' is not defined"
    assert instances.run("kill(pid=1)") == "Error during execution: Function call kill is not allowed."
    assert instances.run("cd(folder='nowhere')") == json.dumps(
        instances.by_class["GorillaFileSystem"].cd(folder="nowhere")
    )
    assert instances.run("ls(a=True, b=1)").startswith(
        "Error during execution: GorillaFileSystem.ls() got an"
    )


def test_bench_scripted_strategies_and_native_mode(
    tmp_path: Path, bench: BFCLBenchmark, samples: dict[str, Sample]
) -> None:
    common = dict(categories=["multi_turn_miss_func", "multi_turn_miss_param"], limit=None, runs_dir=tmp_path,
                  progress=False)  # fmt: skip
    picked = [samples[f"multi_turn_miss_func_{i}"] for i in range(2)] + [samples["multi_turn_miss_param_0"]]
    # miss_func_0 and miss_param_0 open with the same request; their prompts offer different functions
    firsts = {(bench.prompt(s)[0].content, s.messages[0].content): s for s in picked}

    def sample_of(messages: list[Message]) -> Sample:
        return firsts[(messages[0].content, next(m.content for m in messages if m.role == "user"))]

    def text_answer(messages: list[Message]) -> str:
        s = sample_of(messages)
        gold = bench.gold(s)
        assert isinstance(gold, list)
        first = not any(m.role == "assistant" for m in messages)
        reply = gold[min(bench.gold_index(s, messages) or 0, len(gold) - 1)]
        # the very first reply names a function that does not exist; the guard has it re-asked
        return reply.replace("(", "x(", 1) if first and reply.startswith("[") else reply

    data = tmp_path / "data"
    data.mkdir()
    mt_dir = mt.multi_turn_data_dir()
    for category in ("multi_turn_miss_func", "multi_turn_miss_param"):
        src = mt_dir / f"BFCL_v4_{category}.json"
        keep = {s.id for s in picked}
        lines = [ln for ln in src.read_text().splitlines() if json.loads(ln)["id"] in keep]
        (data / src.name).write_text("\n".join(lines) + "\n")
        (data / "possible_answer").mkdir(exist_ok=True)
        answers = (mt_dir / "possible_answer" / src.name).read_text().splitlines()
        (data / "possible_answer" / src.name).write_text(
            "\n".join(ln for ln in answers if json.loads(ln)["id"] in keep) + "\n"
        )
    common["data"] = data
    plain = run_bench("bfcl", ScriptedModel(text_answer), **common)  # type: ignore[arg-type]
    guarded = run_bench("bfcl", ScriptedModel(text_answer), strategy="guard", **common)  # type: ignore[arg-type]
    both = run_bench("bfcl", ScriptedModel(text_answer), strategy="guard+env-policy", **common)  # type: ignore[arg-type]
    assert plain.summary.metrics["overall_sample_weighted"] < 1.0
    assert guarded.summary.metrics["overall_sample_weighted"] == 1.0
    assert both.summary.metrics["overall_sample_weighted"] == 1.0
    records = RunDir(guarded.run_dir).read_records()
    assert all(any(e.get("kind") == "guard_turn" for e in r.events) for r in records)
    assert all(r.details["failed_turn"] == "none" and "turn_0" in r.details for r in records)

    # native mode sends no system prompt (as BFCL's FC mode): the offered tools tell the samples apart
    native_samples = {
        (n.messages[0].content, frozenset(t.name for t in n.tools)): n for n in bench.for_native_tools(picked)
    }

    def native_sample_of(messages: list[Message], tools: list[Tool]) -> Sample:
        return native_samples[(messages[0].content, frozenset(t.name for t in tools))]

    def native(messages: list[Message], tools: list[Tool]) -> Completion:
        s = native_sample_of(messages, tools)
        assert [m.role for m in bench.prompt(s)] == ["user"]
        reply = bench.gold(s)
        assert isinstance(reply, list)
        text = reply[min(bench.gold_index(s, messages) or 0, len(reply) - 1)]
        decoded = decode(text)
        if not decoded.ok or not decoded.calls:
            return Completion(text=text)
        calls = [ToolCall(name=n, arguments=a) for c in decoded.calls for n, a in c.items()]
        return Completion(text="", tool_calls=calls)

    seen_tools: list[tuple[str, set[str]]] = []

    class NativeModel(ScriptedModel):
        async def _generate(self, request):  # type: ignore[no-untyped-def]
            seen_tools.append(
                (native_sample_of(request.messages, request.tools).id, {t.name for t in request.tools})
            )
            return native(request.messages, request.tools)

    result = run_bench("bfcl", NativeModel(lambda m: ""), tool_mode="native", **common)  # type: ignore[arg-type]
    assert result.summary.metrics["overall_sample_weighted"] == 1.0
    # the held-out function never goes out as an API tool; it arrives as text in its turn
    assert {i for i, _ in seen_tools} == {s.id for s in picked}
    assert all("sort" not in names for i, names in seen_tools if i == "multi_turn_miss_func_0")


def test_improved_gives_each_call_its_own_list_defaults(samples: dict[str, Sample]) -> None:
    sample = next(s for s in samples.values() if "TwitterAPI" in s.metadata["involved_classes"])
    shown = {}
    for mode in ("compat", "improved"):
        first, second = mt._Instances(sample, "a"), mt._Instances(sample, "b")
        for instances in (first, second):
            instances.by_class["TwitterAPI"].authenticated = True
        posted = json.loads(first.run("post_tweet(content='one')", mode))  # type: ignore[arg-type]
        first.run(f"mention(tweet_id={posted['id']}, mentioned_usernames=['@x'])", mode)  # type: ignore[arg-type]
        shown[mode] = json.loads(second.run("post_tweet(content='two')", mode))["mentions"]  # type: ignore[arg-type]
    # BFCL's one default list per process carries the first instance's mention into the second
    assert "@x" in shown["compat"]
    assert shown["improved"] == []


# ---------------------------------------------------------------------------------------------
# scheduled faults (toolmend's extension)


def _last_step_of_first_turn(sample: Sample) -> int:
    return len(sample.metadata["ground_truth"][0]) - 1


def _faulted(sample: Sample, kind: str, tmp_path: Path) -> Sample:
    schedule = tmp_path / "faults.json"
    step = _last_step_of_first_turn(sample)
    schedule.write_text(json.dumps({"tasks": {sample.id: [{"step": step, "kind": kind}]}}))
    (out,) = mt.attach_faults([sample], str(schedule))
    return out


def _retrying_model(bench: BFCLBenchmark, sample: Sample):  # type: ignore[no-untyped-def]
    """The gold replies, except that a call answered by a fault is sent once more, alone."""
    from toolmend.benchmarks.bfcl._decode import render_python

    gold = bench.gold(sample)
    assert isinstance(gold, list)
    position = {"next": 0}

    def answer(messages: list[Message]) -> str:
        last = messages[-1]
        if last.role == "tool" and _is_fault(last.content or ""):
            calls = next(m for m in reversed(messages) if m.role == "assistant").tool_calls or []
            failed = [c for c in calls if c.id == last.tool_call_id]
            return render_python([c.model_copy(update={"id": None}) for c in failed])
        reply = gold[min(position["next"], len(gold) - 1)]
        position["next"] += 1
        return reply

    return answer


def _is_fault(content: str) -> bool:
    try:
        body = json.loads(content)
    except json.JSONDecodeError:
        return False
    return isinstance(body, dict) and isinstance(body.get("error"), dict)


def test_a_transient_fault_retried_costs_nothing(
    bench: BFCLBenchmark, samples: dict[str, Sample], tmp_path: Path
) -> None:
    sample = _faulted(samples["multi_turn_base_0"], "timeout", tmp_path)
    (fault,) = sample.metadata["faults"]
    replies, seen = _episode(bench, sample, _retrying_model(bench, sample))
    assert any(m.role == "tool" and _is_fault(m.content or "") for msgs in seen for m in msgs)
    score = bench.score(sample, replies)
    assert score.values == {"accuracy": 1.0}, score.details
    assert score.details["faults"] == [
        {"kind": "timeout", "tool": fault["tool"], "step": fault["step"], "hits": 1, "retried": True,
         "recovered": True}
    ]  # fmt: skip
    # a model that never retries leaves the call undone: the state check fails at that turn
    gold_replies, _ = _episode(bench, sample, _gold_model(bench, sample))
    missed = bench.score(sample, gold_replies)
    assert missed.values == {"accuracy": 0.0}
    assert missed.details["failed_turn"] == "0"
    assert missed.details["faults"] == [
        {"kind": "timeout", "tool": fault["tool"], "step": fault["step"], "hits": 1, "retried": False,
         "recovered": False}
    ]  # fmt: skip


def test_a_persistent_fault_fails_every_retry(
    bench: BFCLBenchmark, samples: dict[str, Sample], tmp_path: Path
) -> None:
    sample = _faulted(samples["multi_turn_base_0"], "permission_denied", tmp_path)
    replies, _ = _episode(bench, sample, _retrying_model(bench, sample))
    score = bench.score(sample, replies)
    (outcome,) = score.details["faults"]
    assert outcome["retried"] and not outcome["recovered"] and outcome["hits"] >= 2
    assert score.details["recovered"] is False


def test_fault_schedules_are_seeded_and_checked(samples: dict[str, Sample], tmp_path: Path) -> None:
    few = [samples[f"multi_turn_base_{i}"] for i in range(20)]
    heavy = mt.attach_faults(few, "heavy", seed=3)
    assert heavy == mt.attach_faults(few, "heavy", seed=3)
    assert heavy != mt.attach_faults(few, "heavy", seed=4)
    assert all(s.metadata["faults"] for s in heavy)
    assert all(f["kind"] != "wrong_shape" for s in heavy for f in s.metadata["faults"])
    assert all(f["tool"] == s.target[f["step"]].name for s in heavy for f in s.metadata["faults"])
    bad = tmp_path / "shape.json"
    bad.write_text(json.dumps({"tasks": {few[0].id: [{"step": 0, "kind": "wrong_shape"}]}}))
    with pytest.raises(ConfigError, match="cannot get a wrong_shape fault"):
        mt.attach_faults(few[:1], str(bad))
    with pytest.raises(ConfigError, match="multi-turn categories only"):
        BFCLBenchmark().load(categories=["simple_python"], faults="light")
    with pytest.raises(ConfigError, match="fault_seed"):
        BFCLBenchmark().load(categories=["multi_turn_base"], faults="light", fault_seed="x")


def test_bench_reports_fault_recovery(
    tmp_path: Path, bench: BFCLBenchmark, samples: dict[str, Sample]
) -> None:
    result = run_bench(
        "bfcl", "scripted", categories=["multi_turn_base"], limit=6, runs_dir=tmp_path, progress=False,
        load_options={"faults": "heavy"},
    )  # fmt: skip
    metrics = result.summary.metrics
    assert metrics["faults_injected"] >= 1
    assert 0.0 <= metrics["fault_recovery"] < 1.0
    # the scripted model sends the gold replies: a call a fault answered is never done
    records = RunDir(result.run_dir).read_records()
    faulted = [r for r in records if r.details.get("faults")]
    assert faulted and all(r.scores["accuracy"] == 0.0 for r in faulted)
    manifest = RunDir(result.run_dir).manifest()
    assert "heavy" in json.dumps(manifest.model_dump(mode="json"))
